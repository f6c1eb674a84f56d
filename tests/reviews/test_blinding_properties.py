"""Blinding against spellings nobody wrote down: names disguised at random must still be masked,
and the text around them must come through as written.

Each disguise is one a reader does not see (an invisible character, a combining mark over a
letter, a letter as an HTML entity), or sees as the same letter (a Cyrillic or Greek look-alike,
a full-width or mathematical letter), or sees as the same word (markup or a separator inside
it). The hypothesis strategies combine them, several per name.
"""

import re

from django.test import SimpleTestCase
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.blinding import render as blinding

NAMES = ["Claude", "OpenAI", "Anthropic", "Gemini", "DeepSeek", "Mistral", "zz-secret-model-9"]
AMBIGUOUS = {"Claude", "Gemini", "Mistral"}  # tasks/blinding/terms.py AMBIGUOUS
TERMS = blinding.identity_terms(contenders=[{"name": "zz-secret-model-9"}])
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\u2062", "\u2063", "\u034f", "\ufe0f"]
INVISIBLE += ["\u200e", "\u00ad", "\U000e0041", "\ufeff"]
MARKS = ["\u0301", "\u0308", "\u0300", "\u0327", "\u0336", "\u0323"]
LOOKALIKE = {"a": "а", "c": "с", "e": "е", "o": "о", "p": "р", "C": "С", "A": "А", "O": "О"}
LOOKALIKE |= {"i": "і", "s": "ѕ", "M": "М", "T": "Т", "H": "Н", "K": "К", "B": "В"}


def disguise(name: str, draw) -> str:
    out = []
    letters = [i for i, c in enumerate(name) if c.isalnum()]
    for i, c in enumerate(name):
        kind = draw(st.sampled_from(["as is"] * 3 + ["lookalike", "wide", "entity", "mark"]))
        if kind == "lookalike" and c in LOOKALIKE:
            c = LOOKALIKE[c]
        elif kind == "wide" and c.isascii() and c.isalnum():
            c = chr(ord(c) + 0xFEE0)
        elif kind == "entity" and c.isalnum():
            c = f"&#{ord(c)};"
        elif kind == "mark" and c.isalpha():
            c += draw(st.sampled_from(MARKS))
        out.append(c)
        if i in letters[:-1]:
            out.append(draw(st.sampled_from(["", "", "", *INVISIBLE])))
    return "".join(out)


@st.composite
def disguised(draw):
    name = draw(st.sampled_from(NAMES))
    return name, disguise(name, draw)


AROUND = st.sampled_from(
    ["I am {}.", "Answer by {}: yes.", "**{}** says", "({})", "{}'s view", "— {}\n\nNext line"]
)


class DisguisedNameTests(SimpleTestCase):
    @settings(max_examples=500, deadline=None)
    @given(disguised(), AROUND)
    def test_it_masks_a_disguised_name_and_keeps_the_words_around_it(self, pair, around):
        name, spelt = pair
        text = around.format(spelt)
        masked = blinding.mask_identity(text, TERMS)
        if spelt == name and name in AMBIGUOUS and not masked.hits:
            # Written plainly and not as a model's ("(Claude)"), a name that is also a word
            # or a person's is left as written and the output held for an admin.
            assert masked.text == text and masked.holds, text
            return
        assert masked.hits >= 1, text
        assert blinding.skeleton(name) not in blinding.skeleton(masked.text), (text, masked.text)
        # Around the name, every character is as written.
        before, after = around.split("{}")
        assert masked.text.startswith(before) and masked.text.endswith(after), masked.text

    @settings(max_examples=300, deadline=None)
    @given(disguised())
    def test_it_masks_a_name_split_across_markdown_links(self, pair):
        name, _ = pair
        cut = len(name) // 2
        text = f"See [{name[:cut]}](https://example.com/a)[{name[cut:]}](https://example.com/b)."
        masked = blinding.mask_identity(text, TERMS)
        rendered = blinding.render_output(text, TERMS)[1]
        shown = re.sub(r"<[^>]+>", "", rendered)
        assert blinding.skeleton(name) not in blinding.skeleton(shown), (text, masked.text)
