"""Judge definitions (JSON or YAML) -> validated fields -> a Judge row.

The `create_judge` command, `POST /api/v1/judges` and nothing else write judges, both through
`judge_create`. The model configuration is read by the contenders' own reader, so a judge
takes exactly what a contender takes (provider, base_url, model, api_key_env, params, prices,
max_concurrency); the judging keys are read here. Every problem is collected, none raised
alone.
"""

from __future__ import annotations

import re

from django.db import IntegrityError, transaction

from tasks.campaigns.definition import (
    CONTENDER_KEYS,
    DefinitionError,
    campaign_definition_load,
    contender_validate,
)
from tasks.campaigns.definition_reader import DefinitionReader
from tasks.judges.models import Judge

# A contender's keys a judge does not take: it has no system prompt (its instructions go
# into the messages) and no version label; never imported outputs.
MODEL_KEYS = CONTENDER_KEYS - {"system_prompt", "version_label"}
JUDGING_KEYS = {"samples", "position_swap", "instructions"}
JUDGE_KEYS = MODEL_KEYS | JUDGING_KEYS
MAX_SAMPLES = 20
# A judge's name goes into URLs (/judges/<name>/): letters, digits, ".", "_" and "-".
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
INSTRUCTIONS_MAX_CHARS = 20_000


def judge_definition_load(text: str, *, filename: str = "") -> dict:
    """Parse JSON (strict) or YAML into a dict, as campaign definitions are."""
    return campaign_definition_load(text, filename=filename)


def judge_definition_validate(data: dict) -> dict:
    """The Judge fields of a definition; raises DefinitionError with every problem."""
    errors: list[str] = []
    if not isinstance(data, dict):
        raise DefinitionError(["the definition must be an object (a mapping) at the top level"])
    r = DefinitionReader(errors)
    r.unknown(data, JUDGE_KEYS, "")
    if "name" not in data:
        errors.append("name: required")
    given = {k: v for k, v in data.items() if k in MODEL_KEYS}
    provider_ok = given.get("provider") in Judge.Provider.values
    # The endpoint fields are still checked when the provider is wrong (as for openai).
    model = contender_validate(
        {**given, "provider": given.get("provider") if provider_ok else "openai"}, "judge", errors
    )
    # The contenders' reader prefixes its messages with where the contender sits, and offers
    # the imported provider, which a judge cannot be.
    errors[:] = [e.removeprefix("judge.") for e in errors if not e.startswith("judge.provider")]
    fields = dict(model or {})
    if not provider_ok:
        errors.append(f"provider: one of {', '.join(Judge.Provider.values)}")
    fields.pop("system_prompt", None)
    fields.pop("version_label", None)
    # A judge is priced by its two rates (price_in/out_per_mtok), not a contender's table.
    fields.pop("pricing", None)
    fields["samples"] = r.integer(data, "samples", "", default=1, lo=1, hi=MAX_SAMPLES)
    fields["position_swap"] = r.boolean(data, "position_swap", "", default=True)
    fields["instructions"] = r.string(
        data, "instructions", "", max_len=INSTRUCTIONS_MAX_CHARS
    ).strip()
    name = fields.get("name") or ""
    if name and not NAME_RE.match(name):
        errors.append("name: letters, digits, '.', '_' and '-' only (it appears in addresses)")
    if name and Judge.objects.filter(name=name).exists():
        errors.append(f"name: a judge {name!r} already exists")
    if errors:
        raise DefinitionError(sorted(set(errors), key=errors.index))
    return fields


def judge_create(*, definition: dict) -> Judge:
    """Validate and store one judge; nothing is stored on any problem."""
    fields = judge_definition_validate(definition)
    try:
        with transaction.atomic():
            return Judge.objects.create(**fields)
    except IntegrityError:
        # Two creations of one name at once: the unique constraint lets one through.
        raise DefinitionError([f"name: a judge {fields['name']!r} already exists"]) from None
