"""Self-descriptions: an assistant naming its maker ("As an AI developed by X", "I was
trained by X", "I'm a Google model", "我是由X训练的", "Xによって開発された", "X에서 개발한",
"разработан X").

Only the maker (and a tier name a speaker gives as its own, "I'm Sonnet") is masked, never
the words around it: "As an AI developed by [redacted] I cannot see your account" keeps its
meaning. A maker is a known vendor, or any capitalized name, but only near the assistant's
words about itself, so "the bridge was built by Contoso" stays. These run on the text's
normalized view (tasks/blinding/skeleton.py) like the names.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ahocorasick_rs import AhoCorasick

from tasks.blinding import terms as data
from tasks.blinding.languages import LANGUAGES, Language
from tasks.blinding.patterns import alternation  # the names' patterns: the same rules for vendors
from tasks.blinding.skeleton import read_as

_VERBS = (
    r"developed|created|made|trained|built|designed|engineered|provided|released|owned"
    r"|powered|fine-?tuned|produced|programmed|brought\s+to\s+you"
)
_NOUNS = r"AI|assistant|(?:language\s+)?model|LLM|chatbot|bot"
ABOUT_ITSELF = re.compile(
    r"\b(?:I(?:['’]m|\s+am|\s+was|['’]ve\s+been|\s+have\s+been)|AI|assistant|language\s+model"
    r"|LLM|chatbot|model)\b",
    re.IGNORECASE,
)
# "I'm Sonnet", "my name is Opus": a tier name as the speaker's own.
SELF_NAME = re.compile(
    r"\b(?:I['’]m|I\s+am|my\s+name\s+is|call\s+me|this\s+is)\s+(?:an?\s+|the\s+)?"
    r"(?P<who>sonnet|opus|haiku)\b",
    re.IGNORECASE,
)
_CJK = (
    # Chinese: "由 X 训练", "X开发的模型"
    r"(?:我(?!们)|本助手|本模型|语言模型|人工智能|助手|AI)[^。！？\n]{0,30}?由\s*"
    r"(?P<zh>[^\s，。、,.!?！？]{1,12}?)\s*(?:公司|团队|集团)?\s*"
    r"(?:开发|训练|研发|打造|创建|构建|推出|设计|发布)"
    r"|(?:我(?!们)|本模型)[^。！？\n]{0,10}?(?P<zh2>{vendors})(?:公司)?(?:开发|训练|研发|推出)的"
    # Japanese: "X によって開発された", "Xが開発した"
    r"|(?:私|わたし|AI|モデル|アシスタント)[^。！？\n]{0,30}?"
    r"(?P<ja>[^\s、。,.!?！？はがのにでを]{1,12}?)\s*(?:によって|により|が)\s*"
    r"(?:開発|訓練|トレーニング|作成|構築)"
    # Korean: "X에서 개발한", "X가 만든"
    r"|(?:저는|나는|AI|모델|어시스턴트)[^.!?\n]{0,30}?"
    r"(?P<ko>[^\s,.!?]{1,15}?)(?:에서|이|가|에\s*의해)\s*(?:개발|훈련|학습|만든|만들)"
    # Russian: "разработан компанией X", "обучен X" (its words as the view reads them: the
    # Cyrillic letters that look Latin are Latin there)
    r"|(?:{ru_verbs})\w*\s+(?:{ru_company}\s+|{ru_in}\s+)?(?P<ru>[^\s,.!?]{2,20})"
)
_RU_VERBS = ("разработ", "обуч", "создан", "сделан")
_NOT_A_MAKER = frozenset(
    {"i", "a", "an", "the", "me", "my", "you", "it", "this", "that", "us", "ai", "ia", "ki", "llm"}
)
_SENTENCE_END = re.compile(r"[.!?\n。！？](?=\s|$)")

# What the patterns need (case-folded): a text without any of it skips them.
_MAKER_WORDS = (
    "develop", "creat", "made", "train", "built", "design", "engineer", "provid", "releas",
    "owned", "power", "tuned", "produc", "programm", "brought", "ai ", "assistant", "model",
    "llm", "chatbot", " bot",
)  # fmt: skip
_OTHER_HINTS = (
    "sonnet", "opus", "haiku", "由", "开发的", "训练的", "によ", "が", "개발", "훈련", "학습",
    "만든", "만들", *(read_as(v).casefold() for v in _RU_VERBS),
)  # fmt: skip


def may_occur(folded: str) -> bool:
    """Whether a case-folded view can hold a self-description at all (a cheap test)."""
    if any(h in folded for h in _OTHER_HINTS):
        return True
    if not any(w in folded for w in _MAKER_WORDS):
        return False
    return any(w in folded for w in ("by", "from", " at")) or any(
        v.casefold() in folded for v in data.VENDORS
    )


@lru_cache(maxsize=1)
def _patterns() -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    vendors = alternation(data.VENDORS)
    suffixes = "|".join(data.VENDOR_SUFFIXES)
    maker = re.compile(
        rf"(?:\b(?:{_VERBS})\s+(?:by|at|from)|\b(?:{_NOUNS})\s+(?:from|by))\s+"
        r"(?:the\s+|a\s+)?(?:(?:team|engineers|researchers|folks|people)\s+(?:at|of)\s+)?"
        rf"(?P<who>(?:{vendors}|(?-i:[A-Z])[\w.\-]*\w)(?:\s+(?:{suffixes})\b)*)",
        re.IGNORECASE,
    )
    # "I'm a Google model", "I am Meta's assistant", "a Google-trained model"
    owned = re.compile(
        rf"\b(?:I['’]m|I\s+am|I\s+was)\s+(?:an?\s+|the\s+)?(?:large\s+)?(?P<who>{vendors})"
        rf"(?:['’]s)?(?:\s+[\w\-]+){{0,2}}?\s+(?:{_NOUNS})\b"
        rf"|(?P<who2>{vendors})[-\s](?:{_VERBS})\s+(?:{_NOUNS})\b",
        re.IGNORECASE,
    )
    cjk = _CJK.replace("{vendors}", vendors).replace("{ru_company}", read_as("компанией"))
    cjk = cjk.replace("{ru_verbs}", "|".join(read_as(v) for v in _RU_VERBS))
    cjk = cjk.replace("{ru_in}", read_as("в"))
    cjk = re.compile(cjk, re.IGNORECASE)
    return maker, owned, cjk


def _about_itself(view: str, start: int, end: int) -> bool:
    """Whether the sentence around view[start:end] has the assistant's words about itself."""
    before = view[max(0, start - 100) : start]
    ends = list(_SENTENCE_END.finditer(before))
    if ends:
        before = before[ends[-1].end() :]
    after = view[end : end + 60]
    stop = _SENTENCE_END.search(after)
    after = after[: stop.start()] if stop else after
    return bool(
        ABOUT_ITSELF.search(before) or ABOUT_ITSELF.match(view, start) or ABOUT_ITSELF.search(after)
    )


