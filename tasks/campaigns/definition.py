"""Campaign definitions (JSON or YAML, docs/campaigns.md) -> validated data -> Campaign rows.

Every entry point (the `create_campaign` command, the API, the admin form) goes through
`campaign_definition_validate` and `campaign_create`, so the rules live in one place.
Errors are collected, not raised one at a time: "field: message" strings, all of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

import yaml
from django.db import IntegrityError, transaction

from evalsite.uploads import strict_json, strict_yaml, yaml_problem
from tasks import review_side
from tasks.blinding.campaign_texts import (
    blinding_refusals,
    blinding_terms,
    blinding_warnings,
    category_refusals,
    quoted_identity_words,
)
from tasks.campaigns.definition_reader import DefinitionReader
from tasks.campaigns.gates import read_gates
from tasks.campaigns.policy import read_review_policy
from tasks.campaigns.rosters import ROSTER_KEYS, Roster, roster_users_store, rosters_read
from tasks.campaigns.rubric import rubric_validate
from tasks.campaigns.score_turns import score_turns_read, score_turns_warnings
from tasks.campaigns.thresholds import read_pass_threshold
from tasks.generation.prices import pricing_read, same_prices, table_of
from tasks.generation.sample_seed import DERIVED, FIXED
from tasks.generation.sample_seed import MODES as SEED_MODES
from tasks.generation.services import generation_rows_create
from tasks.models import Campaign, Contender, Mode, Provider, TestSet

SLUG_RE = re.compile(r"^[a-z0-9](?:[a-z0-9_-]{0,98}[a-z0-9])?$")
RESERVED_SLUGS = {"new"}  # /campaigns/new/ is the creation page
ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
CAMPAIGN_KEYS = {
    "slug",
    "name",
    "testset",
    "contenders",
    "samples_per_task",
    "reviewed_samples",
    "overlap",
    "mode",
    "rubric",
    "weights",
    "redact",
    "lease_minutes",
    "pass_threshold",
    "show_reference",
    "show_reasoning",
    "flags_dispute",
    "hold_identity_leaks",
    "instructions",
    *ROSTER_KEYS,
    "score_turns",
    "blinding_probe",
    "gates",
    "sample_seeds",
    "slice_by",
    "review_policy",
}
# The blinding probe's interval: at most one question per this many items reviewed.
PROBE_EVERY_MAX = 1000
INSTRUCTIONS_MAX_CHARS = 20_000
CONTENDER_KEYS = {
    "name",
    "provider",
    "base_url",
    "model",
    "api_key_env",
    "params",
    "system_prompt",
    "price_in_per_mtok",
    "price_out_per_mtok",
    "prices",
    "version_label",
    "max_concurrency",
}


class DefinitionError(Exception):
    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors))
        self.errors = errors


@dataclass
class ValidDefinition:
    campaign: dict
    testset: TestSet
    contenders: list[dict]
    warnings: list[str] = field(default_factory=list)
    # {"reviewers": Roster, "arbiters": Roster}; stored by campaign_create (tasks/campaigns/rosters.py)
    rosters: dict[str, Roster] = field(default_factory=dict)


def campaign_definition_load(text: str, *, filename: str = "") -> dict:
    """Parse JSON (strict: no duplicate keys, no NaN) or YAML into a dict."""
    text = text.lstrip("\ufeff")
    is_yaml = filename.lower().endswith((".yaml", ".yml"))
    if not is_yaml:
        try:
            data = strict_json(text)
        except ValueError as exc:
            if filename.lower().endswith(".json") or text.lstrip().startswith("{"):
                raise DefinitionError([f"invalid JSON: {exc}"]) from None
            is_yaml = True
    if is_yaml:
        try:
            data = strict_yaml(text)
        except yaml.YAMLError as exc:
            raise DefinitionError([f"invalid YAML: {yaml_problem(exc)}"]) from None
    if not isinstance(data, dict):
        raise DefinitionError(["the definition must be an object (a mapping) at the top level"])
    return data


# Bounds that keep every number storable and every figure computable: prices fit
# Contender's DecimalField(12, 6), and the statistics work in floats.
MAX_PRICE = 999_999
MAX_WEIGHT = 1000
# A sane bound of what a reviewer's page carries: each word is masked on every review page.
MAX_REDACT_WORDS = 1000


def _decimal(value) -> Decimal:
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return Decimal(0)


def contender_validate(raw, where: str, errors: list[str]) -> dict | None:
    """Validate one contender definition; returns the field values for a Contender row."""
    r = DefinitionReader(errors)
    if isinstance(raw, str):
        raw = {"name": raw}
    if not isinstance(raw, dict):
        errors.append(f"{where}: must be an object or a contender name")
        return None
    r.unknown(raw, CONTENDER_KEYS, where + ".")
    w = where + "."
    name = r.string(raw, "name", w, required=True, max_len=100)
    out = {"name": name}
    if set(raw) == {"name"}:
        return out  # a reference to an existing contender
    provider = raw.get("provider")
    if provider not in Provider.values:
        errors.append(f"{w}provider: one of {', '.join(Provider.values)}")
    out["provider"] = provider
    if provider != Provider.IMPORTED:
        out["model"] = r.string(
            raw, "model", w, required=provider in (Provider.OPENAI, Provider.ANTHROPIC)
        )
        base_url = r.string(raw, "base_url", w, max_len=200)
        if base_url and not re.match(r"^https?://[^\s/$.?#][^\s]*$", base_url):
            errors.append(f"{w}base_url: must be an http(s) URL")
        out["base_url"] = base_url
        env = r.string(raw, "api_key_env", w, max_len=100)
        if env and not ENV_RE.match(env):
            errors.append(
                f"{w}api_key_env: the NAME of an environment variable (never the key itself)"
            )
        out["api_key_env"] = env
    else:
        out.update({"model": r.string(raw, "model", w), "base_url": "", "api_key_env": ""})
    params = raw.get("params") or {}
    if not isinstance(params, dict):
        errors.append(f"{w}params: must be an object")
        params = {}
    else:
        pw = w + "params."
        r.number(params, "temperature", pw, lo=0, hi=2)
        r.number(params, "top_p", pw, lo=0, hi=1)
        r.integer(params, "max_tokens", pw, lo=1)
        r.integer(params, "seed", pw)
    out["params"] = params
    out["system_prompt"] = r.string(raw, "system_prompt", w, max_len=20000)
    out["version_label"] = r.string(raw, "version_label", w, max_len=100)
    # The definition's own prices, or the price data's for its provider and model.
    table = pricing_read(raw, w, r)
    out["pricing"] = table
    out["price_in_per_mtok"] = _decimal(table.get("input") or 0)
    out["price_out_per_mtok"] = _decimal(table.get("output") or 0)
    out["max_concurrency"] = r.integer(raw, "max_concurrency", w, default=4, lo=1, hi=1000)
    return out


def contender_conflicts(existing: Contender, spec: dict) -> list[str]:
    """The fields of `spec` that differ from the existing contender of that name."""
    conflicts = []
    for key, value in spec.items():
        if key == "name":
            continue
        current = getattr(existing, key)
        from_data = spec.get("pricing", {}).get("source", "definition") != "definition"
        if from_data and key in ("price_in_per_mtok", "price_out_per_mtok"):
            continue
        if key == "pricing":
            # Prices read from the price data stay as they were when the contender was made
            # (a newer data version does not make it another configuration).
            if not from_data and not same_prices(table_of(existing), value):
                conflicts.append(key)
            continue
        if isinstance(current, Decimal):
            same = current == Decimal(value)
        else:
            same = current == value
        if not same:
            conflicts.append(key)
    return conflicts


def campaign_definition_validate(data: dict) -> ValidDefinition:
    """Check a whole definition, field by field; every problem is collected, then raised at
    once as a DefinitionError. Notes (nothing wrong, worth knowing) go to the warnings."""
    errors: list[str] = []
    warnings: list[str] = []
    r = DefinitionReader(errors)
    r.unknown(data, CAMPAIGN_KEYS, "")
    slug = _slug_read(data, r)
    name = r.string(data, "name", "", max_len=200) or slug
    testset = _testset_read(data.get("testset"), errors)
    contenders = _contenders_read(data.get("contenders"), errors, warnings)
    samples = r.integer(data, "samples_per_task", "", default=1, lo=1, hi=100)
    reviewed = r.integer(data, "reviewed_samples", "", default=1, lo=1)
    if isinstance(samples, int) and isinstance(reviewed, int) and reviewed > samples:
        errors.append(f"reviewed_samples: cannot exceed samples_per_task ({samples})")
    overlap = r.integer(data, "overlap", "", default=2, lo=1, hi=20)
    mode, rubric = _mode_and_rubric_read(data, errors, warnings)
    weights = _weights_read(data, r, testset, warnings)
    read_gates(data, weights, errors)  # into weights["gates"], as the per-tier thresholds
    _sample_seeds_read(data, weights, errors)
    _slice_by_read(data, weights, errors)
    # into weights["review_policy"]; its judge calibrated for this mode and rubric
    read_review_policy(data, weights, testset, errors, asked=(mode, rubric))
    redact = _redact_read(data, errors)
    instructions = r.string(data, "instructions", "", max_len=INSTRUCTIONS_MAX_CHARS).strip()
    shown = ShownTexts(
        slug=slug, name=name, rubric=rubric, instructions=instructions, redact=redact
    )
    _blinding_check(shown, contenders=contenders, testset=testset, errors=errors)
    rosters = rosters_read(data, errors, warnings)
    score_turns = score_turns_read(data, rubric=rubric, mode=mode, errors=errors)
    warnings += score_turns_warnings(score_turns, testset)
    campaign = {
        "slug": slug,
        "name": name,
        "instructions": instructions,
        "samples_per_task": samples,
        "reviewed_samples": reviewed,
        "overlap": overlap,
        "mode": mode,
        "rubric": rubric,
        "weights": weights,
        "redact": [w.strip() for w in redact],
        **_settings_read(data, r, weights, errors),
        "score_turns": score_turns,
    }
    if errors:
        raise DefinitionError(errors)
    return ValidDefinition(
        campaign=campaign,
        testset=testset,
        contenders=contenders,
        warnings=warnings,
        rosters=rosters,
    )


def _sample_seeds_read(data: dict, weights: dict, errors: list[str]) -> None:
    """``sample_seeds``: "derived" (the default: sample i gets seed + i) or "fixed" (one seed
    for every sample); kept in ``weights`` beside the gates, where generation and the report
    read it."""
    mode = data.get("sample_seeds", DERIVED)
    if mode not in SEED_MODES:
        errors.append(f"sample_seeds: one of {', '.join(SEED_MODES)}")
    elif mode == FIXED:
        weights["sample_seeds"] = FIXED


MAX_SLICE_KEYS = 10


def _slice_by_read(data: dict, weights: dict, errors: list[str]) -> None:
    """``slice_by``: task metadata keys the report breaks its figures down by (in weights)."""
    keys = data.get("slice_by")
    if keys is None:
        return
    if (
        not isinstance(keys, list)
        or not all(isinstance(k, str) and 0 < len(k.strip()) <= 100 for k in keys)
        or len(keys) > MAX_SLICE_KEYS
    ):
        errors.append(
            f"slice_by: must be a list of up to {MAX_SLICE_KEYS} metadata keys (text, up to "
            "100 characters each)"
        )
        return
    if keys:
        weights["slice_by"] = list(dict.fromkeys(k.strip() for k in keys))


def _slug_read(data: dict, r: DefinitionReader) -> str:
    """The slug: well formed, not reserved, not taken."""
    slug = r.string(data, "slug", "", required=True, max_len=100)
    if slug and not SLUG_RE.match(slug):
        r.errors.append("slug: lowercase letters, digits, - and _")
    elif slug in RESERVED_SLUGS:
        r.errors.append(f"slug: {slug!r} is reserved, choose another")
    elif slug and Campaign.objects.filter(slug=slug).exists():
        r.errors.append(_slug_taken(slug))
    return slug


def _testset_read(ref, errors: list[str]) -> TestSet | None:
    """The test set a definition names: its newest version by name, or {"name", "version"}."""
    testset = None
    if isinstance(ref, str) and ref.strip():
        testset = TestSet.objects.filter(name=ref.strip()).order_by("-version").first()
        if testset is None:
            errors.append(f"testset: no test set named {ref!r}")
    elif (
        isinstance(ref, dict)
        and set(ref) <= {"name", "version"}
        and isinstance(ref.get("name"), str)
    ):
        version = ref.get("version")
        if version is None:
            testset = TestSet.objects.filter(name=ref["name"]).order_by("-version").first()
        elif isinstance(version, int) and not isinstance(version, bool):
            testset = TestSet.objects.filter(name=ref["name"], version=version).first()
        else:
            errors.append("testset.version: must be an integer")
        if testset is None and not errors[-1:] == ["testset.version: must be an integer"]:
            errors.append(f"testset: no test set {ref['name']!r} version {version}")
    else:
        errors.append('testset: required, a name or {"name": ..., "version": ...}')
    if testset is not None and testset.task_count == 0 and not testset.tasks.exists():
        errors.append(f"testset: {testset} has no tasks")
    return testset


def _contenders_read(raw_contenders, errors: list[str], warnings: list[str]) -> list[dict]:
    """The contenders, each new or naming an existing one with the same configuration."""
    contenders: list[dict] = []
    if not isinstance(raw_contenders, list) or not raw_contenders:
        errors.append("contenders: required, a non-empty list")
        raw_contenders = []
    names = set()
    for i, raw in enumerate(raw_contenders):
        spec = contender_validate(raw, f"contenders[{i}]", errors)
        if spec is None:
            continue
        if spec["name"] in names:
            errors.append(f"contenders[{i}].name: {spec['name']!r} is listed twice")
        names.add(spec["name"])
        existing = Contender.objects.filter(name=spec["name"]).first()
        if existing is None and set(spec) == {"name"}:
            errors.append(
                f"contenders[{i}]: no contender named {spec['name']!r}; give its provider and model"
            )
        elif existing is not None:
            conflicts = contender_conflicts(existing, spec)
            if conflicts:
                errors.append(
                    f"contenders[{i}]: a contender named {spec['name']!r} already exists with a different "
                    f"{', '.join(conflicts)}; give the new configuration a new name"
                )
        contenders.append(spec)
    if 0 < len(contenders) < 2:
        warnings.append(
            "a blind comparison needs at least 2 contenders: with one, its outputs are generated "
            "but no item is offered for review (define the campaign with two or more to review)"
        )
    return contenders


def _mode_and_rubric_read(
    data: dict, errors: list[str], warnings: list[str]
) -> tuple[str, list[dict]]:
    """The mode, and the rubric it needs (or does not score)."""
    mode = data.get("mode", Mode.RUBRIC)
    if mode not in Mode.values:
        errors.append(f"mode: one of {', '.join(Mode.values)}")
    rubric, rubric_errors = rubric_validate(data.get("rubric") or [])
    errors += rubric_errors
    if mode in (Mode.RUBRIC, Mode.BOTH) and not rubric and not rubric_errors:
        errors.append(f"rubric: mode '{mode}' needs at least one dimension")
    if mode == Mode.PAIRWISE and rubric:
        warnings.append(
            "rubric: mode 'pairwise' only asks which output is better, so these dimensions are "
            "not scored; choose mode 'both' to score them as well"
        )
    return mode, rubric


def _weights_read(
    data: dict, r: DefinitionReader, testset: TestSet | None, warnings: list[str]
) -> dict:
    """The report's weights: per category, quality and stability, the quality floor."""
    weights = data.get("weights") or {}
    if not isinstance(weights, dict):
        r.errors.append("weights: must be an object")
        return {}
    r.unknown(weights, {"categories", "quality", "stability", "min_quality"}, "weights.")
    categories = weights.get("categories") or {}
    if not isinstance(categories, dict):
        r.errors.append("weights.categories: must map a category to a weight")
    else:
        for cat in categories:
            r.number(categories, cat, "weights.categories.", 1, lo=0, hi=MAX_WEIGHT)
        if testset is not None:
            warnings += _weight_category_warnings(categories, testset)
    # The defaults the report uses; a null stored here made every report a 500.
    r.number(weights, "quality", "weights.", 0.7, lo=0, hi=MAX_WEIGHT)
    r.number(weights, "stability", "weights.", 0.3, lo=0, hi=MAX_WEIGHT)
    if "min_quality" in weights:  # the decision score's quality floor
        r.number(weights, "min_quality", "weights.", None, lo=0, hi=1)
    return weights


