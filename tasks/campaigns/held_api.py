"""JSON API for the outputs a campaign holds for an admin: list them, approve them in bulk, or
approve one after masking spans by hand (docs/blinding.md, "Flag and hold")."""

from __future__ import annotations

from django.http import JsonResponse

from evalsite.api import ApiError, api_endpoint, found_or_404, json_body
from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import ADMIN, LEAD
from tasks.blinding.hold import (
    IdentityNotHeld,
    MaskInvalid,
    generation_identity_approve,
    generation_texts,
    generations_identity_approve,
    mask_spans_checked,
)
from tasks.campaigns.selectors import campaign_held_outputs, held_outputs
from tasks.models import Campaign, Generation


def _admin_campaign(request: AuthedHttpRequest, slug: str) -> Campaign:
    return found_or_404(Campaign.objects.select_related("testset"), "campaign", slug=slug)


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
    request: AuthedHttpRequest, slug: str, output_id: int
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


# What the held outputs page draws (highlighted parts of the answer and of the transcript).
PAGE_ONLY = ("parts", "steps")


@api_endpoint(
    ADMIN,
    LEAD,
    summary="The outputs reviewers will be shown that are held, waiting for an admin to "
    "approve their masked view: id, task, contender, sample, reasons "
    '[{"text", "reason", "part", "start", "end"}] (offsets in the part\'s text: "answer", the '
    "final answer, or a text of the transcript such as "
    '"transcript/0/steps/1/tool_results/0/result"), masks (spans an admin masked by hand, '
    "with their part, who and when), the text reviewers will get and texts {part: text}: every "
    "text a hand mask may name.",
    responses={"200": '{"outputs": [...]}', "404": "no such campaign"},
)
def campaign_held_outputs_view(request: AuthedHttpRequest, slug: str) -> JsonResponse:
    campaign = _admin_campaign(request, slug)
    rows = campaign_held_outputs(campaign=campaign)
    return JsonResponse(
        {"outputs": [{k: v for k, v in row.items() if k not in PAGE_ONLY} for row in rows]}
    )


HELD_APPROVE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "ids": {"type": "array", "items": {"type": "integer"}, "minItems": 1},
        "all": {"type": "boolean", "description": "approve every held output of the campaign"},
        "mask": {
            "type": "array",
            "items": {
                "oneOf": [
                    {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["part", "start", "end"],
                        "properties": {
                            "part": {"type": "string"},
                            "start": {"type": "integer"},
                            "end": {"type": "integer"},
                        },
                    },
                ]
            },
            "description": "with exactly one id: spans masked for reviewers before it is "
            "approved, each [start, end] in its final answer or {part, start, end} in a text "
            "of its transcript (a part as the list's `texts` names it; offsets in characters)",
        },
    },
}


@api_endpoint(
    ADMIN,
    methods=("POST",),
    summary='Approve held outputs in bulk: {"ids": [...]} or {"all": true}. With one id, '
    '{"mask": [[start, end], ...]} masks those spans of its final answer for reviewers first, '
    '{"part": "transcript/0/steps/1/tool_results/0/result", "start": s, "end": e} a span of '
    "a transcript's text (recorded with the part, who and when). Their review items open once "
    "their other outputs are ready.",
    body={"application/json": {"schema": HELD_APPROVE_SCHEMA}},
    responses={
        "200": '{"approved": [ids], "items_opened": n}',
        "400": "neither ids nor all, both, a mask with more than one id, or a span that does "
        "not fit the output",
        "404": "no such campaign, or an id that is not a held output of it",
        "409": "the output to mask is not held (approved meanwhile)",
    },
)
def campaign_held_outputs_approve(request: AuthedHttpRequest, slug: str) -> JsonResponse:
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


def _approve_masked(
    request: AuthedHttpRequest, campaign: Campaign, ids: list, mask: object
) -> JsonResponse:
    """One output's approve with hand-masked spans."""
    if len(ids) != 1:
        raise ApiError('mask: give exactly one output in "ids"')
    generation = found_or_404(held_outputs(campaign), "held output", pk=ids[0])
    try:
        spans = mask_spans_checked(mask, generation_texts(generation))
        opened = generation_identity_approve(generation=generation, user=request.user, mask=spans)
    except MaskInvalid as exc:
        raise ApiError("nothing approved", errors=exc.errors) from None
    except IdentityNotHeld as exc:
        raise ApiError(str(exc), status=409) from None
    return JsonResponse({"approved": [generation.pk], "items_opened": opened})