def spans(view: str):
    """(start, end) in `view` of each maker or self-given name to mask."""
    maker, owned, cjk = _patterns()
    for match in maker.finditer(view):
        if match.group("who").casefold() not in _NOT_A_MAKER and _about_itself(
            view, match.start(), match.end()
        ):
            yield match.span("who")
    for match in owned.finditer(view):
        yield match.span("who" if match.group("who") else "who2")
    for match in SELF_NAME.finditer(view):
        yield match.span("who")
    if not view.isascii():
        for match in cjk.finditer(view):
            yield match.span(next(g for g in ("zh", "zh2", "ja", "ko", "ru") if match.group(g)))


# Self-descriptions in many languages, from the table in tasks/blinding/languages.py.
_REGEX_SYNTAX = re.compile(r"\\[A-Za-z]|\[[^\]]*\]|\{X\}|\(\?[:!=<-]*i?:?")


def _words(fragment: str) -> list[str]:
    """The literal words of a piece of a template (a CJK word is one or two characters; a
    word of an alphabet, three letters or more)."""
    words = re.split(r"[^\w'’\"·-]+|_", _REGEX_SYNTAX.sub(" ", fragment))
    words = [w.strip("-'’") for w in words]
    return [w for w in words if len(w) >= 3 or (w and not w.isascii())]