def _redact_read(data: dict, errors: list[str]) -> list:
    """The words to mask, as given (stripped when stored)."""
    redact = data.get("redact") or []
    if not isinstance(redact, list) or not all(isinstance(w, str) and w.strip() for w in redact):
        errors.append("redact: must be a list of words")
        return []
    if len(redact) > MAX_REDACT_WORDS:
        errors.append(f"redact: at most {MAX_REDACT_WORDS:,} words (this list has {len(redact):,})")
        return []
    return redact


@dataclass
class ShownTexts:
    """A definition's texts reviewers read that could name a contender, and its own words to
    mask (`redact`, as given)."""

    slug: str
    name: str
    rubric: list[dict]
    instructions: str
    redact: list


def _blinding_check(
    shown: ShownTexts, *, contenders: list[dict], testset: TestSet | None, errors: list[str]
) -> None:
    """What reviewers read that could name a contender is refused, with the words found: the
    slug (in every reviewer's URL), the name (every page's title and heading), the rubric's
    keys, labels, descriptions and anchors, the instructions and the test set's categories.
    Masking would hide most of them, but a masked heading or question tells as much as the
    name (a campaign "[redacted] vs the rest"), and keys and names are shown as written."""
    terms = blinding_terms(redact=shown.redact, contenders=contenders)
    if shown.slug and (named := quoted_identity_words(shown.slug, terms)):
        # The slug is in every reviewer's URL (page, form actions, API), where nothing can
        # mask it.
        errors.append(
            f"slug: names a model, a vendor or a redacted term ({named}); it is in every "
            "reviewer's URL, where it cannot be masked: choose a neutral slug"
        )
    texts = {"name": shown.name, "instructions": shown.instructions}
    for i, d in enumerate(shown.rubric):
        texts[f"rubric[{i}].key"] = d.get("key") or ""
        texts[f"rubric[{i}].label"] = d.get("label") or ""
        texts[f"rubric[{i}].description"] = d.get("description") or ""
        for point, text in (d.get("anchors") or {}).items():
            texts[f"rubric[{i}].anchors.{point}"] = text
    errors += blinding_refusals(texts, terms=terms)
    if testset is not None:
        errors += category_refusals(testset, terms)


