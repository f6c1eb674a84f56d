"""What a reviewer may see of a model's output: masked, then rendered as safe Markdown.

Every output goes through the same pipeline (RELIABILITY.md "Blinding leaks" 5): identity
masking on the raw text, Markdown with raw HTML disabled, then an allow-list sanitizer, so a
model cannot smuggle markup, scripts, images (which would call out to a third party) or
attributes into the page. Nothing here calls an LLM; it is cheap enough to run per request,
and its results are kept in small per-process LRU caches (keyed by the full text and the
campaign's terms, so a cached result can only ever be that very text's) because the same
texts come back: the claim masks what the page then renders, two reviewers see each item,
a form with errors is shown again.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache, wraps
from html import unescape
from urllib.parse import urlsplit

import nh3
import pyromark
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

from .models import FLAGS

MASK = "[redacted]"

# Model and vendor names that identify an assistant and hardly ever mean anything else in a
# business answer. Generic words that *are* vendors (Google, Meta, Microsoft, Amazon) are only
# masked in a self-identifying phrase ("trained by Google"), see SELF_ID below.
BUILTIN_TERMS: tuple[str, ...] = (
    "OpenAI",
    "ChatGPT",
    "GPT",
    "Anthropic",
    "Claude",
    "Gemini",
    "Bard",
    "PaLM",
    "DeepMind",
    "LLaMA",
    "Llama",
    "Mistral AI",
    "Mistral",
    "Mixtral",
    "Codestral",
    "Cohere",
    "Command R",
    "Qwen",
    "Tongyi",
    "Qianwen",
    "DeepSeek",
    "Grok",
    "xAI",
    "Gemma",
    "Vicuna",
    "ERNIE Bot",
    "Wenxin",
    "ChatGLM",
    "Zhipu",
    "Moonshot AI",
    "Kimi",
    "Baichuan",
    "Perplexity",
    "Nemotron",
    "Copilot",
    "Bing Chat",
    "Falcon LLM",
    "Jamba",
    "AI21",
    "Hugging Face",
    "HuggingChat",
    "Ollama",
    "vLLM",
    # As Chinese, Japanese and Korean answers write them (the models' own self-introductions:
    # "我是通义千问", "我是文心一言"). Not 豆包 (Doubao), also a bun.
    "通义千问",
    "通义",
    "千问",
    "文心一言",
    "文心",
    "智谱清言",
    "智谱",
    "月之暗面",
    "深度求索",
    "讯飞星火",
    "混元",
    "百川智能",
    "零一万物",
    "克劳德",
    "クロード",
    "클로드",
    "ジェミニ",
    "제미나이",
)
# A word character, for where a name starts and ends: Python's \w less the letters of scripts
# written without spaces between words (Chinese, Japanese, Thai, Lao, Khmer, Myanmar) and of
# Korean, whose particles attach to the word before them. \w counts those letters as part of
# the name's word: "我是Claude", "Claudeです" and "ChatGPT입니다" kept the name, and "GPT-4o的回答"
# lost the Chinese that followed the version along with it.
_UNSPACED = (
    "\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u2e80-\u2fdf\u3005-\u3007"
    "\u3040-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff"
    "\uff66-\uffdc\U00020000-\U0003134f"
)
WORD_CHAR = rf"[^\W{_UNSPACED}]"


def _builtin_patterns(w: str) -> tuple[str, ...]:
    """Versioned family names (GPT-4o, gpt-3.5-turbo, Llama-3.1-70B, Phi-3, o1-preview, ...),
    their version running on over word characters `w`."""
    rest = rf"(?:{w}|-|\.(?={w}))*"
    # A family name and what follows it to name one model: versions, sizes and tiers ("Claude
    # 3.5 Sonnet", "Claude Opus 4.1", "Gemini 1.5 Pro", "DeepSeek-V3", "Kimi K2", "GPT-4o mini",
    # "Llama 3.1 70B Instruct"), masked whole: "[redacted] Sonnet" still said which model.
    piece = (
        rf"(?:v?\d{rest}|[rk]\d+{w}*|opus|sonnet|haiku|instant|pro|flash|ultra|nano|mini|turbo"
        rf"|large|medium|small|tiny|coder|chat|instruct|preview|thinking|reasoner|plus)(?!{w})"
    )
    families = (
        "chatgpt|llama|qwen|mistral|mixtral|codestral|gemma|phi|claude|gemini|deepseek|grok|yi|kimi"
    )
    # At a word's start ("Delphi 7" is not Phi-7; \b is that start where \w is the word
    # character, and cheaper than the lookbehind), but GPT anywhere ("openai_gpt-4o.json").
    start = r"\b" if w == r"\w" else rf"(?<!{w})"
    return (
        rf"(?:{start}(?:{families})|gpt)(?:[-\s]?\d{rest}(?:[-\s]{piece})*|(?:[-\s]{piece})+)",
        r"o[1-4](?:-(?:preview|mini|pro))\b",
    )


BUILTIN_PATTERNS = _builtin_patterns(WORD_CHAR)
# "As an AI developed by X", "I am a language model trained by X", "created by the X team":
# only near an assistant's self-description, so "the bridge was built by Contoso" stays.
SELF_ID = re.compile(
    r"(?P<about>\bI(?:'m|\s+am|\s+was)\b|\b(?:AI|assistant|language\s+model|LLM|chatbot|model)\b)"
    r"(?P<between>[^.\n]{0,60}?)"
    r"(?P<lead>\b(?:developed|created|made|trained|built|designed|engineered|provided)\s+by)"
    r"\s+(?P<who>(?:the\s+)?[A-Z](?:[\w\-]|\.(?=\w))*(?:\s+[A-Z](?:[\w\-]|\.(?=\w))*){0,2}(?:\s+team)?)",
    re.IGNORECASE,
)
# The same in Chinese: "我是一个大型语言模型，由 Google 训练", "由阿里云开发".
SELF_ID_ZH = re.compile(
    r"(?:我(?!们)|本助手|本模型|语言模型|人工智能助手|AI助手)[^。！？\n]{0,30}?"
    r"由\s*[^\s，。、,.!?！？]{1,12}?\s*(?:公司|团队|集团)?\s*"
    r"(?:开发|训练|研发|打造|创建|构建|推出|设计)",
    re.IGNORECASE,
)
_ADDRESS = re.compile(r"^[\d.:]+$")

FLAG_CHOICES = FLAGS


@dataclass(frozen=True)
class Masked:
    text: str
    hits: int


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


@lru_cache(maxsize=256)
def _compiled(extra: tuple[str, ...], ascii: bool = False) -> re.Pattern:
    """The words to mask; `ascii`: for a text of ASCII characters only, where WORD_CHAR is
    plain \\w, which Python's re tests faster than a class with ranges."""
    terms = sorted(
        {t.strip() for t in (*BUILTIN_TERMS, *extra) if len(t.strip()) >= 2}, key=len, reverse=True
    )
    if ascii:
        terms = [t for t in terms if t.isascii()]  # the others cannot occur
    # The word boundaries (which also hold for terms starting or ending in punctuation,
    # "01.AI") wrap the whole alternation rather than each term: the same matches, as the
    # alternation still tries the terms longest first and backtracks into it when the
    # closing boundary fails, but Python's re no longer evaluates one lookbehind per term
    # at every position of the text (4-8x faster).
    words = "|".join(re.escape(t) for t in terms)
    w = r"\w" if ascii else WORD_CHAR
    parts = [*_builtin_patterns(w), rf"(?<!{w})(?:{words})(?!{w})"]
    return re.compile("|".join(f"(?:{p})" for p in parts), re.IGNORECASE)


