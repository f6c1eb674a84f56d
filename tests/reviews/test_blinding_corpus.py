"""The leak corpus: every way of naming a model it holds is masked (or, for a name that is
also an ordinary word, masked or held for an admin), every ordinary text comes through byte
for byte.

tests/reviews/blinding_corpus.jsonl (hand-written) and blinding_corpus_generated.jsonl (made
by blinding_corpus_gen.py from the maintained model data and the languages table) hold one
case a line: {"id", "class", "expect": "mask" | "hold" | "keep" | "homonym", "text",
"identities"}. A "mask" case's identities are the words (letters and digits, case-folded)
that must not be readable in the masked text, however spelt; a "hold" case's must be masked
or the output held (blinding.check_identity); "keep" and "homonym" texts must come through
byte for byte (a homonym may be held). All cases are read with the campaign
CORPUS_CONTENDERS describes. Each class is its own test, so a failure names the class and
the cases.
"""

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from tasks.blinding import render as blinding
from tasks.blinding.skeleton import build_view, read_as

CORPUS = Path(__file__).with_name("blinding_corpus.jsonl")
GENERATED = Path(__file__).with_name("blinding_corpus_generated.jsonl")
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


# The generated corpus's contender (tests/reviews/blinding_corpus_gen.py CONTENDER) and a
# redaction word that is also a name: with CORPUS_CONTENDERS, the campaign every case is read in.
GENERATED_CONTENDERS = [
    {"name": "Orchid Pilot 7B", "model": "orchidlabs/orchid-pilot-7b-instruct@20250805"}
]
REDACT = ["Brent"]


def load_corpus(*, generated: bool = False) -> list[dict]:
    """The hand-written cases (the browser canary renders these), and with `generated` the
    generated ones too (read in the campaign of corpus_terms)."""
    return [
        json.loads(line)
        for path in ((CORPUS, GENERATED) if generated else (CORPUS,))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line
    ]


def corpus_terms() -> tuple[str, ...]:
    return blinding.identity_terms(
        redact=REDACT, contenders=[*CORPUS_CONTENDERS, *GENERATED_CONTENDERS]
    )


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


CASES = load_corpus(generated=True)
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
    assert len(CASES) >= 1000
    assert len({c["id"] for c in CASES}) == len(CASES)
    assert sum(c["expect"] == "mask" for c in CASES) >= 500
    assert sum(c["expect"] == "hold" for c in CASES) >= 50
    assert sum(c["expect"] == "keep" for c in CASES) >= 150
    assert sum(c["expect"] == "homonym" for c in CASES) >= 50
    assert all(c["identities"] for c in CASES if c["expect"] in ("mask", "hold"))


def _left(case: dict, terms) -> list[str]:
    """The identities of a leak still readable in what reviewers see (text or HTML)."""
    masked = blinding.mask_identity(case["text"], terms)
    _, html, _ = blinding.render_output(case["text"], terms)
    left = [i for i in case["identities"] if readable(i, masked.text) or readable(i, html)]
    return left if masked.hits else list(case["identities"])


@pytest.mark.parametrize("cls", sorted(c for e, c in BY_CLASS if e == "mask"))
def test_it_masks_every_leak_of_the_class(cls):
    terms = corpus_terms()
    missed = []
    for case in BY_CLASS[("mask", cls)]:
        if left := _left(case, terms):
            masked = blinding.mask_identity(case["text"], terms)
            missed.append((case["id"], case["text"], masked.text, left))
    assert not missed, f"{len(missed)} of {len(BY_CLASS[('mask', cls)])} leaked: {missed}"


@pytest.mark.parametrize("cls", sorted(c for e, c in BY_CLASS if e == "hold"))
def test_it_masks_or_holds_every_possible_name_of_the_class(cls):
    """A name that is also an ordinary word or a person's, written where nothing says it is a
    model's: masked, or left as written with the output held for an admin."""
    terms = corpus_terms()
    through = []
    for case in BY_CLASS[("hold", cls)]:
        if _left(case, terms) and not blinding.check_identity(case["text"], terms).holds:
            through.append((case["id"], case["text"]))
    assert not through, f"{len(through)} of {len(BY_CLASS[('hold', cls)])} got through: {through}"


@pytest.mark.parametrize(
    "expect,cls", sorted((e, c) for e, c in BY_CLASS if e in ("keep", "homonym"))
)
def test_it_keeps_every_ordinary_text_of_the_class_byte_for_byte(expect, cls):
    terms = corpus_terms()
    changed = []
    for case in BY_CLASS[(expect, cls)]:
        masked = blinding.mask_identity(case["text"], terms)
        if masked.text != case["text"] or masked.hits:
            changed.append((case["id"], case["text"], masked.text))
    total = len(BY_CLASS[(expect, cls)])
    assert not changed, f"{len(changed)} of {total} changed: {changed}"


def corpus_figures(terms) -> dict:
    """What reaches a reviewer, over the whole corpus: leaks masked, leaks held (left as
    written, the output waiting for an admin), leaks through (neither), ordinary and homonym
    texts changed, ordinary texts held."""
    figures = dict.fromkeys(
        ("leaks", "masked", "held", "through", "ordinary", "changed", "ordinary_held"), 0
    )
    for case in CASES:
        checked = blinding.check_identity(case["text"], terms)
        if case["expect"] in ("mask", "hold"):
            figures["leaks"] += 1
            if not _left(case, terms):
                figures["masked"] += 1
            elif checked.holds:
                figures["held"] += 1
            else:
                figures["through"] += 1
        else:
            figures["ordinary"] += 1
            figures["changed"] += checked.text != case["text"]
            figures["ordinary_held"] += bool(checked.holds)
    return figures


def support_answers_held(terms) -> tuple[int, int]:
    """(held, all) of the ordinary support answers: the demo campaign's, and the corpus's
    own (which mention phones, blenders and plans named like models)."""
    path = Path(__file__).parents[2] / "tasks/demo/demo_data/support-demo-outputs.jsonl"
    answers = [json.loads(line)["output"] for line in path.read_text().splitlines() if line]
    answers += [c["text"] for c in CASES if c["class"] == "support"]
    held = sum(bool(blinding.check_identity(a, terms).holds) for a in answers)
    return held, len(answers)


def test_what_reaches_reviewers_over_the_whole_corpus():
    """The figures docs/blinding.md quotes: no leak reaches a reviewer unmasked and unheld, no
    ordinary or homonym text changes, and ordinary support answers are rarely held."""
    terms = corpus_terms()
    figures = corpus_figures(terms)
    held, answers = support_answers_held(terms)
    print(f"\nblinding corpus: {figures}; support answers held: {held} of {answers}")
    assert figures["leaks"] == figures["masked"] + figures["held"] + figures["through"]
    assert figures["through"] == 0 and figures["changed"] == 0, figures
    assert held / answers < 0.05, (held, answers)
