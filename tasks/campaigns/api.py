"""JSON API for campaigns and generation (admin writes; admin and lead read)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponseBase, JsonResponse, StreamingHttpResponse

from evalsite.api import ApiError, api_endpoint, found_or_404, json_body
from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import ADMIN, LEAD, has_role
from tasks.campaigns.definition import (
    CONTENDER_KEYS,
    INSTRUCTIONS_MAX_CHARS,
    DefinitionError,
    campaign_create,
    campaign_instructions_set,
)
from tasks.campaigns.definition_schema import DEFINITION_SCHEMA
from tasks.campaigns.rosters import (
    ROSTER_KEYS,
    ROSTER_SCHEMA,
    campaign_rosters_set,
    rosters_json,
    rosters_read,
)
from tasks.campaigns.selectors import (
    campaign_list,
    campaign_progress,
)
from tasks.generation.outputs_export import export_filename, outputs_jsonl
from tasks.generation.outputs_import import outputs_import
from tasks.generation.prices import definition_prices, from_data
from tasks.generation.providers.imported import ImportErrors
from tasks.generation.services import (
    GenerationError,
    GenerationNotSent,
    generation_cancel,
    generation_enqueue,
    generation_retry_failed,
)
from tasks.models import Campaign, Contender


def _jsonable(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def definition_value(contender: Contender, key: str) -> Any:
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


def _admin_campaign(request: AuthedHttpRequest, slug: str) -> Campaign:
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
def campaigns(request: AuthedHttpRequest) -> JsonResponse:
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
def campaign_detail(request: AuthedHttpRequest, slug: str) -> JsonResponse:
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
def campaign_generate(request: AuthedHttpRequest, slug: str) -> JsonResponse:
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
def campaign_cancel(request: AuthedHttpRequest, slug: str) -> JsonResponse:
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
def campaign_retry_failed(request: AuthedHttpRequest, slug: str) -> JsonResponse:
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
def campaign_outputs(request: AuthedHttpRequest, slug: str) -> HttpResponseBase:
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


def _outputs_file(request: AuthedHttpRequest) -> bytes:
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