def identity_terms(
    *, redact: Iterable[str] = (), contenders: Iterable[dict] = ()
) -> tuple[str, ...]:
    """The campaign's redaction words plus its contenders' own names, model ids, version labels
    and endpoint host names."""
    terms: list[str] = [str(w) for w in redact if str(w).strip()]
    for c in contenders:
        host = urlsplit(c.get("base_url") or "").hostname or ""
        # A named host (not an address, not localhost) tells the vendor or the deployment.
        if len(host) >= 3 and host != "localhost" and not _ADDRESS.match(host):
            terms.append(host)
        for key in ("name", "model", "version_label"):
            value = (c.get(key) or "").strip()
            if len(value) >= 3:
                terms.append(value)
                # "org/model-name" model ids: the bare name after the slash is just as telling.
                if "/" in value:
                    terms.append(value.rsplit("/", 1)[1])
    return tuple(sorted(set(terms)))


# Characters that split a name without showing (soft hyphen, zero-width space, word joiner,
# byte-order mark) go, and the hyphens drawn exactly as "-" become it: "GPT\u20114o", with the
# non-breaking hyphen vendors write their names with, showed as "[redacted]\u20114o". What a
# reader would see differently stays: dashes, the minus sign, the zero-width (non-)joiners
# that emoji and some scripts need.
_LOOKALIKES = str.maketrans(
    {"\u00ad": None, "\u200b": None, "\u2060": None, "\ufeff": None}
    | dict.fromkeys("\u2010\u2011", "-")
)


