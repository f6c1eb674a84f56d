"""Finding a model's identity in a text, and masking exactly what was found.

The words are looked for in the text's view (tasks/blinding/skeleton.py: decoded, look-alikes folded,
invisible characters gone), where the separators between a long name's letters are optional
("Open AI", "zz_secret_model_9", "C l a u d e", "[Cl](x)[aude](y)"), and a name must start
and end at a word's edge (camelCase and snake_case edges included), so "geminate" and
"Claudette" stay. What matched is replaced in the original text, and only that: the markup
characters inside a match (emphasis, brackets, table pipes, line breaks) are kept so the
Markdown around it keeps its structure, and nothing outside a match changes.

detect() gives two lists: what to mask (names that count wherever they stand, names that
are also words when their context makes them a model's, self-descriptions, chat-template
tokens and provider ids) and what to hold (a name that is also a word or a person's, written
as a name where nothing says it is a model's: "Dear Claude, ..."): held, never changed. The
built-in names are the curated lists (tasks/blinding/terms.py) and those derived from the
maintained dataset (tasks/blinding/catalog.py); one Aho-Corasick pass over a text's letters
picks the few whose patterns run.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from ahocorasick_rs import AhoCorasick

from tasks.blinding import self_description
from tasks.blinding import terms as data
from tasks.blinding.catalog import COMMON_ZIPF, ORDINARY_ZIPF, catalog, english_zipf, zipf
from tasks.blinding.languages import LANGUAGES
from tasks.blinding.patterns import ID_REST, QUALIFIER_SEP, START, alternation
from tasks.blinding.skeleton import LINK_DESTINATION, View, build_view, read_as, skeleton


@dataclass(frozen=True)
class Finding:
    """What was found, where (offsets in the original text) and why: for admins only."""

    start: int
    end: int
    text: str
    reason: str


@lru_cache(maxsize=1)
def _qualifier() -> str:
    """What may follow a family name as part of one model's name: a version, a size, a date,
    a tier ("3.5", "7B", "17B-16E", "@20250805", "K2", "8x7b", "Maverick", "Sonnet")."""
    words = {w.casefold() for w in (*data.QUALIFIERS, *catalog().qualifiers)}
    words = "|".join(sorted((re.escape(w) for w in words), key=len, reverse=True))
    version = r"(?:v?\d+(?:x\d+)?[a-z]{0,2}|[a-z]{1,2}\d+[a-z]{0,2}|\+|" + words + ")"
    return rf"(?:{QUALIFIER_SEP}{version}(?![A-Za-z0-9]))"


_ALNUM = re.compile(r"[^\W_]+")


# Why a span is masked or held: for admins only.
POSSIBLE_NAME = "possible model name"
POSSIBLE_CONTENDER = "possible contender name"
CONTENDER_REASON = "contender name, model id or redaction word"
TEMPLATE_TOKEN = "chat-template token or provider id"


def _ambiguous_words() -> set[str]:
    return {a.casefold() for a in data.AMBIGUOUS}


# The built-in names by how they are matched: families (with their qualifiers), names (with
# theirs), families that count only with a version, Claude's tiers, the short model names,
# and the ambiguous names (matched in a model's context only).
_KINDS = ("family", "data", "name", "strict", "versioned", "tier", "short", "ambiguous", "data?")
# Kinds whose names are matched as written (tasks/blinding/patterns.py term_pattern's `strict`).
_STRICT_KINDS = frozenset({"data", "strict", "data?"})
_AMBIGUOUS_KINDS = frozenset({"ambiguous", "data?"})


@lru_cache(maxsize=1)
def builtin_terms() -> dict[str, tuple[str, ...]]:
    """The built-in names of each kind: the curated lists (tasks/blinding/terms.py) and the
    names derived from the maintained dataset (tasks/blinding/catalog.py), these matched as
    written."""
    cat = catalog()
    ambiguous = _ambiguous_words()
    return {
        "family": tuple(f for f in data.FAMILIES if f.casefold() not in ambiguous),
        "data": cat.certain,
        "name": tuple(
            n for n in (*data.NAMES, *data.HOSTS_AND_KEYS) if n.casefold() not in ambiguous
        ),
        "strict": data.NAMES_AS_WRITTEN,
        "versioned": data.FAMILIES_WITH_VERSION,
        "tier": data.TIERS,
        "short": data.SHORT_MODELS,
        "ambiguous": data.AMBIGUOUS,
        "data?": tuple(n for n in cat.ambiguous if n.casefold() not in ambiguous),
    }


@lru_cache(maxsize=1)
def _name_index() -> tuple[AhoCorasick, list[tuple[str, str]]]:
    """One Aho-Corasick automaton over the letters every built-in name's match must contain
    (tasks/masking.triggers), and for each trigger the (kind, name) it stands for: one pass
    over a text's letters says which names' patterns can match, and only those run."""
    owners: dict[str, list[tuple[str, str]]] = {}
    for kind, names in builtin_terms().items():
        for name in names:
            for trigger in triggers((name,)):
                owners.setdefault(trigger, []).append((kind, name))
    keys = sorted(owners)
    return AhoCorasick(keys), [owners[k] for k in keys]


def names_in(letters: str) -> dict[str, frozenset[str]]:
    """The built-in names whose letters occur in `letters`, by kind."""
    automaton, owners = _name_index()
    found: dict[str, set[str]] = {}
    for index, _, _ in automaton.find_matches_as_indexes(letters, overlapping=True):
        for kind, name in owners[index]:
            found.setdefault(kind, set()).add(name)
    return {kind: frozenset(names) for kind, names in found.items()}


@lru_cache(maxsize=2048)
def kind_pattern(kind: str, names: frozenset[str]) -> re.Pattern:
    """The pattern for these names of one kind (cached per set of names: a text's names
    repeat, and a pattern of a few names runs in microseconds where one of all would take a
    hundred)."""
    q = _qualifier()
    alt = alternation(sorted(names, key=str.casefold), strict=kind in _STRICT_KINDS)
    if kind in ("family", "data", "name", "strict"):
        source = rf"(?:{alt})(?:{q}){{0,8}}{ID_REST}"
    elif kind == "versioned":
        source = rf"(?:{alt})(?={QUALIFIER_SEP}(?:v?\d|[a-z]\d))(?:{q}){{1,8}}{ID_REST}"
    elif kind == "tier":
        tiers = "|".join(sorted(names))
        source = rf"{START}(?:{tiers}){QUALIFIER_SEP}[1-9](?:[.\-]\d)?(?![\d.])"
    elif kind == "short":
        short, short_q = "|".join(sorted(names)), "|".join(data.SHORT_QUALIFIERS)
        source = rf"(?<![\w.\-])(?-i:{short})(?:[-\s](?:{short_q}))?(?![\w]|\.\d)"
    else:
        source = rf"(?P<name>{alt})(?P<q>(?:{q}){{0,8}}{ID_REST})"
    return re.compile(source, re.IGNORECASE)


def _reason(kind: str) -> str:
    return "model or vendor name" if kind in ("name", "strict") else "model name"


# Marks a campaign term that counts only in a model's context and holds nothing elsewhere: a
# word cut from a contender's name ("northwind" from "northwind-large" must not hold every
# answer signed "Northwind Support").
CONTEXT_ONLY = "~"


def _split_campaign_terms(
    terms: tuple[str, ...],
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(certain, ambiguous, context-only): a one-word term that is an ordinary word or a name
    in a major language ("orchid", "brent") counts only in a model's context, held elsewhere;
    one marked CONTEXT_ONLY counts only there too, and holds nothing."""
    certain, ambiguous, quiet = [], [], []
    for term in terms:
        word = term.strip()
        if word.startswith(CONTEXT_ONLY):
            quiet.append(word.lstrip(CONTEXT_ONLY))
        elif re.fullmatch(r"[^\W\d_]+", word) and zipf(word.casefold()) >= ORDINARY_ZIPF:
            ambiguous.append(word)
        else:
            certain.append(word)
    return tuple(certain), tuple(ambiguous), tuple(quiet)


