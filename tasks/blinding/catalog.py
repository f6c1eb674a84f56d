"""Model and vendor names from a maintained dataset, with aliases derived by rule.

The `genai-prices` package (pinned in pyproject.toml, upgraded like any dependency) lists
LLM providers and a few thousand model ids ("anthropic/claude-sonnet-4-5-20250929",
"@cf/meta/llama-3.1-8b-instruct", "amazon.nova-pro-v1:0"). From each id we take:

- its family: the first word of the id's last part, less routing prefixes, tags and dates
  ("claude", "llama", "nova"), with its trailing version dropped ("qwen3" is "qwen");
- its organisation: the part before the "/" ("meta-llama", "deepseek-ai", "ibm-granite");
- its qualifiers: the words after the family ("sonnet", "maverick", "scout", "flash"), which
  are masked together with a family name written before them, never alone.

A derived name that is also an ordinary word or a name in a major language (by its word
frequency, the `wordfreq` package) is ambiguous: masked only in a model's context, held
otherwise (tasks/blinding/masking.py). A very common word ("command", "embed") counts only with a
version after it. The index is built once per process.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from tasks.blinding import terms as curated

# Word frequency (Zipf scale: 3 is once per million words) from which a word is ordinary.
ORDINARY_ZIPF = 2.5
# ... and up to which a derived name is still worth holding an output for ("Trinity",
# "Laguna"); above it ("Text", "Step") it is an ordinary word and never a name on its own.
HOLD_ZIPF = 4.0
# Below this a derived name is no word in these languages, and is masked wherever it stands.
CERTAIN_ZIPF = 1.5
COMMON_ZIPF = 4.0
_LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "nl")
# Parts of a provider's routing prefix or id that name no model.
_ROUTING = frozenset(
    """accounts models model fireworks global us eu apac jp au ca cf hf ai org labs lab team
    inc research community free batch beta online latest preview""".split()
)
_SPLIT = re.compile(r"[-_.\s:]+")
_DATE = re.compile(r"^(?:\d{4}|\d{6}|\d{8})$")


@lru_cache(maxsize=65536)
def zipf(word: str, wordlist: str = "small") -> float:
    """How common `word` is in the major Latin-script languages (Zipf scale, 0 if unknown).
    The "small" lists (words from Zipf 3 on, ~25 MB and 0.2 s to load) answer at run time;
    the catalog's build, kept in a file, reads the "best" ones (down to rare words, ~250 MB)."""
    from wordfreq import zipf_frequency

    return max(zipf_frequency(word, lang, wordlist=wordlist) for lang in _LANGUAGES)


@lru_cache(maxsize=4096)
def english_zipf(word: str) -> float:
    from wordfreq import zipf_frequency

    return zipf_frequency(word, "en", wordlist="small")


@dataclass(frozen=True)
class Catalog:
    # masked wherever they are written
    certain: tuple[str, ...]
    # masked with a version after them, held when written as a name elsewhere
    ambiguous: tuple[str, ...]
    # words that continue a family name ("sonnet", "maverick", "flash")
    qualifiers: tuple[str, ...]


# Parts of an organisation's handle that name nobody ("deepseek-ai", "zai-org", "aion-labs").
_ORG_SUFFIXES = frozenset("ai org labs lab lm ml agi research project co inc il lt net".split())


def _id_parts(model_id: str) -> tuple[str, str]:
    """(organisation, name) of a model id, routing prefixes and tags dropped."""
    model_id = model_id.split(":")[0] if not model_id.startswith("@") else model_id
    parts = [
        p.lstrip("~") for p in model_id.strip("@").split("/") if p and p.casefold() not in _ROUTING
    ]
    org = parts[-2] if len(parts) >= 2 else ""
    name = parts[-1] if parts else ""
    # Bedrock's "global.anthropic.claude-..." and "amazon.nova-pro-v1"
    dotted = re.match(r"^(?:(?:global|us|eu|apac|jp|au)\.)?([a-z][a-z0-9-]*)\.([a-z].*)$", name)
    if dotted and not re.search(r"\d\.\d", dotted.group(1)):
        org, name = dotted.group(1), dotted.group(2)
    return org, name


