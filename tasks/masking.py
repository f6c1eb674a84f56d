"""Finding a model's identity in a text, and masking exactly what was found.

The words are looked for in the text's view (tasks/skeleton.py: decoded, look-alikes folded,
invisible characters gone), where the separators between a long name's letters are optional
("Open AI", "zz_secret_model_9", "C l a u d e", "[Cl](x)[aude](y)"), and a name must start
and end at a word's edge (camelCase and snake_case edges included), so "geminate" and
"Claudette" stay. What matched is replaced in the original text, and only that: the markup
characters inside a match (emphasis, brackets, table pipes, line breaks) are kept so the
Markdown around it keeps its structure, and nothing outside a match changes.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from . import identity_terms as data
from . import self_description
from .skeleton import LINK_DESTINATION, View, build_view, read_as, skeleton

# Letters of the scripts written with spaces between words, after look-alikes are folded:
# a name may not run on into one of them. (Chinese, Japanese, Korean, Thai ... may: "我是Claude".)
_WORD = r"A-Za-z0-9\u00c0-\u024f\u0370-\u03ff\u0400-\u052f"
_CAMEL = r"(?-i:(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z]))"
START = rf"(?:(?<![{_WORD}])|{_CAMEL})"
# A name may be followed by digits ("Claude3", "gpt4o": the version) and a plural s.
END = rf"(?:s?(?![A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u052f])|{_CAMEL})"
# Between the letters of a long name: a few characters that are not letters or digits.
_GAP = r"[\W_]{0,6}"
_WRITTEN_GAP = r"[^\w\s]{0,3}"
# Between the letters of a short one: punctuation or markup, but no space ("G.P.T", "**G**PT";
# not "x ai").
_MARKUP_GAP = r"[^\w\s]{0,2}"
# Between a family name and its version, size or tier: separators within one line.
_QSEP = r"(?:[ \t\-_.:/\u2010-\u2015]{0,2})"
FREE_GAPS_FROM = 5  # letters and digits; shorter names must be written as they are


@dataclass(frozen=True)
class Finding:
    """What was found, where (offsets in the original text) and why: for admins only."""

    start: int
    end: int
    text: str
    reason: str


def _letter(c: str) -> str:
    # A capital I reads as a small l in most fonts ("CIaude"), and rn as m ("Anthroprn...").
    if c in "lL":
        return "[lI]"
    if c in "mM":
        return "(?:m|rn)"
    return re.escape(c)


def term_pattern(term: str) -> tuple[str, list[str]] | None:
    """A name as a pattern over views, as (edges, [first letter, rest]): its letters in
    order, separators optional (a long name) or as written (a short one). `edges` says how
    its ends are bounded: "word" (at a word's edges), "stem" (Russian inflects the name), or
    "none" (CJK, kana, Hangul: no spaces mark a word's edges)."""
    view = read_as(term.strip())
    alnum = sum(c.isalnum() for c in view)
    if alnum < 2:
        return None
    free = alnum >= FREE_GAPS_FROM
    parts, pending_gap = [], False
    for c in view:
        if not c.isalnum():
            pending_gap = True
            continue
        if parts:
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


def alternation(terms) -> str:
    """One pattern for many names. The edge tests stand once outside the alternation, and
    the names are grouped by first letter: Python's re tries the alternatives one by one at
    every position, and this keeps that to a word's starts and one test per first letter."""
    groups: dict[str, dict[str, set[str]]] = {"word": {}, "stem": {}, "none": {}}
    for term in terms:
        if found := term_pattern(term):
            edges, (first, rest) = found
            groups[edges].setdefault(first, set()).add(rest)

    def grouped(by_first: dict[str, set[str]]) -> str:
        return "|".join(
            f"{first}(?:{'|'.join(sorted(rests, key=len, reverse=True))})"
            for first, rests in sorted(by_first.items())
        )

    parts = []
    if groups["word"]:
        parts.append(rf"{START}(?:{grouped(groups['word'])}){END}")
    if groups["stem"]:
        parts.append(rf"{START}(?:{grouped(groups['stem'])})[\u0400-\u052fa-z]{{0,3}}")
    if groups["none"]:
        parts.append(grouped(groups["none"]))
    return "|".join(f"(?:{p})" for p in parts)


def _qualifier() -> str:
    words = "|".join(sorted(data.QUALIFIERS, key=len, reverse=True))
    version = r"(?:v?\d+(?:x\d+)?[a-z]{0,2}|[a-z]\d+[a-z]?|" + words + ")"
    return rf"(?:{_QSEP}{version}(?![A-Za-z0-9]))"


_ALNUM = re.compile(r"[^\W_]+")


@lru_cache(maxsize=1)
def builtin_patterns() -> tuple[tuple[str, re.Pattern], ...]:
    """(reason, pattern) for the built-in names, families with their qualifiers and the short
    model names."""
    q = _qualifier()
    families = alternation(data.FAMILIES)
    needs_version = alternation(data.FAMILIES_WITH_VERSION)
    version_next = rf"(?={_QSEP}(?:v?\d|[a-z]\d))"
    tiers = "|".join(data.TIERS)
    short = "|".join(data.SHORT_MODELS)
    short_q = "|".join(data.SHORT_QUALIFIERS)
    cased = "|".join(f"(?-i:{re.escape(t[0])}){re.escape(t[1:])}" for t in data.CASED_NAMES)
    model = (
        rf"(?:(?:{families})(?:{q}){{0,8}}"
        rf"|(?:{needs_version}){version_next}(?:{q}){{1,8}}"
        rf"|{START}(?:{tiers}){_QSEP}[1-9](?:[.\-]\d)?(?![\d.])"
        rf"|(?<![\w.\-])(?-i:{short})(?:[-\s](?:{short_q}))?(?![\w]|\.\d))"
    )
    names = rf"{alternation((*data.NAMES, *data.HOSTS_AND_KEYS))}|{START}(?:{cased}){END}"
    return (
        ("model name", re.compile(model, re.IGNORECASE)),
        ("model or vendor name", re.compile(names, re.IGNORECASE)),
    )


@lru_cache(maxsize=256)
def campaign_pattern(terms: tuple[str, ...]) -> re.Pattern | None:
    pattern = alternation(terms)
    return re.compile(pattern, re.IGNORECASE) if pattern else None


def triggers(terms) -> frozenset[str]:
    """Letters any match of these names must contain, in the text's skeleton (its letters and
    digits, case-folded): each name's own, with I for l and rn for m as the patterns allow. A text without any of them cannot match, and skips the patterns: Python's re
    walks every position of a text the patterns are run on, and most answers name no model."""
    out = set()
    for term in terms:
        head = skeleton(term)
        variants = {""}
        for c in head:
            options = {"l": ("l", "i"), "m": ("m", "rn")}.get(c, (c,))
            variants = {v + o for v in variants for o in options}
        out |= {v for v in variants if len(v) >= 2}
    return frozenset(out)


@lru_cache(maxsize=1)
def builtin_triggers() -> frozenset[str]:
    return triggers(
        (
            *data.NAMES,
            *data.HOSTS_AND_KEYS,
            *data.CASED_NAMES,
            *data.FAMILIES,
            *data.FAMILIES_WITH_VERSION,
            *data.TIERS,
            *data.SHORT_MODELS,
        )
    )


@lru_cache(maxsize=256)
def campaign_triggers(terms: tuple[str, ...]) -> frozenset[str]:
    return triggers(terms)


def find(text: str, terms: tuple[str, ...]) -> list[Finding]:
    """Every identity in `text`, as spans of the original, sorted and merged."""
    view = build_view(text, skip_links=True)
    folded = view.text.casefold()
    letters = "".join(_ALNUM.findall(folded))
    passes = []
    if any(t in letters for t in builtin_triggers()):
        passes += builtin_patterns()
    if terms and any(t in letters for t in campaign_triggers(terms)):
        passes.append(("contender name, model id or redaction word", campaign_pattern(terms)))
    spans: list[tuple[int, int, str]] = []
    for reason, pattern in passes:
        spans += [(*m.span(), reason) for m in pattern.finditer(view.text) if m.end() > m.start()]
    spans += list(_vendors_beside(view.text, spans))
    if self_description.may_occur(folded):
        spans += [(s, e, "self-description") for s, e in self_description.spans(view.text)]
    found = _merged(text, view, spans)
    if "](" in text:
        # The link destinations the view left out, each on its own.
        for link in LINK_DESTINATION.finditer(text):
            offset = link.start(1)
            found += [
                Finding(f.start + offset, f.end + offset, f.text, f.reason)
                for f in find(link.group(1), terms)
            ]
        found = _merged(text, View(text, ()), [(f.start, f.end, f.reason) for f in found])
    return found


@lru_cache(maxsize=1)
def _vendor_patterns() -> tuple[re.Pattern, re.Pattern]:
    vendors = alternation(data.VENDORS)
    return (
        re.compile(rf"(?:{vendors})(?:['’]s)?[\s\-/]{{1,2}}$", re.IGNORECASE),
        re.compile(rf"[\s,]{{1,2}}(?:by|from|of)\s+(?P<who>{vendors})", re.IGNORECASE),
    )


def _vendors_beside(view: str, spans):
    """A generic vendor's name attached to a model's ("Google's Gemini", "Microsoft Phi-4",
    "Gemini from Google"): it says as much as the model's name does."""
    before, after = _vendor_patterns()
    for start, end, reason in list(spans):
        if match := before.search(view, max(0, start - 40), start):
            yield match.start(), start, reason
        if match := after.match(view, end):
            yield *match.span("who"), reason


_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _trails(char: str) -> bool:
    """A mark or an invisible character (but not a bidi control, which orders what follows)."""
    return unicodedata.category(char) in ("Mn", "Me", "Cf") and char not in _BIDI


def _merged(text: str, view: View, spans) -> list[Finding]:
    found: list[list] = []
    for vstart, vend, reason in sorted(spans):
        start, end = view.original_span(vstart, vend)
        # The marks and invisible characters on the name's last letter go with it.
        while end < len(text) and _trails(text[end]):
            end += 1
        if found and start <= found[-1][1]:
            found[-1][1] = max(found[-1][1], end)
        else:
            found.append([start, end, reason])
    return [Finding(s, e, text[s:e], r) for s, e, r in found]


# Characters kept inside a masked span: they may open or close Markdown structure (emphasis,
# code, links, tables, lines) that starts or ends outside it.
_KEEP = frozenset("*~`[]()<>|\n\r")


def masked(text: str, findings: list[Finding], token: str) -> str:
    """`text` with each finding replaced by `token`, its markup characters kept."""
    out, last = [], 0
    for f in findings:
        out.append(text[last : f.start])
        placed = False
        for c in f.text:
            if c in _KEEP:
                out.append(c)
            elif not placed:
                out.append(token)
                placed = True
        last = f.end
    out.append(text[last:])
    return "".join(out)