@lru_cache(maxsize=256)
def campaign_pattern(terms: tuple[str, ...]) -> re.Pattern | None:
    certain = _split_campaign_terms(terms)[0]
    pattern = alternation(certain)
    return re.compile(pattern, re.IGNORECASE) if pattern else None


@lru_cache(maxsize=256)
def campaign_ambiguous_pattern(terms: tuple[str, ...], quiet: bool = False) -> re.Pattern | None:
    """The campaign's words that count in a model's context only: the ordinary ones (held
    elsewhere) or, `quiet`, those cut from a name (nothing elsewhere)."""
    words = _split_campaign_terms(terms)[2 if quiet else 1]
    if not words:
        return None
    return re.compile(
        rf"(?P<name>{alternation(words)})(?P<q>(?:{_qualifier()}){{0,8}}{ID_REST})", re.IGNORECASE
    )


# Chat-template tokens and provider ids: they name a model family to anyone who has seen
# them, and no ordinary text writes them.
TEMPLATE_TOKENS = re.compile(
    r"<\|[A-Za-z_\u2581 ]{2,40}\|>|\[/?INST\]|<</?SYS>>|<(?:start|end)_of_turn>|</?think>"
    r"|\[/?(?:TOOL_CALLS|AVAILABLE_TOOLS|TOOL_RESULTS|SYSTEM_PROMPT)\]"
    r"|<\|?(?:endoftext|im_start|im_end|eot_id|begin_of_text)\|?>"
    r"|(?<![\w-])(?:chatcmpl-[A-Za-z0-9]{8,}|(?:srv)?toolu_[A-Za-z0-9]{8,}|msg_01[A-Za-z0-9]{10,}"
    r"|fp_[0-9a-f]{6,}|call_[A-Za-z0-9]{20,}|resp_[0-9a-f]{20,}|gen-\d{10}-[A-Za-z0-9]{10,})(?!\w)"
)
_TEMPLATE_HINTS = ("<", "[", "chatcmpl-", "toolu_", "msg_01", "fp_", "call_", "resp_", "gen-")


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