def _settings_read(data: dict, r: DefinitionReader, weights: dict, errors: list[str]) -> dict:
    """The campaign's remaining settings: lease, pass threshold and the three switches."""
    return {
        "lease_minutes": r.integer(data, "lease_minutes", "", default=20, lo=1, hi=24 * 60),
        "pass_threshold": read_pass_threshold(data, weights, errors),
        "show_reference": r.boolean(data, "show_reference", "", False),
        "show_reasoning": r.boolean(data, "show_reasoning", "", False),
        "flags_dispute": r.boolean(data, "flags_dispute", "", False),
        "hold_identity_leaks": r.boolean(data, "hold_identity_leaks", "", True),
        "blinding_probe": _probe_read(data, r),
    }


def _probe_read(data: dict, r: DefinitionReader) -> dict | None:
    """`"blinding_probe": {"every": N}` (absent or null: off)."""
    probe = data.get("blinding_probe")
    if probe is None:
        return None
    if not isinstance(probe, dict):
        r.errors.append('blinding_probe: must be {"every": N} or null')
        return None
    r.unknown(probe, {"every"}, "blinding_probe.")
    every = r.integer(probe, "every", "blinding_probe.", lo=1, hi=PROBE_EVERY_MAX)
    if probe.get("every") is None:
        r.errors.append("blinding_probe.every: required (ask after every N items)")
    return {"every": every} if isinstance(every, int) else None