# An HTML entity inside a name is part of the word: "GPT&#8209;4o" (the non-breaking hyphen
# as an entity) had its "GPT" masked and showed "[redacted]\u20114o" once rendered, as the
# entity stopped the word. Entities for letters and digits, and for the hyphens, dots and
# invisible characters above between two word characters, are written as the characters
# themselves before the words are looked for: they mean nothing to Markdown there, so the
# answer renders as before. Other entities (&amp;, &lt;, &#42;) stay as written.
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_JOINING = frozenset("-.\u00ad\u200b\u2060\ufeff\u2010\u2011")


def _entity_in_word(match: re.Match) -> str:
    char = unescape(match.group(0))
    if len(char) == 1 and char.isalnum():
        return char
    text, start, end = match.string, match.start(), match.end()
    inside = 0 < start and end < len(text) and text[start - 1].isalnum() and text[end].isalnum()
    return char if len(char) == 1 and char in _JOINING and inside else match.group(0)


# The zero-width (non-)joiners mean something only in the scripts and emoji that need them:
# between two Latin letters or digits ("Cl\u200caude") they only hide a name.
_LATIN_JOINER = re.compile(r"(?<=[A-Za-z0-9])[\u200c\u200d]+(?=[A-Za-z0-9])")


def _as_read(text: str) -> str:
    """`text` with name-splitting entities and characters written plainly (see above)."""
    if "&" in text:
        text = _ENTITY.sub(_entity_in_word, text)
    if "\u200c" in text or "\u200d" in text:
        text = _LATIN_JOINER.sub("", text)
    return text.translate(_LOOKALIKES)


def mask_identity(text: str, terms: Iterable[str] = ()) -> Masked:
    """Replace self-identification with MASK; `hits` counts replacements."""
    return _mask_identity(_as_read(text or ""), tuple(terms))


# Markup a reader does not see: emphasis and code marks, escapes, and HTML entities. `_Claude_`
# (italics) or `Cl&#97;ude` hide a name from the word match on the raw text but show it once
# rendered, so the words are also looked for in the text without them.
_INLINE_MARKUP = re.compile(r"[*_~`\\]")
_HAS_MARKUP = re.compile(r"[*_~`\\&]")


@_cached_for_small_texts
def _mask_identity(text: str, terms: tuple[str, ...]) -> Masked:
    masked = _mask_words(text, terms)
    if _HAS_MARKUP.search(text):
        bare = _mask_words(_INLINE_MARKUP.sub("", unescape(text).translate(_LOOKALIKES)), terms)
        if bare.hits > masked.hits:
            # A name only shows without the markup: the bare text then, formatting lost.
            return bare
    return masked