@lru_cache(maxsize=256)
def campaign_triggers(terms: tuple[str, ...]) -> frozenset[str]:
    return triggers(terms)


def find(text: str, terms: tuple[str, ...]) -> list[Finding]:
    """Every identity in `text` to mask, as spans of the original, sorted and merged."""
    return detect(text, terms)[0]


def detect(text: str, terms: tuple[str, ...]) -> tuple[list[Finding], list[Finding]]:
    """(what to mask, what to hold for an admin) in `text`, as spans of the original: the
    masks sorted and merged; the holds are the ambiguous names found outside a model's
    context, left as written."""
    view = build_view(text, skip_links=True)
    folded = view.text.casefold()
    letters = "".join(_ALNUM.findall(folded))
    found_names = names_in(letters)
    passes = [
        (_reason(kind), kind_pattern(kind, names))
        for kind, names in found_names.items()
        if kind not in _AMBIGUOUS_KINDS
    ]
    campaign_hit = bool(terms) and any(t in letters for t in campaign_triggers(terms))
    if campaign_hit and (pattern := campaign_pattern(terms)):
        passes.append((CONTENDER_REASON, pattern))
    spans: list[tuple[int, int, str]] = []
    for reason, pattern in passes:
        spans += [(*m.span(), reason) for m in pattern.finditer(view.text) if m.end() > m.start()]
    if any(h in view.text for h in _TEMPLATE_HINTS):
        spans += [(*m.span(), TEMPLATE_TOKEN) for m in TEMPLATE_TOKENS.finditer(view.text)]
    if self_description.may_occur(folded):
        spans += [(s, e, "self-description") for s, e in self_description.spans(view.text)]
    spans += [
        (s, e, "self-description") for s, e in self_description.language_spans(view.text, folded)
    ]
    maybes = [
        (kind_pattern(kind, found_names[kind]), POSSIBLE_NAME)
        for kind in _AMBIGUOUS_KINDS
        if kind in found_names
    ]
    if campaign_hit and (pattern := campaign_ambiguous_pattern(terms)):
        maybes.append((pattern, POSSIBLE_CONTENDER))
    if campaign_hit and (pattern := campaign_ambiguous_pattern(terms, quiet=True)):
        maybes.append((pattern, None))  # in a model's context only; nothing held elsewhere
    held: list[tuple[int, int, str]] = []
    for pattern, why in maybes:
        for m in pattern.finditer(view.text):
            start, end = view.original_span(*m.span("name"))
            contender = why != POSSIBLE_NAME
            if text[start:end] != m.group("name") or _in_model_context(
                view.text, m, spans, contender
            ):
                reason = "model name" if why == POSSIBLE_NAME else CONTENDER_REASON
                spans.append((*m.span(), reason))
            elif why and _name_like(view.text, m):
                held.append((*m.span("name"), why))
    spans += list(_vendors_beside(view.text, spans))
    found = _merged(text, view, spans)
    holds = _merged(text, view, held)
    if "](" in text:
        # The link destinations the view left out, each on its own.
        for link in LINK_DESTINATION.finditer(text):
            offset = link.start(1)
            more, more_held = detect(link.group(1), terms)
            found += [Finding(f.start + offset, f.end + offset, f.text, f.reason) for f in more]
            holds += [
                Finding(f.start + offset, f.end + offset, f.text, f.reason) for f in more_held
            ]
        found = _merged(text, View(text, ()), [(f.start, f.end, f.reason) for f in found])
    holds = [h for h in holds if not any(f.start <= h.start and h.end <= f.end for f in found)]
    return found, holds


