"""What a reviewer may see of a model's output: masked, then rendered as safe Markdown.

Every text a reviewer reads goes through the same pipeline: identity masking on the raw text
(tasks/blinding/masking.py, on the normalized view of tasks/blinding/skeleton.py), then Markdown with raw
HTML disabled, then an allow-list sanitizer, so a model cannot smuggle markup, scripts,
images (which would call out to a third party) or attributes into the page. Nothing here calls an LLM; it is cheap enough to run per request,
and its results are kept in small per-process LRU caches (keyed by the full text and the
campaign's terms, so a cached result can only ever be that very text's) because the same
texts come back: the claim masks what the page then renders, two reviewers see each item,
a form with errors is shown again.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache, wraps
from html import unescape
from urllib.parse import urlsplit

import nh3
import pyromark
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

from tasks.blinding import masking, suspects
from tasks.blinding import terms as data
from tasks.blinding.catalog import COMMON_ZIPF, zipf
from tasks.blinding.masking import Finding
from tasks.blinding.skeleton import skeleton

__all__ = [
    "MASK",
    "MAX_REDACT_WORDS",
    "Finding",
    "Masked",
    "check_identity",
    "labels",
    "mask_identity",
    "redact_problem",
    "render_output",
    "skeleton",
]

MASK = "[redacted]"


def labels(n: int) -> list[str]:
    """The labels of `n` outputs in the order shown, in place of their contenders' names: A, B,
    ..., Z, AA, AB, ..."""
    out = []
    for i in range(n):
        name, i = "", i + 1
        while i:
            i, rem = divmod(i - 1, 26)
            name = string.ascii_uppercase[rem] + name
        out.append(name)
    return out


@dataclass(frozen=True)
class Masked:
    text: str
    hits: int
    # what was found, where and why: for admins (equal masks are equal whatever the reasons)
    findings: tuple[Finding, ...] = field(default=(), compare=False)
    # what was left as written but is worth an admin's look before reviewers see it
    # ("possible model name", ...): the output is held, never the text changed
    holds: tuple[Finding, ...] = field(default=(), compare=False)


# Texts up to this size have their masking and rendering cached (a bound on memory: each
# cache holds at most CACHE_ENTRIES texts of at most CACHE_MAX_CHARS characters).
CACHE_ENTRIES = 256
CACHE_MAX_CHARS = 20_000


def _cached_for_small_texts(fn):
    """fn(text, ...) with an LRU cache for texts up to CACHE_MAX_CHARS characters."""
    cached = lru_cache(maxsize=CACHE_ENTRIES)(fn)

    @wraps(fn)
    def wrapper(text: str, *args):
        return cached(text, *args) if len(text) <= CACHE_MAX_CHARS else fn(text, *args)

    wrapper.cache_clear = cached.cache_clear
    return wrapper


_ADDRESS = re.compile(r"^[\d.:]+$")
# Date stamps and tags that providers append to a model id ("gpt-4o-2024-08-06",
# "claude-3-5-sonnet-20241022", "llama3:8b", "-latest"): the id without them is an alias.
_ID_SUFFIX = re.compile(r"(?:[-_@]\d{4}-?\d{2}-?\d{2}|[-_@]latest|:[\w.\-]+)$", re.IGNORECASE)


def _telling(value: str) -> bool:
    """Whether a contender-derived word says who it is rather than being an ordinary word:
    at least four letters and digits, or three with a digit, and not a common word."""
    alnum = "".join(c for c in value.casefold() if c.isalnum())
    letters = "".join(c for c in alnum if not c.isdigit())
    if alnum in data.COMMON_WORDS or letters in data.COMMON_WORDS:  # "it", "large-2", "v1"
        return False
    has_digit = any(c.isdigit() for c in alnum)
    return len(alnum) >= 4 or (len(alnum) == 3 and has_digit and not alnum.isdigit())


_ALIAS_SPLIT = re.compile(r"[\s\-_.:@]+")
# What an answer may leave off a model's name: its size, version, date and tier.
_DROPPABLE = re.compile(
    r"^(?:v?\d+(?:\.\d+)*[a-z]{0,2}|[a-z]{1,2}\d+[a-z]{0,2}|\d+x\d+[a-z]?|\d{4,8})$", re.I
)


def _aliases(value: str) -> list[str]:
    """A name or model id and the shorter forms a provider or an answer shows it under: the
    id without its organisation, date stamp or tag; the organisation alone ("orchidlabs");
    the name without its trailing size, version and tier ("orchid-pilot-7b-instruct" is also
    "orchid-pilot"), unless what is left is only very common words ("support bot"). One word
    cut from a longer name ("orchid", "northwind" from "northwind-large") counts only in a
    model's context, and holds nothing elsewhere: it is marked with masking.CONTEXT_ONLY.
    Separators need no variants: a long name matches with or without them ("Orchid Pilot",
    "orchid-pilot", "orchidpilot")."""
    out = [value]
    if "/" in value:
        org, name = value.rsplit("/", 1)
        out += [name, org.rsplit("/", 1)[-1]]
    for v in list(out):
        bare = _ID_SUFFIX.sub("", v)
        if bare != v:
            out.append(bare)
    qualifiers = {q.casefold() for q in data.QUALIFIERS}
    cut = []
    for v in list(out):
        words = [w for w in _ALIAS_SPLIT.split(v) if w]
        while len(words) > 1 and (
            _DROPPABLE.match(words[-1]) or words[-1].casefold() in qualifiers
        ):
            words.pop()
            cut.append(" ".join(words))
        if len(words) > 1 and words[0].isalpha() and len(words[0]) >= 4:
            cut.append(words[0])
    cut = [c if " " in c else masking.CONTEXT_ONLY + c for c in cut if re.search(r"[^\W\d_]", c)]
    return list(dict.fromkeys([*out, *(c for c in cut if not _only_common_words(c))]))


def _only_common_words(alias: str) -> bool:
    words = [w for w in _ALIAS_SPLIT.split(alias.casefold().lstrip(masking.CONTEXT_ONLY)) if w]
    return all(w.isalpha() and zipf(w) >= COMMON_ZIPF for w in words)


def _host_terms(base_url: str) -> list[str]:
    host = urlsplit(base_url or "").hostname or ""
    # A named host (not an address, not localhost) tells the vendor or the deployment.
    if len(host) < 3 or host == "localhost" or _ADDRESS.match(host):
        return []
    labels = host.split(".")
    own = [label for label in labels[:-1] if label not in data.GENERIC_HOST_LABELS]
    return [host, *own[-1:]]


def identity_terms(
    *, redact: Iterable[str] = (), contenders: Iterable[dict] = ()
) -> tuple[str, ...]:
    """The campaign's redaction words plus its contenders' own names, model ids (and their
    aliases), version labels and endpoint host names. Common words are never terms on their
    own: "acme/it" masks "acme/it", never "it". A term starting with masking.CONTEXT_ONLY
    ("~orchid") is one word cut from a contender's name: it counts in a model's context only."""
    terms: list[str] = [str(w).strip() for w in redact if str(w).strip()]
    for c in contenders:
        terms += _host_terms(c.get("base_url") or "")
        for key in ("name", "model", "version_label"):
            value = (c.get(key) or "").strip()
            terms += [alias for alias in _aliases(value) if _telling(alias)]
    return tuple(sorted(set(terms)))


def mask_identity(text: str, terms: Iterable[str] = (), *, strict: bool = False) -> Masked:
    """Replace every identity found in `text` with MASK; `hits` counts the replacements and
    `findings` says what was replaced and why (for admins, never for reviewers); `holds` are
    the names left as written that make an output worth an admin's look. `strict` masks
    those too: for the texts no admin approves before reviewers read them (the campaign's
    instructions and rubric, the tasks, reviewers' comments shown to arbiters)."""
    return _mask_identity(text or "", tuple(terms), MASK, strict)


@_cached_for_small_texts
def _mask_identity(text: str, terms: tuple[str, ...], token: str, strict: bool = False) -> Masked:
    found, held = masking.detect(text, terms)
    if strict and held:
        found = masking.merged_findings(text, [*found, *held])
        held = []
    findings, holds = tuple(found), tuple(held)
    if not findings:
        return Masked(text=text, hits=0, holds=holds)
    return Masked(
        text=masking.masked(text, findings, token),
        hits=len(findings),
        findings=findings,
        holds=holds,
    )


def check_identity(text: str, terms: Iterable[str] = ()) -> Masked:
    """mask_identity with the wider net: besides what it masks and the ambiguous names it
    leaves, every suspect span an admin should look at before reviewers see the output
    (tasks/blinding/suspects.py), and "too long to check" for a text beyond the checks'
    bound. Run when an output is stored, not on a reviewer's request."""
    text = text or ""
    shown = mask_identity(text, terms)
    more = suspects.holds(text, tuple(terms), shown.findings)
    if not more:
        return shown
    holds = tuple(sorted({*shown.holds, *more}, key=lambda f: (f.start, f.end, f.reason)))
    return Masked(text=shown.text, hits=shown.hits, findings=shown.findings, holds=holds)


# A campaign's redact list beyond this is refused (the campaign definition's reader names the
# limit): each word is a pattern every text a reviewer reads is searched for.
MAX_REDACT_WORDS = 1000
MAX_REDACT_WORD_CHARS = 200


def redact_problem(words) -> str | None:
    """Why a redact list is refused, naming the limit (None if it is within bounds)."""
    words = list(words or [])
    if len(words) > MAX_REDACT_WORDS:
        return (
            f"redact: {len(words):,} words, more than the limit of {MAX_REDACT_WORDS:,}; "
            "name the contenders' own words, masking finds the rest"
        )
    long = [w for w in words if len(str(w)) > MAX_REDACT_WORD_CHARS]
    if long:
        return (
            f"redact: a word of {len(str(long[0])):,} characters, more than the limit of "
            f"{MAX_REDACT_WORD_CHARS}"
        )
    return None


def _as_written(text: str) -> str:
    """A found word as its author wrote it, less what hides it: entities decoded, invisible
    characters dropped, the hyphens drawn as "-" written so."""
    return "".join(
        "-" if c in "\u2010\u2011" else "" if unicodedata.category(c) == "Cf" else c
        for c in unescape(text)
    )


def identity_words(text: str, terms: Iterable[str] = ()) -> list[str]:
    """The distinct words (and makers in self-descriptions) mask_identity hides in `text`
    (strictly: with the possible names), as written: for warning the person who wrote them,
    never for reviewers."""
    found: dict[str, str] = {}
    for f in mask_identity(text, terms, strict=True).findings:
        word = " ".join(_as_written(f.text).split())
        found.setdefault(word.casefold(), word)
    return sorted(found.values(), key=str.casefold)


class SanitizedHTML(str):
    """HTML that came out of the allow-list sanitizer; templates render it unescaped.

    This is the only way LLM text reaches a page unescaped: no `|safe` on model output.
    """

    def __html__(self) -> str:
        return self


_md = (
    MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    .enable("table")
    .enable("strikethrough")
)


def _image_as_link(renderer, tokens, idx, options, env) -> str:
    # An image in an answer is shown as a link saying so, never loaded: the page would fetch it
    # from wherever the model pointed (telling that server who reviews, and when), and a
    # silently dropped image would hide that the answer had one.
    token = tokens[idx]
    alt = renderer.renderInlineAsText(token.children or [], options, env).strip()
    src = escapeHtml(token.attrGet("src") or "")
    return f'<a href="{src}">[image: {escapeHtml(alt) or "no description"}]</a>'


_md.add_render_rule("image", _image_as_link)

ALLOWED_TAGS = {
    "p",
    "br",
    "hr",
    "strong",
    "em",
    "b",
    "i",
    "del",
    "s",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "a",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
}
ALLOWED_ATTRIBUTES = {"a": {"href"}, "ol": {"start"}, "th": {"style"}, "td": {"style"}}


# Table alignment comes out as style=; drop it (CSP forbids inline styles anyway).
_NH3_ATTRIBUTES = {k: v - {"style"} for k, v in ALLOWED_ATTRIBUTES.items() if v - {"style"}}


# Built once: nh3.clean(html, **options) would build its sanitizer on every call.
_sanitizer = nh3.Cleaner(
    tags=ALLOWED_TAGS,
    attributes=_NH3_ATTRIBUTES,
    url_schemes={"http", "https", "mailto"},
    link_rel="noopener noreferrer nofollow",
    # A link in an answer or in the instructions opens a new tab: followed in the review's own
    # tab, it would leave the item with its scores not yet sent.
    set_tag_attribute_values={"a": {"target": "_blank"}},
    strip_comments=True,
)

# Plain text that Markdown renders as one paragraph of itself: lines that start with a letter
# and end without a space, made of letters, digits, spaces and punctuation that means
# nothing to Markdown here (no *_`~#>|[]<&\" and no indent, list marker, or blank line). It has
# nothing to escape or sanitize either: the parser would only wrap it in <p>...</p>.
_PLAIN_LINE = r"[^\W\d_](?: *(?:[^\W_]|[,.:;?!'()/%+=@$-]))*"
_PLAIN_TEXT = re.compile(rf"{_PLAIN_LINE}(?:\n{_PLAIN_LINE})*")


# pulldown-cmark (Rust, through pyromark) renders Markdown 10-20x faster than markdown-it-py
# (pure Python), to what a browser shows the same for what answers use (headings, lists, code,
# tables, links, emphasis; tested on a corpus and by property), but not for everything. It
# passes raw HTML through, where markdown-it-py shows it as text: a reviewer must see what the
# model wrote. It links javascript:/vbscript:/file:/data: URLs (the sanitizer then drops the
# href) where markdown-it-py leaves the Markdown as written, and it strikes through text
# between single tildes, which markdown-it-py leaves alone. A text where any of these could
# occur (a "<" that may open a tag, comment, declaration or autolink; such a scheme; a single
# tilde) goes to markdown-it-py, and so does an image ("![", shown as a link: _image_as_link).
# (Each alternative starts with its character, the scheme's looked up behind the colon: 10x
# faster than trying every scheme at every position.)
_FAST_MAY_DIFFER = re.compile(
    r"<[A-Za-z/!?]|:(?:(?<=javascript:)|(?<=vbscript:)|(?<=file:)|(?<=data:))|~(?<!~~)(?!~)|!\[",
    re.IGNORECASE,
)
_FAST_OPTIONS = pyromark.Options.ENABLE_TABLES | pyromark.Options.ENABLE_STRIKETHROUGH


def render_markdown(text: str) -> SanitizedHTML:
    """Markdown -> sanitized HTML. Raw HTML in the source is shown as text, never executed."""
    return _render_markdown(text or "")


@_cached_for_small_texts
def _render_markdown(text: str) -> SanitizedHTML:
    if _PLAIN_TEXT.fullmatch(text):
        return SanitizedHTML(f"<p>{text}</p>\n")
    if _FAST_MAY_DIFFER.search(text):
        html = _md.render(text)
    else:
        html = pyromark.html(text, options=_FAST_OPTIONS)
    # Whichever renderer: the allow-list sanitizer has the last word.
    return SanitizedHTML(_sanitizer.clean(html))


# What a mask is written as while the text is rendered: a character with no meaning to
# Markdown or HTML, so a mask can neither make nor break structure ("[redacted]: ..." at a
# line's start would be a link reference definition, and vanish); MASK replaces it after.
def _placeholder(text: str) -> str:
    return next(chr(cp) for cp in range(0xE000, 0xF900) if chr(cp) not in text)


def render_output(
    text: str, terms: Iterable[str] = (), *, strict: bool = False
) -> tuple[str, SanitizedHTML, int]:
    """(masked text, sanitized HTML, mask hits) for one text a reviewer reads: masked first,
    then rendered (`strict` as for mask_identity)."""
    text = text or ""
    shown = mask_identity(text, terms, strict=strict)
    if not shown.hits:
        return text, render_markdown(text), 0
    token = _placeholder(text)
    html = render_markdown(_mask_identity(text, tuple(terms), token, strict).text)
    encoded = "".join(f"%{b:02X}" for b in token.encode())
    html = html.replace(token, MASK).replace(encoded, MASK).replace(encoded.lower(), MASK)
    return shown.text, SanitizedHTML(html), shown.hits
