"""The `reference` check: the answer against the task's `reference` (docs/testsets.md, "Checks").

    "reference": "exact" | "normalized" | "choice" | {"number": 0.5}

- exact: the answer equals the reference, leading and trailing whitespace aside.
- normalized: equal once both are folded: Unicode NFKC, case folded, punctuation removed,
  runs of whitespace made one space.
- choice: the option the answer commits to. A reference that is an option letter ("B", "(b)",
  "B) Paris") is compared with the first option letter the answer states: after "answer",
  "option" or "choice" ("The answer is B"), at its start ("B.", "(B)", "**B**", a lone "B"), or
  in brackets anywhere ("(b)"), whichever comes first; a bare letter counts only as a capital
  ("a" is a word). A reference that is a label ("yes",
  "Paris") is compared with how the answer begins once folded ("Yes, you can", "Answer: yes").
  With "B) Paris", an answer that states no letter is compared with the label.
- {"number": tolerance}: the number the answer commits to (the one after the last "answer",
  else its last number; "1,234.5" reads as 1234.5) is within tolerance of the reference's
  first number.

These patterns are fixed and linear, so they run on Python's re: only the test set's own
patterns need the engine that can stop a search.
"""

from __future__ import annotations

import math
import re
import unicodedata

from tasks.checks.json_schema import CheckError

_SPACE = re.compile(r"\s+")
# An option letter alone ("B", "(b)", "B."), or one that opens its label ("B) Paris").
_LETTER_REFERENCE = re.compile(
    r"^\s*(?:[(\[]?([A-Za-z])[)\].:]?|(?:[(\[]([A-Za-z])[)\]]|([A-Za-z])[).:])\s+(\S.*))\s*$",
    re.S,
)
# Where an answer states an option letter; the earliest match wins.
_LETTER_ANSWER = (
    re.compile(
        r"\b(?i:answer|option|choice)\b\W{0,4}(?i:is\W{1,3})?"
        r"(?:[(\[*]*([A-Z])|[(\[]([a-z])[)\]])(?![A-Za-z])"
    ),
    re.compile(r"^[\s*_#>]*[(\[]?([A-Z])(?:[)\].:,*]|\s*$|\s+[-\u2013\u2014])"),
    re.compile(r"^\s*[(\[]?([a-z])[)\].]?\s*$"),
    re.compile(r"[(\[]([A-Za-z])[)\]]|\*\*([A-Z])\*\*"),
)
_ANSWER_PREFIX = re.compile(r"^(?:the )?(?:final |correct )?answer(?: is)? ?")
_NUMBER = re.compile(
    r"[-+\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+\u2212]?\.\d+"
)
_ANSWER_NUMBER = re.compile(r"\banswer\b\W{0,4}(?:is\W{1,3})?(" + _NUMBER.pattern + ")", re.I)


def fold(text: str) -> str:
    """The text as "normalized" compares it: NFKC, case folded, no punctuation, one space."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(ch for ch in text if not unicodedata.category(ch).startswith("P"))
    return _SPACE.sub(" ", text).strip()


def reference_choice(reference: str) -> tuple[str | None, str]:
    """(option letter or None, folded label) of a choice reference: "B) Paris" -> ("B",
    "paris"), "B" -> ("B", ""), "yes" -> (None, "yes")."""
    found = _LETTER_REFERENCE.match(reference)
    if found:
        alone, bracketed, marked, label = found.groups()
        return (alone or bracketed or marked).upper(), fold(label or "")
    return None, fold(reference)


def _number(text: str) -> float | None:
    value = float(text.replace(",", "").replace("\u2212", "-"))
    return value if math.isfinite(value) else None


def reference_number(reference: str) -> float | None:
    """The reference's first number, or None when it has none."""
    found = _NUMBER.search(reference)
    return _number(found.group()) if found else None


def answer_letter(answer: str) -> str | None:
    """The first option letter the answer states, upper-cased, or None."""
    best: tuple[int, str] | None = None
    for pattern in _LETTER_ANSWER:
        found = pattern.search(answer)
        if found and (best is None or found.start() < best[0]):
            letter = next(g for g in found.groups() if g)
            best = (found.start(), letter.upper())
    return best[1] if best else None


def answer_number(answer: str) -> float | None:
    """The number the answer commits to: after its last "answer", else its last number."""
    marked = list(_ANSWER_NUMBER.finditer(answer))
    if marked:
        return _number(marked[-1].group(1))
    numbers = _NUMBER.findall(answer)
    return _number(numbers[-1]) if numbers else None


def reference_check(output: str, spec, reference: str | None) -> tuple[bool, str]:
    """The reference check of output: (passed, detail); CheckError when it cannot run."""
    if not reference or not reference.strip():
        raise CheckError("check could not run: the task has no reference")
    if spec == "exact":
        if output.strip() == reference.strip():
            return True, "equals the reference"
        return False, f"differs from the reference: {_shown(output.strip())}"
    if spec == "normalized":
        if fold(output) == fold(reference):
            return True, "equals the reference once case, whitespace and punctuation are folded"
        return False, f"differs from the reference once folded: {_shown(fold(output))}"
    if spec == "choice":
        return _choice(output, reference)
    if isinstance(spec, dict) and set(spec) == {"number"}:
        return _number_check(output, spec["number"], reference)
    raise CheckError(f"check could not run: unknown reference mode {spec!r}")


def _choice(output: str, reference: str) -> tuple[bool, str]:
    letter, label = reference_choice(reference)
    stated = answer_letter(output) if letter is not None else None
    if stated is not None:
        if stated == letter:
            return True, f"answers {stated}, the reference"
        return False, f"answers {stated}; the reference is {letter}"
    if not label:
        return False, f"states no option letter; the reference is {letter}"
    begins = _ANSWER_PREFIX.sub("", fold(output))
    if begins == label or begins.startswith(label + " "):
        return True, f"answers {label!r}, the reference"
    first = " ".join(begins.split(" ")[: max(len(label.split(" ")), 1)])
    return False, f"answers {first!r}; the reference is {label!r}"


def _number_check(output: str, tolerance, reference: str) -> tuple[bool, str]:
    expected = reference_number(reference)
    if expected is None:
        raise CheckError("check could not run: the reference has no number")
    found = answer_number(output)
    if found is None:
        return False, f"states no number; the reference is {expected:g}"
    # A hair of slack so 0.1 + 0.2 is within 0 of 0.3.
    passed = abs(found - expected) <= float(tolerance) + 1e-9 * max(1.0, abs(expected))
    return passed, f"answers {found:g}; the reference is {expected:g} (tolerance {tolerance:g})"


def _shown(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")