def _top_level(template: str) -> tuple[str, list[tuple[str, bool]]]:
    """The template's text outside any group (its escapes and classes blanked), and its
    top-level groups' insides with whether each is required (not followed by ?, * or {0)."""
    outside, groups, depth, start, i = [], [], 0, 0, 0
    while i < len(template):
        c = template[i]
        if c == "\\":
            outside.append(" ") if depth == 0 else None
            i += 2
            continue
        if c == "[" and depth == 0:
            i = template.index("]", i + 1) + 1
            outside.append(" ")
            continue
        if c == "(":
            depth += 1
            if depth == 1:
                start = i + 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                after = template[i + 1 : i + 3]
                groups.append((template[start:i], not after.startswith(("?", "*", "{0"))))
                outside.append(" ")
        elif depth == 0:
            outside.append(c)
        i += 1
    return "".join(outside), groups


def _alternatives(group: str) -> list[str]:
    group = re.sub(r"^\?(?:[:!=<]|-?i:)", "", group)
    parts, depth, last = [], 0, 0
    for i, c in enumerate(group):
        depth += c == "("
        depth -= c == ")"
        if c == "|" and depth == 0:
            parts.append(group[last:i])
            last = i + 1
    return [*parts, group[last:]]


def _hints(template: str) -> tuple[str, ...]:
    """Words one of which every match of the template contains (case-folded, as the view
    reads them): the text is searched for these before the template runs. A required word
    outside any group ("tarafından") if there is one, else one word of each alternative of the
    first required group that has one in each ("developed|created|made"), else every word."""
    outside, groups = _top_level(template.replace("{X}", " "))
    chosen: list[str] = []
    if required := _words(outside):
        chosen = [max(required, key=len)]
    else:
        candidates = []
        for inside, needed in groups:
            options = [_words(_top_level(alt)[0]) for alt in _alternatives(inside)]
            if needed and options and all(options):
                candidates.append([max(words, key=len) for words in options])
        # the group whose shortest word is longest: "开发|训练", not the particles "이|가"
        chosen = max(candidates, key=lambda c: min(map(len, c)), default=_words(template))
    return tuple({read_as(w).casefold() for w in chosen})


def _maker_group(spaced: bool, vendors: str, suffixes: str) -> str:
    if spaced:
        # a known vendor, a capitalized name (Latin, Cyrillic or Greek capitals), or a word of
        # a script without case (Arabic, Hebrew, Devanagari...: "جوجل", "गूगल")
        return (
            rf"(?P<who>(?:{vendors}|(?-i:[A-Z\u0391-\u03a9\u0410-\u042f])[\w.\-]*\w"
            rf"|(?-i:[^\W\d_A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff])\w{{1,19}})"
            rf"(?:\s+(?:{suffixes})\b)*)"
        )
    return rf"(?P<who>{vendors}|[A-Za-z][\w.\-]*\w|[^\s，。、,.!?！？「」]{{1,12}}?)"


def _words_pattern(words) -> re.Pattern:
    """Words as the view reads them: whole words in spaced scripts, anywhere in the others;
    short ones ("AI", "IA", "KI") only as written, so "mi" (Spanish "my") is not "MI"."""
    folded = {read_as(w) for w in words}
    spaced = sorted((w for w in folded if w.isascii()), key=len, reverse=True)
    other = sorted((w for w in folded if not w.isascii()), key=len, reverse=True)

    def one(w: str) -> str:
        # "我们" is "we" (a company speaking of its own system), "我" alone is the speaker
        tail = "(?![们們])" if w == "我" else ""
        return f"(?-i:{re.escape(w)})" if len(w) <= 3 and w.isupper() else re.escape(w) + tail

    alternatives = []
    if spaced:
        alternatives.append(rf"(?<!\w)(?:{'|'.join(one(w) for w in spaced)})(?!\w)")
    if other:
        alternatives.append("|".join(one(w) for w in other))
    return re.compile("|".join(alternatives), re.IGNORECASE)


