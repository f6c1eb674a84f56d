"""A model's name as a regular expression over a text's view (tasks/blinding/skeleton.py): its
letters in order with the separators a writer may put between them, bounded at a word's edges;
and many names as one alternation. Used by the masking (masking.py) and, for vendors, by the
self-descriptions (self_description.py)."""

from __future__ import annotations

import re

from tasks.blinding.skeleton import read_as

# Letters of the scripts written with spaces between words, after look-alikes are folded:
# a name may not run on into one of them. (Chinese, Japanese, Korean, Thai ... may: "我是Claude".)
_WORD = r"A-Za-z0-9\u00c0-\u024f\u0370-\u03ff\u0400-\u052f"
_CAMEL = r"(?-i:(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z]))"
START = rf"(?:(?<![{_WORD}])|{_CAMEL})"
# A name may be followed by digits ("Claude3", "gpt4o": the version) and a plural s.
END = rf"(?:s?(?![A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u052f])|{_CAMEL})"
_STRICT_END = rf"(?:(?![A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u052f])|{_CAMEL})"
# Between the letters of a long name: a few characters that are not letters or digits.
_GAP = r"[\W_]{0,6}"
_WRITTEN_GAP = r"[^\w\s]{0,3}"
# Between the letters of a short one: punctuation or markup, but no space ("G.P.T", "**G**PT";
# not "x ai").
_MARKUP_GAP = r"[^\w\s]{0,2}"
# Between a family name and its version, size or tier: separators within one line.
# (A dot only before a digit: "3.5", "v1.0"; "GPT-4o. Pro tip" ends the name at the dot.)
QUALIFIER_SEP = r"(?:[ \t\-_:/@\u2010-\u2015]{0,2}|\.(?=\d)|[\-_]\.(?=\d))"
# The rest of a model id written as one token after a name ("indictrans2-en-indic-1B",
# "gemma-sea-lion-v4-27b-it", "claude-opus-4-1@20250805"): an id is one name, all of it.
# (Joined by a hyphen, dot, colon or at sign: "claude_likeness" is an identifier and
# "huggingface/transformers" a path, each with a name in it.)
ID_REST = r"(?:[\-.:@](?=[^\W_])[\w.\-:@+]*[\w+])?"
FREE_GAPS_FROM = 5  # letters and digits; shorter names must be written as they are


def _letter(c: str) -> str:
    # A capital I reads as a small l in most fonts ("CIaude"), and rn as m ("Anthroprn...").
    if c in "lL":
        return "[lI]"
    if c in "mM":
        return "(?:m|rn)"
    return re.escape(c)


# A name taken as written: its letters together, a space, hyphen, underscore or dot where it
# has a separator ("typesafe" is not "type-safe", "openchat" not "open chat").
_STRICT_GAP = r"[\s\-_.]{0,2}"


def term_pattern(term: str, *, strict: bool = False) -> tuple[str, list[str]] | None:
    """A name as a pattern over views, as (edges, [first letter, rest]): its letters in
    order, separators optional (a long name) or as written (a short one, or any `strict`
    one: the names derived from the dataset, which are often words run together). `edges`
    says how its ends are bounded: "word" (at a word's edges), "stem" (Russian inflects the
    name), or "none" (CJK, kana, Hangul: no spaces mark a word's edges)."""
    view = read_as(term.strip())
    alnum = sum(c.isalnum() for c in view)
    if alnum < 2:
        return None
    free = alnum >= FREE_GAPS_FROM and not strict
    parts, pending_gap = [], False
    for c in view:
        if not c.isalnum():
            pending_gap = True
            continue
        if parts and strict:
            parts.append(_STRICT_GAP if pending_gap else "")
        elif parts:
            parts.append(_GAP if free else (_WRITTEN_GAP if pending_gap else _MARKUP_GAP))
        parts.append(_letter(c))
        pending_gap = False
    letters = [c for c in view if c.isalnum()]
    if not any(c.isascii() or "\u0370" <= c <= "\u052f" for c in letters):
        edges = "none"
    elif any("\u0400" <= c <= "\u052f" for c in letters):
        edges = "stem"
    else:
        edges = "word"
    return edges, [parts[0], "".join(parts[1:])]


def alternation(terms, *, strict: bool = False) -> str:
    """One pattern for many names. The edge tests stand once outside the alternation, and
    the names are grouped by first letter: Python's re tries the alternatives one by one at
    every position, and this keeps that to a word's starts and one test per first letter."""
    groups: dict[str, dict[str, set[str]]] = {"word": {}, "stem": {}, "none": {}}
    for term in terms:
        if found := term_pattern(term, strict=strict):
            edges, (first, rest) = found
            groups[edges].setdefault(first, set()).add(rest)

    def grouped(by_first: dict[str, set[str]]) -> str:
        return "|".join(
            f"{first}(?:{'|'.join(sorted(rests, key=len, reverse=True))})"
            for first, rests in sorted(by_first.items())
        )

    parts = []
    if groups["word"]:
        # (a name as written takes no plural: "alias" is no "alia")
        parts.append(rf"{START}(?:{grouped(groups['word'])}){_STRICT_END if strict else END}")
    if groups["stem"]:
        parts.append(rf"{START}(?:{grouped(groups['stem'])})[\u0400-\u052fa-z]{{0,3}}")
    if groups["none"]:
        parts.append(grouped(groups["none"]))
    return "|".join(f"(?:{p})" for p in parts)