def _slug_taken(slug: str) -> str:
    return f"slug: a campaign {slug!r} already exists"


def _weight_category_warnings(categories: dict, testset: TestSet) -> list[str]:
    """A weight on a category the test set lacks changes nothing: most likely a typo."""
    known = list(testset.tasks.order_by("category").values_list("category", flat=True).distinct())
    unknown = [c for c in categories if c not in known]
    if not unknown:
        return []
    return [
        f"weights.categories: {', '.join(unknown)} "
        f"{'is not a category' if len(unknown) == 1 else 'are not categories'} of {testset}, "
        f"so {'its weight changes' if len(unknown) == 1 else 'their weights change'} nothing; "
        f"its categories are {', '.join(known)}"
    ]


@transaction.atomic
def campaign_create(*, definition: dict | ValidDefinition, user=None) -> tuple[Campaign, list[str]]:
    """Create a campaign from a definition dict, or from one `campaign_definition_validate`
    has checked already (the admin form's); returns (campaign, warnings).

    Contenders are created or reused by name; the test set is frozen; one generation row per
    (task, contender, sample) is created (pending, not yet queued).
    """
    valid = (
        definition
        if isinstance(definition, ValidDefinition)
        else campaign_definition_validate(definition)
    )
    # What may have changed since the check: the test set is locked (a deleted one is gone),
    # a slug taken meanwhile fails its unique constraint.
    testset = TestSet.objects.select_for_update().filter(pk=valid.testset.pk).first()
    if testset is None:
        raise DefinitionError([f"testset: {valid.testset} was deleted; choose another"])
    testset.freeze()
    try:
        with transaction.atomic():
            campaign = Campaign.objects.create(testset=testset, created_by=user, **valid.campaign)
    except IntegrityError:
        if not Campaign.objects.filter(slug=valid.campaign["slug"]).exists():
            raise  # not the slug: a check the definition should have made
        raise DefinitionError([_slug_taken(valid.campaign["slug"])]) from None
    contenders = []
    for spec in valid.contenders:
        contender = Contender.objects.filter(name=spec["name"]).first()
        if contender is None:
            contender = Contender.objects.create(**spec)
        contenders.append(contender)
    campaign.contenders.set(contenders)
    roster_users_store(campaign=campaign, rosters=valid.rosters)
    generation_rows_create(campaign=campaign)
    # Review items exist (waiting) from the start; finishing generations only open them.
    review_side.review_items_sync(campaign=campaign)
    return campaign, valid.warnings


def campaign_instructions_set(*, campaign: Campaign, text: str) -> str | None:
    """Replace the reviewers' instructions (any time: they change no result); returns the
    masking warning, if any. Pages already open show the new text on their next item."""
    campaign.instructions = text.strip()
    campaign.save(update_fields=["instructions"])
    warnings = blinding_warnings(
        {"instructions": campaign.instructions},
        redact=campaign.redact,
        contenders=list(campaign.contenders.values("name", "model", "version_label", "base_url")),
    )
    return warnings[0] if warnings else None