@lru_cache(maxsize=1)
def language_patterns() -> tuple[tuple[re.Pattern, re.Pattern | None, tuple[str, ...], bool], ...]:
    """(pattern, the sentence words it needs or None when it names the speaker itself,
    hints, some hint is ASCII) for every template."""
    english = next(lang for lang in LANGUAGES if lang.code == "en")
    vendors = alternation(data.VENDORS)
    suffixes = "|".join(data.VENDOR_SUFFIXES)
    out = []
    for language in LANGUAGES:
        maker = _maker_group(language.spaced, vendors, suffixes)
        own: Language = language
        about = _words_pattern({*own.me, *own.ai, *english.ai, "I am", "I'm"})
        for template, itself in language.templates:
            source = read_as(template).replace("{X}", maker)
            hints = _hints(template)
            out.append(
                (
                    re.compile(source, re.IGNORECASE),
                    None if itself else about,
                    hints,
                    any(h.isascii() for h in hints),
                )
            )
    return tuple(out)


def sentence_around(view: str, start: int, end: int) -> str:
    """The sentence of view[start:end] (up to 120 characters each side)."""
    before = view[max(0, start - 120) : start]
    ends = list(_SENTENCE_END.finditer(before))
    if ends:
        before = before[ends[-1].end() :]
    after = view[end : end + 120]
    stop = _SENTENCE_END.search(after)
    return before + " " + view[start:end] + " " + (after[: stop.start()] if stop else after)


@lru_cache(maxsize=1)
def _hint_index() -> tuple[AhoCorasick, list[tuple[int, ...]]]:
    """One Aho-Corasick automaton over every template's hints, and for each hint the templates
    that need it: one pass over a text says which templates can match."""
    owners: dict[str, list[int]] = {}
    for i, (_, _, hints, _) in enumerate(language_patterns()):
        for hint in hints:
            owners.setdefault(hint, []).append(i)
    keys = sorted(owners)
    return AhoCorasick(keys), [tuple(owners[k]) for k in keys]


# How far from one of its hints a template's match may reach (its other words and the maker).
_REACH = 160


def language_spans(view: str, folded: str):
    """(start, end) in `view` of each maker named in a self-description in any language.
    Each template runs only around its hints' places in the text (a long text has the
    common ones somewhere, and a pattern run over all of it would cost seconds a megabyte)."""
    automaton, owners = _hint_index()
    around: dict[int, list[list[int]]] = {}
    for index, start, end in automaton.find_matches_as_indexes(folded, overlapping=True):
        for t in owners[index]:
            windows = around.setdefault(t, [])
            lo, hi = max(0, start - _REACH), end + _REACH
            if windows and lo <= windows[-1][1]:
                windows[-1][1] = max(windows[-1][1], hi)
            else:
                windows.append([lo, hi])
    patterns = language_patterns()
    for i, (_, _, hints, _) in enumerate(patterns):
        if not hints:
            around[i] = [[0, len(view)]]
    found = set()
    for i, windows in sorted(around.items()):
        pattern, about, _, _ = patterns[i]
        for lo, hi in windows:
            for match in pattern.finditer(view, lo, hi):
                who = match.span("who")
                if match.group("who").casefold() in _NOT_A_MAKER or who in found:
                    continue
                if about is None or about.search(sentence_around(view, match.start(), match.end())):
                    found.add(who)
                    yield who


@lru_cache(maxsize=1)
def _ai_words() -> re.Pattern:
    """Every language's words for an AI (not for the speaker), as the view reads them."""
    words = {w for lang in LANGUAGES for w in lang.ai} - {"model", "modell", "modelo", "modèle"}
    words |= {"A.I.", "LLM", "LLMs", "chatbot", "language model", "AI model", "AI assistant",
              "neural network", "generative AI", "large language model", "foundation model"}  # fmt: skip
    return _words_pattern(words)


def ai_words_near(view: str, start: int, end: int) -> bool:
    """Whether the sentence around view[start:end] speaks of an AI, in any of the table's
    languages (a plain "model" does not count: "a GLM model" is statistics)."""
    return bool(_ai_words().search(sentence_around(view, start, end)))