_SENTENCE_START = re.compile(r"(?:^|[.!?:;。！？\n]|^\W*[-*+>#\d.)]+)\W*$")


@lru_cache(maxsize=1)
def _self_naming() -> re.Pattern:
    """The speaker giving a name as its own, in the table's languages: "I'm X", "soy X",
    "ich bin X", "我是X", "私はX"."""
    forms = {
        "I am",
        "I'm",
        "my name is",
        "call me",
        "this is",
        "I'm called",
        "我是",
        "私は",
        "僕は",
    }
    forms |= {lang.me[0] for lang in LANGUAGES}
    forms |= {"eu sou", "je suis", "io sono", "ich bin", "yo soy", "я —", "я -"}
    alt = "|".join(re.escape(read_as(f)) for f in sorted(forms, key=len, reverse=True))
    articles = "an?|the|un|una|une|uno|ein|eine|o|a|el|la|le|il|lo|der|die|das|de|het|um|uma"
    return re.compile(rf"(?:{alt})\s*(?:,\s*)?(?:(?:{articles})\s+)?[*_~`\[]*$", re.I)


_SIZE = re.compile(r"\d+(?:\.\d+)?[bmk]\b|\d+x\d+b\b|\ba\d+b\b", re.IGNORECASE)


@lru_cache(maxsize=1)
def _curated_qualifiers() -> frozenset[str]:
    return frozenset(q.casefold() for q in (*data.QUALIFIERS, *data.TIERS))


def _tier_after(name: str, qualifiers: str) -> bool:
    """Whether a capitalized name is followed by a model's tier: a curated one ("Pro",
    "Flash", "Sonnet") or a rare word from the dataset ("Maverick"), not a common one ("a
    minimax search", "Phi Beta Kappa")."""
    if not name[:1].isupper():
        return False
    words = [w.casefold() for w in re.findall(r"[^\W\d_]+", qualifiers)]
    return any(w in _curated_qualifiers() or english_zipf(w) < 3.5 for w in words)


def _id_form(name: str, qualifiers: str) -> bool:
    """Whether a name is written as a model id: lowercase, its qualifiers joined to it with no
    space ("gemini-pro", "muse-spark-1.1"; not "Falcon 9", not "command line")."""
    return (
        name.islower()
        and qualifiers[:1] in ("-", "_", ".", ":", "/", "@")
        and not any(c.isspace() for c in qualifiers)
    )


def _kind(name: str, contender: bool) -> str:
    """ "strong": a model family first ("Llama 3" is the model); "weak": a product or word
    first ("Nova 5", "Titan 3" are phones and blenders); "derived": a name from the dataset;
    "contender": one of the campaign's own words."""
    key = name.casefold()
    if contender:
        return "contender"
    if key in {n.casefold() for n in data.VERSIONED_AMBIGUOUS}:
        return "strong"
    return "weak" if key in _ambiguous_words() else "derived"


