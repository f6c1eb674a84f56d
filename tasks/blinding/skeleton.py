"""The normalized view of a text that identity masking matches on, and the way back.

A reviewer reads a rendered page, not code points: "Сlaude" with a Cyrillic С, "Cl&#97;ude",
"https://www.%61nthropic.com", "C\u2062laude" with an invisible character and "𝐂𝐥𝐚𝐮𝐝𝐞" all read
"Claude". The view is the text as read:

- HTML entities and percent-escapes decoded (repeatedly: "%2561" is "a" too);
- NFKC (full-width, mathematical, circled, superscript letters), then combining marks dropped;
- default-ignorable and format characters dropped (invisible operators, joiners, bidi
  controls, variation selectors, tag characters, Hangul fillers);
- letters that look like Latin ones folded to them (Unicode TR39 confusables, from the
  confusable-homoglyphs data package): Cyrillic, Greek, small capitals, ...
- case kept where the text has it (the matcher ignores case, but camelCase is a word break).

Digits are never folded to letters nor letters to digits, so "o1" is not "ol" and "2025-01-03"
stays a date. Every view character knows the span of the original it came from, so a match
in the view replaces exactly those characters of the original and nothing else.
"""

from __future__ import annotations

import json
import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from html import unescape
from importlib.resources import files

# Dropped although neither format (Cf) nor mark (Mn/Me): the Hangul fillers, which show as
# nothing (Unicode's Default_Ignorable_Code_Point list, those outside Cf/Mn/Me).
_IGNORABLE_LETTERS = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0})
_DROPPED_CATEGORIES = frozenset({"Cf", "Mn", "Me", "Cn", "Cs", "Co", "Cc"})
# Characters of the scripts whose letters are mistaken for Latin ones (and symbols, digits and
# punctuation, whose compatibility forms fold to ASCII): what starts with anything else is kept.
_SPACED = re.compile(
    r"[\x00-\u052f\u1d00-\u1fff\u2000-\u2bff\ua640-\ua69f\ua720-\uab6f\uff00-\uff65"
    r"\U0001d400-\U0001d7ff\U0001f100-\U0001f1ff]"
)

# Runs of ASCII that need no work (the common case), entities, and percent-escapes.
_PLAIN = re.compile(r"[\t\n\r\x20-\x24\x27-\x7e]+")
_PLAIN_BUT_BRACKET = re.compile(r"[\t\n\r\x20-\x24\x27-\x5c\x5e-\x7e]+")
# A Markdown link's destination: "[Cl](x)[aude](y)" reads "Claude" on the page.
LINK_DESTINATION = re.compile(r"\]\(([^()\s]*(?:\([^()\s]*\)[^()\s]*)*)\)")
# Right-to-left override: what follows, to its end (or the line's), shows reversed.
_OVERRIDDEN = re.compile("\u202e([^\u202c\n]*)\u202c?")
_DECODABLE = re.compile(
    r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});?|(?:%[0-9A-Fa-f]{2})+"
)


@lru_cache(maxsize=1)
def _prototypes() -> dict[str, str]:
    """{character: the ASCII letter it is confusable with}, for non-ASCII characters whose
    TR39 prototype is one ASCII letter (kept in the prototype's case)."""
    data = json.loads(
        files("confusable_homoglyphs").joinpath("confusables.json").read_text(encoding="utf-8")
    )
    table = {}
    for char, homoglyphs in data.items():
        if len(char) != 1 or char.isascii() or unicodedata.category(char)[0] == "N":
            continue
        for glyph in homoglyphs:
            proto = glyph["c"]
            if len(proto) == 1 and proto.isascii() and proto.isalpha():
                table[char] = proto
                break
    return table


@lru_cache(maxsize=8192)
def fold(char: str) -> str:
    """One non-ASCII character as read: '' for one that shows as nothing, else its NFKC form
    without marks, with look-alike letters as their ASCII prototype and digits as 0-9."""
    cp = ord(char)
    if cp in _IGNORABLE_LETTERS or 0xE0000 <= cp <= 0xE0FFF:
        return ""
    if unicodedata.category(char) in _DROPPED_CATEGORIES:
        return ""
    category = unicodedata.category(char)
    if category == "Nd":
        return str(unicodedata.digit(char))
    if category in ("Pd", "Zs"):  # dashes and spaces: all separators alike
        return "-" if category == "Pd" else " "
    composed = unicodedata.normalize("NFKC", char)
    if not _SPACED.match(unicodedata.normalize("NFD", composed)):
        # Scripts written without look-alikes of Latin (CJK, kana, Hangul, ...): their marks
        # are part of the letter (ド is not ト), and NFKC is all there is to do.
        return composed
    out = []
    for c in unicodedata.normalize("NFD", composed):
        category = unicodedata.category(c)
        if c.isascii():
            out.append(c)
        elif category in _DROPPED_CATEGORIES or ord(c) in _IGNORABLE_LETTERS:
            continue
        elif category == "Nd":
            out.append(str(unicodedata.digit(c)))
        else:
            out.append(_prototype(c) or _latin_letter(c) or c)
    return "".join(out)


def _prototype(char: str) -> str | None:
    """The ASCII letter `char` looks like, in `char`'s case: TR39 lists some letters in one
    case only (Cyrillic К is K, but к is not listed), and a name must read the same in both."""
    table = _prototypes()
    if found := table.get(char):
        return found
    if char.islower() and (found := table.get(char.upper())):
        return found.lower()
    if char.isupper() and (found := table.get(char.lower())):
        return found.upper()
    return None


_LATIN_NAME = re.compile(
    r"(?:(?:NEGATIVE |SQUARED |CIRCLED )+)?LATIN (SMALL |CAPITAL )?LETTER (?:SMALL CAPITAL )?"
    r"([A-Z])(?: WITH .*)?"
)


