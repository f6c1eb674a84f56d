"""JSON API for campaigns and generation (admin writes; admin and lead read)."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponseBase, JsonResponse, StreamingHttpResponse

from evalsite.api import ApiError, api_endpoint, found_or_404, json_body
from evalsite.roles import ADMIN, LEAD, has_role
from tasks.blinding.hold import (
    IdentityNotHeld,
    MaskInvalid,
    generation_identity_approve,
    generations_identity_approve,
    mask_spans_checked,
)
from tasks.campaigns.definition import (
    CONTENDER_KEYS,
    ENV_RE,
    INSTRUCTIONS_MAX_CHARS,
    KEY_RE,
    LEVELS,
    MAX_PRICE,
    MAX_WEIGHT,
    PROBE_EVERY_MAX,
    SCALE_LIMIT,
    SLUG_RE,
    DefinitionError,
    campaign_create,
    campaign_instructions_set,
)
from tasks.campaigns.rosters import (
    ROSTER_KEYS,
    ROSTER_SCHEMA,
    campaign_rosters_set,
    rosters_json,
    rosters_read,
)
from tasks.campaigns.score_turns import SCORE_TURNS_SCHEMA
from tasks.campaigns.selectors import (
    campaign_held_outputs,
    campaign_list,
    campaign_progress,
    held_outputs,
)
from tasks.generation.outputs_export import export_filename, outputs_jsonl
from tasks.generation.prices import definition_prices, from_data
from tasks.generation.providers.imported import ImportErrors
from tasks.generation.services import (
    GenerationError,
    GenerationNotSent,
    generation_cancel,
    generation_enqueue,
    generation_retry_failed,
    outputs_import,
)
from tasks.models import Campaign, Generation, Mode, Provider


def _jsonable(value):
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def definition_value(contender, key: str):
    """One key of a contender as its definition gives it: prices read from the price data
    are given as the data to match (the flat prices null), so posting them back matches."""
    if key == "prices":
        return definition_prices(contender)
    if key in ("price_in_per_mtok", "price_out_per_mtok") and from_data(contender):
        return None
    return getattr(contender, key)


def campaign_json(campaign: Campaign, *, progress: bool = False) -> dict:
    data = {
        "slug": campaign.slug,
        "name": campaign.name,
        "status": campaign.status,
        "testset": {"name": campaign.testset.name, "version": campaign.testset.version},
        # Each contender as a campaign definition gives it (CONTENDER_KEYS), so a definition
        # that reuses one by name can repeat it exactly; prices as numbers.
        "contenders": [
            {
                key: float(value) if isinstance(value, Decimal) else value
                for key in sorted(CONTENDER_KEYS)
                for value in [definition_value(c, key)]
            }
            for c in campaign.contenders.order_by("name")
        ],
        "samples_per_task": campaign.samples_per_task,
        "reviewed_samples": campaign.reviewed_samples,
        "overlap": campaign.overlap,
        "mode": campaign.mode,
        "rubric": campaign.rubric,
        "score_turns": campaign.score_turns,
        # per-tier pass thresholds live in weights (tasks/campaigns/thresholds.py); shown back
        # as the definition gave them, so a read definition can be posted again
        "weights": {k: v for k, v in campaign.weights.items() if k != "pass_thresholds"},
        "redact": campaign.redact,
        "lease_minutes": campaign.lease_minutes,
        "pass_threshold": campaign.weights.get("pass_thresholds") or campaign.pass_threshold,
        "show_reference": campaign.show_reference,
        "show_reasoning": campaign.show_reasoning,
        "flags_dispute": campaign.flags_dispute,
        "hold_identity_leaks": campaign.hold_identity_leaks,
        "blinding_probe": campaign.blinding_probe,
        "instructions": campaign.instructions,
        **rosters_json(campaign),
        "created_at": campaign.created_at.isoformat(),
    }
    if progress:
        data["progress"] = _jsonable(campaign_progress(campaign=campaign))
        data["progress"]["currency"] = settings.EVALSITE_CURRENCY  # of its costs
    return data


# The create_campaign format (tasks.campaigns.definition validates it and lists every problem). A null
# is refused where a value has a default: leave the key out instead.
_INTEGER, _NUMBER, _OPTIONAL_NUMBER = (
    {"type": "integer"},
    {"type": "number"},
    {"type": ["number", "null"]},
)
PRICE = {"type": ["number", "null"], "minimum": 0, "maximum": MAX_PRICE, "description": "null: 0"}
_RATES = {
    "cache_read_per_mtok": PRICE,
    "cache_write_per_mtok": PRICE,
    "reasoning_per_mtok": PRICE,
}
PRICES = {
    "type": ["object", "null"],
    "description": "prices beyond the two flat ones (any price given replaces the price "
    "data's), or which price data to match (provider, model)",
    "additionalProperties": False,
    "properties": {
        "provider": {"type": "string", "maxLength": 200},
        "model": {"type": "string", "maxLength": 200},
        **_RATES,
        "tiers": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["above_input_tokens"],
                "additionalProperties": False,
                "properties": {
                    "above_input_tokens": {"type": "integer", "minimum": 0},
                    "price_in_per_mtok": PRICE,
                    "price_out_per_mtok": PRICE,
                    **_RATES,
                },
            },
        },
    },
}
DEFINITION_SCHEMA = {
    "type": "object",
    "required": ["slug", "testset", "contenders"],
    "additionalProperties": False,
    "properties": {
        "slug": {"type": "string", "pattern": SLUG_RE.pattern},
        "name": {"type": "string", "maxLength": 200},
        "testset": {
            "description": "a test set's name (its latest version) or {name, version}",
            "oneOf": [
                {"type": "string", "minLength": 1},
                {
                    "type": "object",
                    "required": ["name"],
                    "additionalProperties": False,
                    "properties": {
                        "name": {"type": "string"},
                        "version": {"type": ["integer", "null"], "description": "null: latest"},
                    },
                },
            ],
        },
        "contenders": {
            "type": "array",
            "minItems": 1,
            "description": "a contender's name (an existing one) or its definition",
            "items": {
                "oneOf": [
                    {"type": "string", "minLength": 1},
                    {
                        "type": "object",
                        "required": ["name"],
                        "additionalProperties": False,
                        "properties": {
                            "name": {"type": "string", "maxLength": 100},
                            "provider": {"type": "string", "enum": list(Provider.values)},
                            "base_url": {"type": "string", "maxLength": 200},
                            "model": {"type": "string", "maxLength": 200},
                            "api_key_env": {"type": "string", "pattern": f"^$|{ENV_RE.pattern}"},
                            "params": {
                                "type": ["object", "null"],
                                "description": "passed to the provider as given",
                                "properties": {
                                    "temperature": {**_OPTIONAL_NUMBER, "minimum": 0, "maximum": 2},
                                    "top_p": {**_OPTIONAL_NUMBER, "minimum": 0, "maximum": 1},
                                    "max_tokens": {"type": ["integer", "null"], "minimum": 1},
                                    "seed": {"type": ["integer", "null"]},
                                },
                            },
                            "system_prompt": {"type": "string", "maxLength": 20000},
                            "price_in_per_mtok": PRICE,
                            "price_out_per_mtok": PRICE,
                            "prices": PRICES,
                            "version_label": {"type": "string", "maxLength": 100},
                            "max_concurrency": {**_INTEGER, "minimum": 1, "maximum": 1000},
                        },
                    },
                ]
            },
        },
        "samples_per_task": {**_INTEGER, "minimum": 1, "maximum": 100},
        "reviewed_samples": {**_INTEGER, "minimum": 1},
        "overlap": {**_INTEGER, "minimum": 1, "maximum": 20},
        "mode": {"type": "string", "enum": list(Mode.values)},
        "rubric": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key"],
                "additionalProperties": False,
                "properties": {
                    "key": {"type": "string", "pattern": KEY_RE.pattern},
                    "label": {"type": "string", "maxLength": 100},
                    "description": {"type": "string", "maxLength": 2000},
                    "min": {**_INTEGER, "minimum": -SCALE_LIMIT, "maximum": SCALE_LIMIT},
                    "max": {**_INTEGER, "minimum": -SCALE_LIMIT, "maximum": SCALE_LIMIT},
                    "anchors": {"type": "object", "additionalProperties": {"type": "string"}},
                    "level": {"type": "string", "enum": list(LEVELS)},
                    "direction": {"type": "string", "enum": ["higher", "lower"]},
                    "max_gap": {**_NUMBER, "minimum": 0, "maximum": 2 * SCALE_LIMIT},
                    "allow_na": {"type": "boolean"},
                },
            },
        },
        "weights": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "categories": {
                    "type": "object",
                    "additionalProperties": {**_NUMBER, "minimum": 0, "maximum": MAX_WEIGHT},
                },
                "quality": {**_NUMBER, "minimum": 0, "maximum": MAX_WEIGHT},
                "stability": {**_NUMBER, "minimum": 0, "maximum": MAX_WEIGHT},
                "min_quality": {
                    **_NUMBER,
                    "minimum": 0,
                    "maximum": 1,
                    "description": "quality floor of the decision score (default: the pass "
                    "threshold)",
                },
            },
        },
        "redact": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "lease_minutes": {**_INTEGER, "minimum": 1, "maximum": 24 * 60},
        "pass_threshold": {
            "oneOf": [
                {**_NUMBER, "minimum": 0, "maximum": 1},
                {
                    "type": "object",
                    "properties": {
                        t: {**_NUMBER, "minimum": 0, "maximum": 1}
                        for t in ("base", "advanced", "boundary")
                    },
                    "additionalProperties": False,
                },
            ],
            "description": "final quality a sample needs to pass, or one per tier",
        },
        "show_reference": {"type": "boolean"},
        "show_reasoning": {"type": "boolean"},
        "flags_dispute": {"type": "boolean"},
        "blinding_probe": {
            "type": ["object", "null"],
            "additionalProperties": False,
            "required": ["every"],
            "properties": {"every": {**_INTEGER, "minimum": 1, "maximum": PROBE_EVERY_MAX}},
            "description": "after every N items a reviewer is asked which contender wrote one "
            "answer of that item (null or absent: never)",
        },
        "hold_identity_leaks": {
            "type": "boolean",
            "default": True,
            "description": "an output that names a model keeps its items from reviewers "
            "until an admin approves its masked view",
        },
        "instructions": {"type": "string", "maxLength": INSTRUCTIONS_MAX_CHARS},
        "reviewers": {
            **ROSTER_SCHEMA,
            "description": 'who may review: "all" (everyone with the reviewer role) or usernames',
        },
        "arbiters": {
            **ROSTER_SCHEMA,
            "description": 'who may arbitrate: "all" (everyone with the arbiter role) or usernames',
        },
        "score_turns": SCORE_TURNS_SCHEMA,
    },
}


def _admin_campaign(request: HttpRequest, slug: str) -> Campaign:
    return found_or_404(Campaign.objects.select_related("testset"), "campaign", slug=slug)


@api_endpoint(
    ADMIN,
    LEAD,
    methods=("GET", "POST"),
    summary="List campaigns (admin, lead) or create one from a definition (admin; the create_campaign format).",
    body={"application/json": {"schema": DEFINITION_SCHEMA}},
    responses={
        "200": "campaign list",
        "201": {"description": "created", "methods": ("POST",)},
        "400": {"description": "definition errors (all listed)", "methods": ("POST",)},
        "403": "role",
    },
)
def campaigns(request: HttpRequest) -> JsonResponse:
    if request.method == "GET":
        return JsonResponse(
            {
                "campaigns": [
                    {
                        "slug": c.slug,
                        "name": c.name,
                        "status": c.status,
                        "generations": c.total,
                        "done": c.done,
                        "failed": c.failed,
                    }
                    for c in campaign_list()
                ]
            }
        )
    if not has_role(request.user, ADMIN):
        raise ApiError("only admins create campaigns", status=403)
    try:
        campaign, warnings = campaign_create(definition=json_body(request), user=request.user)
    except DefinitionError as exc:
        raise ApiError("invalid campaign definition", errors=exc.errors) from None
    return JsonResponse({**campaign_json(campaign), "warnings": warnings}, status=201)


PATCHABLE = ("instructions", *ROSTER_KEYS)


@api_endpoint(
    ADMIN,
    LEAD,
    methods=("GET", "PATCH"),
    body={
        "application/json": {
            "schema": {
                "type": "object",
                "minProperties": 1,
                "additionalProperties": False,
                "properties": {
                    "instructions": {
                        "type": "string",
                        "maxLength": INSTRUCTIONS_MAX_CHARS,
                        "description": "Markdown",
                    },
                    "reviewers": {**ROSTER_SCHEMA, "description": '"all" or usernames'},
                    "arbiters": {**ROSTER_SCHEMA, "description": '"all" or usernames'},
                },
            }
        }
    },
    summary="""A campaign with its per-contender generation progress (GET), or new instructions
