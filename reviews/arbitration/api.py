"""Arbiter JSON API: the same loop as the reviewer's, blinded the same way (labels, no ids)."""

from __future__ import annotations

from django.http import HttpResponse, JsonResponse
from django.urls import reverse

from evalsite.api import ApiError, api_endpoint, found_or_404, json_body, no_content
from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import ARBITER
from reviews.arbitration.selectors import (
    arbitration_final_json,
    arbitration_workspace,
    workspace_json,
)
from reviews.arbitration.services import (
    LEASE_LAPSED,
    RESOLVE_FIELDS,
    AlreadyResolved,
    ArbitrationGone,
    LeaseGone,
    ResolveInvalid,
    arbitration_claim_next,
    arbitration_heartbeat,
    arbitration_resolve,
)
from tasks.models import Campaign

RESOLVE_BODY = {
    "application/json": {
        "schema": {
            "type": "object",
            "required": ["note"],
            "additionalProperties": False,
            "properties": {
                "scores": {
                    "type": "object",
                    "description": '{"A": {"accuracy": 4}}; null or "na" = N/A; a new value on a '
                    "nominal or ordinal dimension is a whole number (an agreed value may be kept "
                    "as it is)",
                },
                "preference": {"type": "string", "description": "an output label, tie or both_bad"},
                "flags": {
                    "type": "object",
                    "description": '{"A": ["hallucination"]}: the final flags of that output',
                },
                "note": {"type": "string"},
            },
        }
    }
}


@api_endpoint(
    ARBITER,
    methods=("POST",),
    summary="Claim (or resume) the next disputed item: token, blinded task and candidates, rubric, "
    "the reviews mapped to the same labels and what is disputed. 204 when nothing is left. "
    "Candidates carry their masked `transcript` as in the reviewer's next (docs/api.md, "
    "Transcripts).",
    responses={"200": "an arbitration", "204": "nothing left for you", "404": "no such campaign"},
)
def arbitration_next(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    # Not on the campaign's arbiter roster: the same 404 as a campaign that does not exist.
    campaign = found_or_404(
        Campaign.objects.visible_to(request.user, ARBITER), "campaign", slug=slug
    )
    arbitration = arbitration_claim_next(campaign=campaign, arbiter=request.user)
    if arbitration is None:
        return no_content()
    payload = workspace_json(arbitration_workspace(arbitration=arbitration))
    payload["resolve_url"] = reverse("api_arbitration_resolve", args=[payload["token"]])
    payload["heartbeat_url"] = reverse("api_arbitration_heartbeat", args=[payload["token"]])
    return JsonResponse(payload)


@api_endpoint(
    ARBITER,
    methods=("POST",),
    summary="Keep your lease on a claimed arbitration while you work on it: the lease is "
    "extended by the campaign's lease length from now, up to a cap counted from the claim.",
    responses={
        "200": '{"ok": true, "lease_expires_at": ...}',
        "404": "unknown token, or reassigned after the lease",
        "409": "the lease already ran out (resolving may still work if no other arbiter took it)",
    },
)
def arbitration_heartbeat_api(request: AuthedHttpRequest, token: str) -> JsonResponse:
    try:
        expires = arbitration_heartbeat(token=token, arbiter=request.user)
    except ArbitrationGone:
        raise ApiError(ArbitrationGone.message, status=404) from None
    except LeaseGone as gone:
        raise ApiError(str(gone), status=409) from None
    if expires is None:
        raise ApiError(LEASE_LAPSED, status=409)
    return JsonResponse({"ok": True, "lease_expires_at": expires.isoformat()})


@api_endpoint(
    ARBITER,
    methods=("POST",),
    summary="Resolve a claimed arbitration: values for at least every disputed part, and a note. "
    "Other values correct agreed parts (recorded as corrections). Repeating it (a retry) returns "
    "the stored result; other values after it was resolved are refused (409).",
    body=RESOLVE_BODY,
    responses={
        "200": 'resolved; "already_resolved": true for a repeat of the resolve that settled it',
        "400": "invalid: every problem in errors, keyed by field",
        "404": "unknown token, or reassigned after the lease",
        "409": "you already resolved it with other values: these were not saved",
    },
)
def arbitration_resolve_api(request: AuthedHttpRequest, token: str) -> JsonResponse:
    data = json_body(request)
    try:
        # Values are passed as sent: the service reports every wrong type with the rest.
        arbitration, created = arbitration_resolve(
            token=token,
            arbiter=request.user,
            scores=data.get("scores"),
            preference=data.get("preference"),
            flags=data.get("flags"),
            note=data.get("note"),
            unknown_fields=tuple(k for k in data if k not in RESOLVE_FIELDS),
        )
    except ArbitrationGone:
        raise ApiError(ArbitrationGone.message, status=404) from None
    except AlreadyResolved:
        raise ApiError(AlreadyResolved.message, status=409, already_resolved=True) from None
    except ResolveInvalid as exc:
        raise ApiError("invalid resolution", errors=exc.errors) from None
    return JsonResponse(
        {**arbitration_final_json(arbitration=arbitration), "already_resolved": not created}
    )