def _latin_letter(char: str) -> str | None:
    """The Latin letter a character is named after where TR39 has no prototype for it: small
    capitals (ᴄʟᴀᴜᴅᴇ), letters with a stroke or hook that do not decompose (ł, ƈ), negative
    circled and squared letters (🅒🅛🅐🅤🅓🅔)."""
    match = _LATIN_NAME.fullmatch(unicodedata.name(char, ""))
    if not match:
        return None
    return match.group(2) if match.group(1) == "CAPITAL " else match.group(2).lower()


@dataclass(frozen=True)
class View:
    """`text` as read, and for its pieces where they came from in the original.

    pieces: (view start, original start, original end, one-to-one); a one-to-one piece maps
    its k-th character to original start + k, any other maps all of its characters to the
    whole original span (an entity, an escape, a character that became several).
    """

    text: str
    pieces: tuple[tuple[int, int, int, bool], ...]

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The original characters behind view[start:end] (end > start)."""
        first, last = self._at(start), self._at(end - 1)
        # (a right-to-left override's characters run backwards)
        return min(first[0], last[0]), max(first[1], last[1])

    def _at(self, i: int) -> tuple[int, int]:
        if not self.pieces:
            return i, i + 1
        p = self.pieces[bisect_right(self._starts, i) - 1]
        if p[3]:
            return p[1] + i - p[0], p[1] + i - p[0] + 1
        return p[1], p[2]

    @property
    def _starts(self) -> list[int]:
        starts = self.__dict__.get("_starts_cache")
        if starts is None:
            starts = [p[0] for p in self.pieces]
            object.__setattr__(self, "_starts_cache", starts)
        return starts


def _decoded(piece: str) -> str | None:
    """An entity or a run of percent-escapes as the characters it stands for (None: it stands
    for nothing, or for bytes that are not UTF-8)."""
    if piece.startswith("&"):
        text = unescape(piece)
        return None if text == piece else text
    try:
        return bytes.fromhex(piece.replace("%", "")).decode("utf-8")
    except UnicodeDecodeError:
        return None


def read_as(text: str) -> str:
    """The view's text alone (no offsets)."""
    return build_view(text).text


def build_view(text: str, *, skip_links: bool = False) -> View:
    """The view of `text`; decoded again while decoding changed it ("%2561" is "%61", then
    "a"), up to three times, each level's offsets mapped back through the one before.
    `skip_links`: leave Markdown link destinations out (look for names in them on their own),
    so the link texts around them read on as the page shows them."""
    view = _one_level(text, skip_links)
    for _ in range(2):
        if not view.pieces or not _DECODABLE.search(view.text):
            break
        inner = _one_level(view.text)
        if inner.text == view.text:
            break
        view = View(inner.text, _compose(inner, view))
    return view


def _compose(inner: View, outer: View) -> tuple[tuple[int, int, int, bool], ...]:
    """inner's pieces, with their spans in outer's text mapped to outer's original."""
    if not inner.pieces:
        return outer.pieces
    pieces = []
    for k, (vstart, start, end, same) in enumerate(inner.pieces):
        vend = inner.pieces[k + 1][0] if k + 1 < len(inner.pieces) else len(inner.text)
        if same:
            # one view character per outer character: each keeps its own way back
            for i in range(vend - vstart):
                a, b = outer._at(start + i)
                pieces.append((vstart + i, a, b, False))
        else:
            a, b = outer.original_span(start, end)
            pieces.append((vstart, a, b, False))
    return tuple(pieces)


def _one_level(text: str, skip_links: bool = False) -> View:
    if text.isascii() and "&" not in text and "%" not in text and not (skip_links and "](" in text):
        return View(text, ())
    plain_run = _PLAIN_BUT_BRACKET if skip_links else _PLAIN
    out: list[str] = []
    pieces: list[tuple[int, int, int, bool]] = []
    length = 0
    pos, n = 0, len(text)

    def add(piece: str, start: int, end: int, same: bool) -> None:
        nonlocal length
        if piece:
            pieces.append((length, start, end, same))
            out.append(piece)
            length += len(piece)

    while pos < n:
        plain = plain_run.match(text, pos)
        if plain:
            add(plain.group(), pos, plain.end(), True)
            pos = plain.end()
            continue
        link = LINK_DESTINATION.match(text, pos) if skip_links and text[pos] == "]" else None
        if link:
            add("](", pos, pos + 2, True)
            add(")", link.end() - 1, link.end(), True)
            pos = link.end()
            continue
        overridden = _OVERRIDDEN.match(text, pos) if text[pos] == "\u202e" else None
        if overridden:
            inner = _one_level(overridden.group(1))
            offset = overridden.start(1)
            for i in reversed(range(len(inner.text))):
                a, b = inner.original_span(i, i + 1)
                add(inner.text[i], offset + a, offset + b, False)
            pos = overridden.end()
            continue
        coded = _DECODABLE.match(text, pos) if text[pos] in "&%" else None
        decoded = _decoded(coded.group()) if coded else None
        if decoded is not None:
            add("".join(c if c.isascii() else fold(c) for c in decoded), pos, coded.end(), False)
            pos = coded.end()
            continue
        char = text[pos]
        read = char if char.isascii() else fold(char)
        add(read, pos, pos + 1, len(read) == 1)
        pos += 1
    return View("".join(out), tuple(pieces))


_ALNUM = re.compile(r"[^\W_]+")


def skeleton(text: str) -> str:
    """The text as read, case-folded, letters and digits only: what a term must not be found
    in once masked (for tests and canaries; the masker itself matches on the view)."""
    return "".join(_ALNUM.findall(read_as(text or "").casefold()))