for its reviewers and arbiters and new rosters (PATCH, admins; the only things that change
after creation).

PATCH answers the campaign, `warnings` (e.g. words reviewers will see masked) and, when a
roster changed, `returned`: the leases and disputes of people taken off it, back in the queues.""",
    responses={
        "200": "campaign",
        "400": {"description": "invalid", "methods": ("PATCH",)},
        "403": "not an admin",
        "404": "no such campaign",
    },
)
def campaign_detail(request: HttpRequest, slug: str) -> JsonResponse:
    campaign = _admin_campaign(request, slug)
    if request.method == "GET":
        return JsonResponse(campaign_json(campaign, progress=True))
    if not has_role(request.user, ADMIN):
        raise ApiError("only admins change a campaign", status=403)
    data = json_body(request)
    if not data or set(data) - set(PATCHABLE):
        raise ApiError(
            'send any of {"instructions": "<Markdown>", "reviewers": [...] | "all", '
            '"arbiters": [...] | "all"}: nothing else changes after creation'
        )
    text = data.get("instructions")
    errors: list[str] = []
    if "instructions" in data and not isinstance(text, str):
        errors.append("instructions: must be a string (Markdown)")
    elif isinstance(text, str) and len(text) > INSTRUCTIONS_MAX_CHARS:
        errors.append(f"instructions: longer than {INSTRUCTIONS_MAX_CHARS} characters")
    warnings: list[str] = []
    rosters = {k: r for k, r in rosters_read(data, errors, warnings).items() if k in data}
    if errors:
        raise ApiError("invalid change", errors=errors)
    body = {}
    if rosters:
        body["returned"] = campaign_rosters_set(campaign=campaign, rosters=rosters, by=request.user)
    if isinstance(text, str):
        warning = campaign_instructions_set(campaign=campaign, text=text)
        warnings += [warning] if warning else []
    return JsonResponse({**campaign_json(campaign), "warnings": warnings, **body})


@api_endpoint(
    ADMIN,
    methods=("POST",),
    summary="Queue generation for every row not yet queued.",
    responses={
        "202": "queued",
        "400": "e.g. a missing API key variable",
        "404": "no such campaign",
        "503": '{"error": "...", "queued": n}: queued, but the broker is unreachable; the '
        "reconciler sends them once it is back",
    },
)
def campaign_generate(request: HttpRequest, slug: str) -> JsonResponse:
    campaign = _admin_campaign(request, slug)
    try:
        queued = generation_enqueue(campaign=campaign)
    except GenerationNotSent as exc:
        raise ApiError(str(exc), status=503, queued=exc.count) from None
    except GenerationError as exc:
        raise ApiError(str(exc)) from None
    return JsonResponse({"queued": queued}, status=202)


@api_endpoint(
    ADMIN,
    methods=("POST",),
    summary="Cancel generation: queued and running rows are cancelled (generate queues them "
    "again); with nothing queued or running, nothing changes.",
    responses={"200": '{"cancelled": n}', "404": "no such campaign"},
)
def campaign_cancel(request: HttpRequest, slug: str) -> JsonResponse:
    return JsonResponse({"cancelled": generation_cancel(campaign=_admin_campaign(request, slug))})


@api_endpoint(
    ADMIN,
    methods=("POST",),
    summary="Queue every failed row again with a fresh attempt budget.",
    responses={
        "202": '{"queued": n}',
        "400": "e.g. a missing API key variable",
        "404": "no such campaign",
        "503": '{"error": "...", "queued": n}: queued, but the broker is unreachable',
    },
)
def campaign_retry_failed(request: HttpRequest, slug: str) -> JsonResponse:
    try:
        count = generation_retry_failed(campaign=_admin_campaign(request, slug))
    except GenerationNotSent as exc:
        raise ApiError(str(exc), status=503, queued=exc.count) from None
    except GenerationError as exc:
        raise ApiError(str(exc)) from None
    return JsonResponse({"queued": count}, status=202)


@api_endpoint(
    ADMIN,
    LEAD,
    methods=("GET", "POST"),
    summary="GET streams the campaign's finished outputs with their text as JSONL, in the "
    "import format with each output's contender (admins and leads; ?contender=NAME for one). "
    "POST imports outputs for an imported contender (admins): the JSONL file as the request "
    "body (or the multipart field `file`), ?contender=NAME.",
    body={
        "application/x-ndjson": {"schema": {"type": "string"}},
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {"file": {"type": "string", "format": "binary"}},
            }
        },
    },
    # GET's optional ?contender= is in the summary: one name has one schema, and POST's is
    # required.
    query={
        "contender": {
            "description": "the imported contender's name",
            "required": True,
            "methods": ("POST",),
        }
    },
    responses={
        "200": "the outputs (GET, JSONL) or the import summary (POST)",
        "400": "no contender given, an unknown one, or problems (all listed, nothing imported)",
        "403": "role (POST: admins only)",
        "404": "no such campaign",
    },
    too_big="import a bigger file on the server with "
    "`manage.py import_outputs FILE --campaign SLUG --contender NAME`",
)
def campaign_outputs(request: HttpRequest, slug: str) -> HttpResponseBase:
    campaign = _admin_campaign(request, slug)
    name = request.GET.get("contender", "")
    if request.method == "GET":
        return _outputs_download(campaign, name or None)
    if not has_role(request.user, ADMIN):
        raise ApiError("only admins import outputs", status=403)
    if not name:
        raise ApiError("give the contender: ?contender=NAME")
    try:
        result = outputs_import(campaign=campaign, contender_name=name, raw=_outputs_file(request))
    except ImportErrors as exc:
        raise ApiError("nothing imported", errors=exc.errors) from None
    return JsonResponse(result)


def _outputs_download(campaign: Campaign, contender: str | None) -> StreamingHttpResponse:
    """A streamed download: rows leave as they are read, nothing is built in memory first."""
    if contender is not None and not campaign.contenders.filter(name=contender).exists():
        raise ApiError(f"contender {contender!r} is not part of campaign {campaign.slug}")
    response = StreamingHttpResponse(
        outputs_jsonl(campaign=campaign, contender=contender),
        content_type="application/x-ndjson; charset=utf-8",
    )
    filename = export_filename(campaign=campaign, contender=contender)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    return response


def _outputs_file(request: HttpRequest) -> bytes:
    if request.content_type != "multipart/form-data":
        return request.body
    # A form upload (curl -F file=@vendor.jsonl), as the test-set and review-record imports
    # take one: its body was read as the JSONL itself, every boundary line "not valid JSON".
    upload = request.FILES.get("file")
    if upload is None:
        raise ApiError("send the outputs as the multipart field 'file', or the JSONL as the body")
    if upload.size > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        raise RequestDataTooBig  # the 413 a raw body of that size gets
    return upload.read()


@api_endpoint(
    ADMIN,
    methods=("POST",),
    summary="Approve the masked view of an output held because it names a model or vendor "
    "(campaign setting hold_identity_leaks): reviewers then get it masked, and its review "
    "items open once their other outputs are ready. No body.",
    responses={
        "200": '{"output": id, "approved_by": "...", "approved_at": "...", "items_opened": n}',
        "404": "no such campaign, or no such self-identifying output in it",
        "409": "the output is not held (already approved, or never held)",
    },
)
def campaign_output_approve_identity(
    request: HttpRequest, slug: str, output_id: int
) -> JsonResponse:
    campaign = _admin_campaign(request, slug)
    generation = found_or_404(
        Generation.objects.filter(campaign=campaign, identity_leak=True),
        "self-identifying output",
        pk=output_id,
    )
    try:
        opened = generation_identity_approve(generation=generation, user=request.user)
    except IdentityNotHeld as exc:
        raise ApiError(str(exc), status=409) from None
    generation.refresh_from_db(fields=["identity_approved_at"])
    return JsonResponse(
        {
            "output": generation.pk,
            "approved_by": request.user.get_username(),
            "approved_at": generation.identity_approved_at.isoformat(),
            "items_opened": opened,
        }
    )


@api_endpoint(
    ADMIN,
    LEAD,
    summary="The outputs reviewers will be shown that are held, waiting for an admin to "
    "approve their masked view: id, task, contender, sample, reasons "
    '[{"text", "reason", "start", "end"}] (offsets in the output as stored; past its end: in '
    "its transcript), masks (spans an admin masked by hand, with who and when) and the text "
    "reviewers will get.",
    responses={"200": '{"outputs": [...]}', "404": "no such campaign"},
)
def campaign_held_outputs_view(request: HttpRequest, slug: str) -> JsonResponse:
    campaign = _admin_campaign(request, slug)
    rows = campaign_held_outputs(campaign=campaign)
    return JsonResponse(
        {"outputs": [{k: v for k, v in row.items() if k != "parts"} for row in rows]}
    )


HELD_APPROVE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "ids": {"type": "array", "items": {"type": "integer"}, "minItems": 1},
        "all": {"type": "boolean", "description": "approve every held output of the campaign"},
        "mask": {
            "type": "array",
            "items": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
            "description": "with exactly one id: [start, end] spans of its output (offsets "
            "in characters) masked for reviewers before it is approved",
        },
    },
}


@api_endpoint(
    ADMIN,
    methods=("POST",),
    summary='Approve held outputs in bulk: {"ids": [...]} or {"all": true}. With one id, '
    '{"mask": [[start, end], ...]} masks those spans of its output for reviewers first '
    "(recorded with who and when). Their review items open once their other outputs are ready.",
    body={"application/json": {"schema": HELD_APPROVE_SCHEMA}},
    responses={
        "200": '{"approved": [ids], "items_opened": n}',
        "400": "neither ids nor all, both, a mask with more than one id, or a span that does "
        "not fit the output",
        "404": "no such campaign, or an id that is not a held output of it",
        "409": "the output to mask is not held (approved meanwhile)",
    },
)
def campaign_held_outputs_approve(request: HttpRequest, slug: str) -> JsonResponse:
    campaign = _admin_campaign(request, slug)
    body = json_body(request)
    ids, everything, mask = body.get("ids"), body.get("all"), body.get("mask")
    unknown = sorted(set(body) - {"ids", "all", "mask"})
    if unknown:
        raise ApiError(f"unknown keys: {', '.join(unknown)}")
    if (ids is None) == (everything is not True):
        raise ApiError('give either "ids": [...] or "all": true')
    if ids is not None and (
        not isinstance(ids, list)
        or not ids
        or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids)
    ):
        raise ApiError("ids: must be a non-empty list of output ids")
    if mask is not None:
        return _approve_masked(request, campaign, ids or [], mask)
    if ids is not None:
        held = set(held_outputs(campaign).filter(pk__in=ids).values_list("pk", flat=True))
        missing = [i for i in ids if i not in held]
        if missing:
            raise ApiError(
                f"not held outputs of this campaign: {', '.join(map(str, missing))}", status=404
            )
    return JsonResponse(generations_identity_approve(campaign=campaign, ids=ids, user=request.user))


def _approve_masked(request: HttpRequest, campaign: Campaign, ids: list, mask) -> JsonResponse:
    """One output's approve with hand-masked spans."""
    if len(ids) != 1:
        raise ApiError('mask: give exactly one output in "ids"')
    generation = found_or_404(held_outputs(campaign), "held output", pk=ids[0])
    try:
        spans = mask_spans_checked(mask, generation.output or "")
        opened = generation_identity_approve(generation=generation, user=request.user, mask=spans)
    except MaskInvalid as exc:
        raise ApiError("nothing approved", errors=exc.errors) from None
    except IdentityNotHeld as exc:
        raise ApiError(str(exc), status=409) from None
    return JsonResponse({"approved": [generation.pk], "items_opened": opened})
