"""The leak corpus: every way of naming a model it holds is masked, every ordinary text comes
through byte for byte.

tests/reviews/blinding_corpus.jsonl holds one case a line: {"id", "class", "expect": "mask" |
"keep", "text", "identities"}. A "mask" case's identities are the words (letters and digits,
case-folded) that must not be readable in the masked text, however spelt; all cases are read
with the campaign CORPUS_CONTENDERS describes. Each class is its own test, so a failure names
the class and the cases.
"""

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from tasks import blinding
from tasks.skeleton import build_view, read_as

CORPUS = Path(__file__).with_name("blinding_corpus.jsonl")
CORPUS_CONTENDERS = [
    {
        "name": "zz-secret-model-9",
        "provider": "openai",
        "model": "acme/zz-secret-model-9",
        "base_url": "https://inference.zz-labs.example/v1",
    },
    {
        "name": "acme/it",
        "provider": "openai",
        "model": "acme/it",
        "base_url": "http://127.0.0.1:9/v1",
    },
]


def load_corpus() -> list[dict]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]


def corpus_terms() -> tuple[str, ...]:
    return blinding.identity_terms(contenders=CORPUS_CONTENDERS)


def readable(identity: str, text: str) -> bool:
    """Whether `identity` can still be read in `text`, read as the page shows it (decoded,
    look-alikes folded, link destinations apart): anywhere in its letters and digits (long
    ones, and CJK, written without spaces), or as a word (short Latin ones, which ordinary
    words contain: "gpt" in "GPTs", "gpt4o" or "G.P.T", not in "cryptography")."""
    identity = blinding.skeleton(identity)  # as the text is read: "клод" is read "kлoд"
    for view in (read_as(text), build_view(text, skip_links=True).text):
        letters = "".join(re.findall(r"[^\W_]+", view.casefold()))
        if len(identity) >= 5 or not identity.isascii():
            if identity in letters:
                return True
            continue
        words = [w for w in re.split(r"[^\w.]+|_", view.casefold()) if w]
        words = [re.sub(r"\.(?=\w)|\.$", "", w) for w in words]  # "G.P.T" is "gpt"
        # and a word split by markup or a hyphen ("**G**PT", "Phi-4") reads as one
        joined = [*words, *("".join(words[i : i + n]) for n in (2, 3) for i in range(len(words)))]
        if any(re.fullmatch(rf"{re.escape(identity)}(?:s|\d\w*)?", w) for w in joined):
            return True
    return False


CASES = load_corpus()
BY_CLASS: dict[tuple[str, str], list[dict]] = defaultdict(list)
for case in CASES:
    BY_CLASS[(case["expect"], case["class"])].append(case)


def test_the_check_reads_every_leak_in_its_unmasked_text():
    # Otherwise "masked" could mean "the check cannot see it".
    unread = [
        c["id"]
        for c in CASES
        if c["expect"] == "mask" and not all(readable(i, c["text"]) for i in c["identities"])
    ]
    assert unread == []


def test_the_corpus_is_large_and_varied():
    assert len(CASES) >= 300
    assert len({c["id"] for c in CASES}) == len(CASES)
    assert sum(c["expect"] == "mask" for c in CASES) >= 150
    assert sum(c["expect"] == "keep" for c in CASES) >= 100
    assert all(c["identities"] for c in CASES if c["expect"] == "mask")


@pytest.mark.parametrize("cls", sorted(c for e, c in BY_CLASS if e == "mask"))
def test_it_masks_every_leak_of_the_class(cls):
    terms = corpus_terms()
    missed = []
    for case in BY_CLASS[("mask", cls)]:
        masked = blinding.mask_identity(case["text"], terms)
        _, html, _ = blinding.render_output(case["text"], terms)
        left = [i for i in case["identities"] if readable(i, masked.text) or readable(i, html)]
        if not masked.hits or left:
            missed.append((case["id"], case["text"], masked.text, left))
    assert not missed, f"{len(missed)} of {len(BY_CLASS[('mask', cls)])} leaked: {missed}"


@pytest.mark.parametrize("cls", sorted(c for e, c in BY_CLASS if e == "keep"))
def test_it_keeps_every_ordinary_text_of_the_class_byte_for_byte(cls):
    terms = corpus_terms()
    changed = []
    for case in BY_CLASS[("keep", cls)]:
        masked = blinding.mask_identity(case["text"], terms)
        if masked.text != case["text"] or masked.hits:
            changed.append((case["id"], case["text"], masked.text))
    assert not changed, f"{len(changed)} of {len(BY_CLASS[('keep', cls)])} changed: {changed}"


def test_recall_and_false_positives_over_the_whole_corpus():
    """The figures the README quotes: recall on the leaks, changed characters on the rest."""
    terms = corpus_terms()
    leaks = [c for c in CASES if c["expect"] == "mask"]
    caught = sum(
        1
        for c in leaks
        if not any(
            readable(i, blinding.mask_identity(c["text"], terms).text) for i in c["identities"]
        )
    )
    changed_chars = 0
    for c in CASES:
        if c["expect"] == "keep":
            masked = blinding.mask_identity(c["text"], terms).text
            changed_chars += sum(a != b for a, b in zip(c["text"], masked, strict=False))
            changed_chars += abs(len(c["text"]) - len(masked))
    assert (caught, changed_chars) == (len(leaks), 0)