def _family_and_rest(name: str) -> tuple[str, list[str]]:
    words = [w for w in _SPLIT.split(name.casefold()) if w]
    if not words:
        return "", []
    head = re.match(r"^[a-z]+", words[0])
    family = head.group(0) if head else ""
    rest = [w for w in words[1:] if w.isalpha() and not _DATE.match(w)]
    return family, rest


def _distinctive(name: str) -> str:
    """An organisation's handle less its generic parts ("deepseek-ai" is "deepseek")."""
    parts = [p for p in re.split(r"[-_\s]+", name.casefold()) if p]
    kept = [p for p in parts if p not in _ORG_SUFFIXES and not p.isdigit()]
    return "-".join(kept)


def _classify(name: str, known: dict[str, str], out: dict[str, set]) -> None:
    key = _distinctive(name)
    letters = re.sub(r"[^a-z0-9]", "", key)
    if len(letters) < 4 or letters in curated.COMMON_WORDS or key in _ROUTING:
        return
    if letters in known:
        return  # a curated name: tasks/blinding/masking.py's own patterns find it
    common = [zipf(w, "best") for w in key.split("-")]
    if max(common) < CERTAIN_ZIPF:
        out["certain"].add(key)  # "nemotron", "deepseek", "nousresearch", "zai"
    elif len(common) == 1 and common[0] < HOLD_ZIPF:
        out["ambiguous"].add(key)  # "trinity", "laguna", "dobby"
    # else an ordinary word ("text", "step", "all-hands"): never a name on its own


def _build() -> Catalog:
    from genai_prices.data import providers

    ambiguous = {n.casefold() for n in (*curated.AMBIGUOUS, *curated.FAMILIES_WITH_VERSION)}
    known = {re.sub(r"[^a-z0-9]", "", n.casefold()): "certain" for n in curated.NAMES}
    known.update({re.sub(r"[^a-z0-9]", "", n): "ambiguous" for n in ambiguous})
    out: dict[str, set] = {"certain": set(), "ambiguous": set()}
    qualifiers: set[str] = set()
    for provider in providers:
        for model in provider.models:
            org, name = _id_parts(model.id)
            family, rest = _family_and_rest(name)
            for who in filter(None, (family, org)):
                _classify(who, known, out)
            qualifiers.update(w for w in rest[:3] if 2 <= len(w) <= 12 and zipf(w, "best") < 5.5)
    names = out["certain"] | out["ambiguous"] | set(known)
    qualifiers = {q for q in qualifiers | {q.casefold() for q in curated.QUALIFIERS}} - names
    return Catalog(
        certain=tuple(sorted(out["certain"])),
        ambiguous=tuple(sorted(out["ambiguous"] - out["certain"])),
        qualifiers=tuple(sorted(qualifiers)),
    )


def cache_file() -> Path:
    """Where the built catalog is kept between processes: named by the data's and the
    rules' versions, so an upgrade of either builds it anew."""
    from importlib.metadata import version

    rules = hashlib.sha256()
    for module in (curated, sys.modules[__name__]):
        rules.update(Path(module.__file__).read_bytes())
    key = f"{version('genai-prices')}-{version('wordfreq')}-{rules.hexdigest()[:12]}"
    folder = Path(os.environ.get("EVALSITE_CACHE_DIR") or tempfile.gettempdir())
    return folder / f"evalsite-identity-catalog-{key}.json"


@lru_cache(maxsize=1)
def catalog() -> Catalog:
    """The derived names, built once (a few seconds: the word frequencies) and kept in a
    file for the next process."""
    path = cache_file()
    try:
        return Catalog(**{k: tuple(v) for k, v in json.loads(path.read_text()).items()})
    except (OSError, ValueError, TypeError):
        pass  # not built yet (or unreadable): build it
    built = _build()
    temp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        temp.write_text(json.dumps(asdict(built)))
        temp.replace(path)
    except OSError:
        pass  # a read-only temp folder costs the next process the build, nothing else
    return built
