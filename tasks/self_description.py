"""Self-descriptions: an assistant naming its maker ("As an AI developed by X", "I was
trained by X", "I'm a Google model", "我是由X训练的", "Xによって開発された", "X에서 개발한",
"разработан X").

Only the maker (and a tier name a speaker gives as its own, "I'm Sonnet") is masked, never
the words around it: "As an AI developed by [redacted] I cannot see your account" keeps its
meaning. A maker is a known vendor, or any capitalized name, but only near the assistant's
words about itself, so "the bridge was built by Contoso" stays. These run on the text's
normalized view (tasks/skeleton.py) like the names.
"""

from __future__ import annotations

import re
from functools import lru_cache

from . import identity_terms as data
from .skeleton import read_as

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
_NOT_A_MAKER = frozenset({"i", "a", "an", "the", "me", "my", "you", "it", "this", "that", "us"})
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
    from .masking import alternation  # the names' patterns: the same rules for vendors

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