def _passes(text: str) -> tuple[re.Pattern | None, ...]:
    """The self-descriptions, then the words (None); Chinese ones cannot be in ASCII text."""
    return (SELF_ID, None) if text.isascii() else (SELF_ID, SELF_ID_ZH, None)


def _mask_words(text: str, terms: tuple[str, ...]) -> Masked:
    hits = 0
    # The whole self-description goes, not only the name: its wording ("developed by",
    # "created by", "trained by") differs from vendor to vendor and would tell them apart.
    # Then the words (None), in what is left.
    for pattern in _passes(text):
        pieces, last = [], 0
        for start, end in _spans(pattern, text, terms):
            pieces += [text[last:start], MASK]
            last = end
            hits += 1
        if pieces:
            text = "".join([*pieces, text[last:]])
    return Masked(text=text, hits=hits)


# Compatibility characters a reader takes for the letters they stand for: the full-width
# forms of CJK typesetting ("ＧＰＴ－４ｏ", "私はＣｌａｕｄｅです"), mathematical bold or script
# letters ("𝐂𝐥𝐚𝐮𝐝𝐞"), ligatures, superscripts. The words are looked for in the text with these
# characters in their NFKC form, and what matched is replaced in the text as written (the
# rest stays as written).
@lru_cache(maxsize=1)
def _compat() -> dict[int, str]:
    """{character: its NFKC form} for the characters NFKC writes in ASCII (all below
    U+30000), a str.translate table built on first use (20-30 ms). Left out: those that would
    start or end a word where the text has none ("Claude™" is not "ClaudeTM")."""
    table = {}
    for cp in range(0x80, 0x30000):
        char = chr(cp)
        if 0xD800 <= cp < 0xE000 or unicodedata.is_normalized("NFKC", char):
            continue
        form = unicodedata.normalize("NFKC", char)
        is_word, all_word = re.fullmatch(r"\w", char), re.fullmatch(r"\w+", form)
        if form.isascii() and (is_word is None) == (all_word is None):
            table[cp] = form
    return table


def _origin(text: str) -> list[int]:
    """For each character of text.translate(_compat()), the index of the one in `text` it
    came from (one became several: "ﬁ", "…")."""
    table, origin = _compat(), []
    for i, char in enumerate(text):
        origin += [i] * len(table.get(ord(char), char))
    return origin


def _spans(pattern: re.Pattern | None, text: str, terms: tuple[str, ...]):
    """(start, end) in `text` of what `pattern` (None: the words to mask) finds in it, read
    with its compatibility characters in their NFKC form."""
    view = text if text.isascii() else text.translate(_compat())
    pattern = pattern or _compiled(terms, view.isascii())
    origin, last = None, 0
    for match in pattern.finditer(view):
        start, end = match.span()
        if len(view) != len(text):
            origin = origin or _origin(text)
            # A character that became several is replaced whole.
            start, end = max(origin[start], last), origin[end - 1] + 1
        if end > start:
            yield start, end
            last = end


def identity_words(text: str, terms: Iterable[str] = ()) -> list[str]:
    """The distinct words (and self-descriptions) mask_identity hides in `text`, as written:
    for warning the person who wrote them, never for reviewers."""
    found: dict[str, str] = {}
    sources = [_as_read(text or "")]
    if _HAS_MARKUP.search(sources[0]):
        sources.append(_INLINE_MARKUP.sub("", unescape(sources[0]).translate(_LOOKALIKES)))
    for source in sources:
        for pattern in _passes(source):
            for start, end in _spans(pattern, source, tuple(terms)):
                word = " ".join(source[start:end].split())
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


def render_output(text: str, terms: Iterable[str] = ()) -> tuple[str, SanitizedHTML, int]:
    """(masked text, sanitized HTML, mask hits) for one model output."""
    masked = mask_identity(text or "", terms)
    return masked.text, render_markdown(masked.text), masked.hits