def _in_model_context(view: str, m: re.Match, spans, contender: bool) -> bool:
    """Whether an ambiguous name stands where it names a model: a size after it, a version
    (after a model family's name), the speaker naming itself, an AI word or another model or
    vendor name in its sentence, a vendor beside it."""
    name, qualifiers = m.group("name"), m.group("q")
    kind = _kind(name, contender)
    versioned = any(c.isdigit() for c in qualifiers) or "+" in qualifiers
    if _SIZE.search(qualifiers) or _disguised_or_attached(view, m, kind):
        return True
    if kind in ("strong", "contender") and (versioned or _tier_after(name, qualifiers)):
        return True  # "Claude 3", "Llama Maverick"
    if _id_form(name, qualifiers) and (kind in ("strong", "contender") or versioned):
        return True  # "gemini-pro", "muse-spark-1.1", "falcon-9"
    before = view[max(0, m.start() - 30) : m.start()]
    if name[:1].isupper() and (
        _self_naming().search(before)
        or re.match(r"\s*[,:]?\s*(?:here|speaking)\b", view[m.end() : m.end() + 14], re.I)
    ):
        return True  # "I'm Claude", "Kimi here" (not "this is recursive")
    if kind == "derived":
        return versioned and self_description.ai_words_near(view, m.start(), m.end())
    before_vendor, after_vendor = _vendor_patterns()
    if before_vendor.search(view, max(0, m.start() - 40), m.start()) or after_vendor.match(
        view, m.end()
    ):
        return True
    if name.casefold() != "glm" and re.match(r"(?:['’]s)?\s+(?:AI\s+)?models?\b", view[m.end() :]):
        return True
    sentence = self_description.sentence_around(view, m.start(), m.end())
    others = (view[s:e] for s, e, _ in spans if abs(s - m.start()) < 150 and (s, e) != m.span())
    if any(o in sentence for o in others):
        return True
    return self_description.ai_words_near(view, m.start(), m.end())


# Spellings that are a model's, not a person's or a word's: "LLaMA", "PaLM", "MiniMax".
_MODEL_CASING = re.compile(r"(?-i:[a-z][A-Z]|[A-Z]{2}[a-z]+[A-Z])")
_ATTRIBUTION = re.compile(
    r"(?:generated|written|answered|produced|drafted|composed|answer|response|reply|output|text)"
    r"\s+(?:by|with|from|using|via)\s+[*_~`]*$",
    re.IGNORECASE,
)


def _disguised_or_attached(view: str, m: re.Match, kind: str) -> bool:
    """A name nobody would write so unless it named a model: disguised (markup, spaces or
    other characters between its letters), spelt as the model is ("LLaMA"), and for a model
    family's or a contender's name, part of an identifier ("ClaudeClient", "gemini_client"),
    marked up as code or emphasis, or given as an answer's author ("generated with Gemma")."""
    name = m.group("name")
    letters = sum(c.isalpha() for c in name)
    if (not name.isalpha() and letters >= 4) or _MODEL_CASING.search(name):
        return True
    if kind not in ("strong", "contender"):
        return False  # "recursive_guard", "`command`": words, however written
    start, end = m.span("name")
    if (start and (view[start - 1].isalnum() or view[start - 1] in "_`*~")) or (
        end < len(view) and (view[end].isalnum() or view[end] in "_`*~")
    ):
        return True
    return bool(_ATTRIBUTION.search(view[max(0, start - 40) : start]))


def _name_like(view: str, m: re.Match) -> bool:
    """Whether a name left as written is written as a name (capitalized, not only because a
    sentence starts with it, unless it is rare as a word), so worth an admin's look."""
    name = m.group("name")
    if not any(c.isupper() for c in name):
        return False
    if name.isupper() and name.casefold() not in _ambiguous_words():
        return False  # "RECURSIVE" in a derived name's place is a word in capitals
    if _SENTENCE_START.search(view[max(0, m.start() - 12) : m.start()]) or m.start() == 0:
        # "Command the ...", "Granite is ...": a very common English word starts a sentence
        return english_zipf(re.sub(r"\W", "", name.casefold())) < COMMON_ZIPF
    return True


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


def merged_findings(text: str, findings) -> list[Finding]:
    """Findings of one text (spans of the original) sorted and merged into one list."""
    return _merged(text, View(text, ()), [(f.start, f.end, f.reason) for f in findings])


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
        if f.reason == TEMPLATE_TOKEN:
            # balanced on its own ("<|eot_id|>", "[INST]"): its brackets would tell its family
            out.append(token)
            last = f.end
            continue
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
