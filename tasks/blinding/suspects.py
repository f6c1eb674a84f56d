"""The wider net: spans that are not masked but make an output worth an admin's look before
reviewers see it. Masking changes a text only where it is sure; these hold the output
(tasks/blinding/hold.py) with a reason each, and the text stays as written:

- "spaced model name": a short name written letter by letter ("Q w e n", "G L M");
- "look-alike letters": a word mixing Latin letters with letters of a script that only
  looks Latin here (Cherokee "Ꮶimi", Canadian syllabics "ᗪeepSeek", Lisu, Armenian ...);
- "resembles a model name": an unknown word one or two letters away from a contender's or a
  model's name ("Antrhopic", "Orchd-Pilot");
- "product-like name beside an AI word": a capitalized name next to "model", "assistant",
  "AI" ("I am Zorblax, an AI model", "the Quill-3 model");
- "vendor name in first-person context": a vendor (Google, Amazon ...) in a sentence where
  the speaker talks about itself as an AI;
- "too long to check": a text beyond MAX_CHECK_CHARS, which is still masked but not searched
  this widely.

These run when an output is stored, never on a reviewer's request.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from tasks.blinding import self_description
from tasks.blinding import terms as data
from tasks.blinding.catalog import ORDINARY_ZIPF, catalog, english_zipf
from tasks.blinding.masking import Finding
from tasks.blinding.skeleton import build_view

# Beyond this, a text is masked but held as "too long to check" (the wider checks' cost
# grows with the text; 1 MB of an answer is no answer a reviewer can read anyway).
MAX_CHECK_CHARS = 200_000

_SPACED = re.compile(r"(?<![\w])(?:[A-Za-z][ \t.\-_*·|/]{1,3}){1,6}[A-Za-z](?![\w])")
_WORD = re.compile(r"[^\W_]+(?:[-.][^\W_]+)*")
# Scripts with letters that pass for Latin ones but have no TR39 prototype the view folds.
_LOOKALIKE_SCRIPTS = (
    "CHEROKEE", "CANADIAN SYLLABICS", "LISU", "ARMENIAN", "GEORGIAN", "COPTIC", "TIFINAGH",
    "RUNIC", "OGHAM", "VAI ", "BAMUM", "NKO", "OL CHIKI", "GLAGOLITIC", "OLD ITALIC", "DESERET",
    "GOTHIC", "CARIAN", "LYCIAN", "MODIFIER LETTER", "OSAGE", "WARANG CITI", "MASARAM",
)  # fmt: skip
# (Not a plain "model": "the Pydantic model", "the model number XR-200" are no AI's.)
_AI_BESIDE = re.compile(
    r"(?:\b(?:assistant|AI|chatbot|LLM|language\s+model|AI\s+model|asistente|assistente"
    r"|Assistent|KI)\s+(?:called\s+|named\s+|known\s+as\s+)?(?P<after>(?-i:[A-Z])[\w.\-]*\w)"
    r"|(?P<before>(?-i:[A-Z])[\w.\-]*[\w])[,]?\s+(?:an?\s+)?(?:AI|assistant|LLM|chatbot"
    r"|language\s+model)\b)"
)
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|my|me)\b")


def _lookalike(char: str) -> bool:
    if char.isascii() or not char.isalpha():
        return False
    name = unicodedata.name(char, "")
    return any(name.startswith(s) for s in _LOOKALIKE_SCRIPTS)


@lru_cache(maxsize=1)
def _short_names() -> frozenset[str]:
    names = {*data.NAMES, *data.FAMILIES, *data.AMBIGUOUS, *catalog().certain}
    out = {re.sub(r"[^a-z0-9]", "", n.casefold()) for n in names if n.isascii()}
    return frozenset(n for n in out if 3 <= len(n) <= 8)


@lru_cache(maxsize=256)
def _near_names(terms: tuple[str, ...]) -> dict[int, tuple[str, ...]]:
    """Names worth comparing a word with, by length: the contenders' and the built-in ones of
    five letters or more."""
    names = {*terms, *data.NAMES, *data.FAMILIES, *data.AMBIGUOUS, *catalog().certain}
    letters = {re.sub(r"[^a-z0-9]", "", n.casefold()) for n in names}
    by_length: dict[int, list[str]] = {}
    for n in letters:
        # (names of letters: a date is not near a version label "2026-11")
        if len(n) >= 5 and sum(c.isalpha() for c in n) >= 4:
            by_length.setdefault(len(n), []).append(n)
    return {k: tuple(v) for k, v in by_length.items()}


def _distance_at_most(a: str, b: str, limit: int) -> bool:
    """Levenshtein distance of a and b is at most `limit` (with an early stop)."""
    if abs(len(a) - len(b)) > limit:
        return False
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        if min(current) > limit:
            return False
        previous = current
    return previous[-1] <= limit


def _covered(findings, start: int, end: int) -> bool:
    return any(f.start <= start and end <= f.end for f in findings)


def holds(text: str, terms: tuple[str, ...], findings) -> list[Finding]:
    """The suspect spans of `text` (as spans of the original) that masking left."""
    if len(text) > MAX_CHECK_CHARS:
        return [Finding(0, len(text), text[:200], "too long to check")]
    out: list[Finding] = []

    def add(start: int, end: int, reason: str) -> None:
        if not _covered(findings, start, end):
            out.append(Finding(start, end, text[start:end], reason))

    for m in _SPACED.finditer(text):
        letters = [(m.start() + i, c.casefold()) for i, c in enumerate(m.group()) if c.isalpha()]
        runs = (
            (i, j)
            for i in range(len(letters))
            for j in range(len(letters), i + 2, -1)
            if "".join(c for _, c in letters[i:j]) in _short_names()
        )
        if found := next(runs, None):
            add(letters[found[0]][0], letters[found[1] - 1][0] + 1, "spaced model name")
    if not text.isascii():
        for m in _WORD.finditer(text):
            word = m.group()
            if any(_lookalike(c) for c in word) and (
                any(c.isascii() and c.isalpha() for c in word) or len(word) >= 2
            ):
                add(*m.span(), "look-alike letters")
    view = build_view(text, skip_links=True)
    near = _near_names(terms)
    seen: set[str] = set()
    for m in _WORD.finditer(view.text):
        word = m.group()
        key = re.sub(r"[^a-z0-9]", "", word.casefold())
        if len(key) < 5 or key in seen or not word.isascii() or sum(c.isalpha() for c in key) < 4:
            continue
        seen.add(key)
        if english_zipf(key) >= ORDINARY_ZIPF or not (word[0].isupper() or not key.isalpha()):
            continue
        if key in near.get(len(key), ()):
            continue  # a known name (masked or held as such), not one that resembles it
        limit = 1 if len(key) < 8 else 2
        for length in range(len(key) - limit, len(key) + limit + 1):
            if any(n != key and _distance_at_most(key, n, limit) for n in near.get(length, ())):
                for again in re.finditer(re.escape(word), view.text):
                    add(*view.original_span(*again.span()), "resembles a model name")
                break
    for m in _AI_BESIDE.finditer(view.text):
        group = "after" if m.group("after") else "before"
        name = m.group(group)
        if name.isupper() and len(name) <= 5:
            continue  # an acronym: "JSON", "API", "FAQ"
        if english_zipf(name.casefold()) < 3.5 or any(c.isdigit() for c in name):
            add(*view.original_span(*m.span(group)), "product-like name beside an AI word")
    vendor_words = {v.casefold() for v in data.VENDORS if v.isascii()}
    for m in _WORD.finditer(view.text):
        if m.group().casefold() in vendor_words:
            sentence = self_description.sentence_around(view.text, m.start(), m.end())
            if _FIRST_PERSON.search(sentence) and self_description.ai_words_near(
                view.text, m.start(), m.end()
            ):
                add(*view.original_span(*m.span()), "vendor name in first-person context")
    return out
