"""Identity reports over JSON: reviewers and arbiters report, admins resolve, leads read."""

from __future__ import annotations

from django.http import JsonResponse

from evalsite.api import ApiError, api_endpoint, found_or_404, json_body
from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import ADMIN, ARBITER, LEAD, REVIEWER
from reviews.identity_reports.selectors import campaign_report_counts, identity_reports
from reviews.identity_reports.services import (
    NOTE_MAX_CHARS,
    REPORTED,
    NothingToReport,
    ReportNotOpen,
    ResolveInvalid,
    arbiter_report,
    identity_report_resolve,
    masks_checked,
    reviewer_report,
)
from reviews.models import IdentityReport
from tasks.models import Campaign

REPORT_BODY = {
    "application/json": {
        "schema": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"note": {"type": "string", "maxLength": NOTE_MAX_CHARS}},
        }
    }
}


def _note(request: AuthedHttpRequest) -> str:
    data = json_body(request)
    unknown = sorted(set(data) - {"note"})
    if unknown:
        raise ApiError(f"unknown keys: {', '.join(unknown)}")
    note = data.get("note", "")
    if not isinstance(note, str):
        raise ApiError("note: must be a string")
    return note


@api_endpoint(
    REVIEWER,
    methods=("POST",),
    summary="Report that this item's answer reveals which model wrote it, with an optional "
    "note. The item leaves every queue at once (your lease on it ends) until an admin "
    "resolves the report; your review of it, if any, is kept.",
    body=REPORT_BODY,
    responses={
        "201": '{"reported": true, "message": ...}',
        "400": "a note that is not a string, or an unknown key",
        "404": "no such assignment of yours in review",
    },
)
def assignment_report_identity(request: AuthedHttpRequest, token: str) -> JsonResponse:
    note = _note(request)
    try:
        reviewer_report(token=token, reviewer=request.user, note=note)
    except NothingToReport as exc:
        raise ApiError(str(exc), status=404) from None
    return JsonResponse({"reported": True, "message": REPORTED}, status=201)


@api_endpoint(
    ARBITER,
    methods=("POST",),
    summary="Report that the disputed item's answer reveals which model wrote it, with an "
    "optional note: the dispute goes back and waits, out of every queue, until an admin "
    "resolves the report.",
    body=REPORT_BODY,
    responses={
        "201": '{"reported": true, "message": ...}',
        "400": "a note that is not a string, or an unknown key",
        "404": "no such arbitration of yours in progress",
    },
)
def arbitration_report_identity(request: AuthedHttpRequest, token: str) -> JsonResponse:
    note = _note(request)
    try:
        arbiter_report(token=token, arbiter=request.user, note=note)
    except NothingToReport as exc:
        raise ApiError(str(exc), status=404) from None
    return JsonResponse({"reported": True, "message": REPORTED}, status=201)


@api_endpoint(
    ADMIN,
    LEAD,
    summary="A campaign's identity reports, newest first (?state=open for the open ones): "
    "who reported which item and why, the item's outputs as written and as reviewers saw "
    "them, and how each was resolved; with the counts by state.",
    query={
        "state": {
            "description": "only reports in this state",
            "enum": ["open", "approved", "dropped"],
        }
    },
    responses={
        "200": '{"counts": {...}, "reports": [...]}',
        "400": "state is not open, approved or dropped",
        "404": "no such campaign",
    },
)
def campaign_identity_reports(request: AuthedHttpRequest, slug: str) -> JsonResponse:
    campaign = found_or_404(Campaign.objects.all(), "campaign", slug=slug)
    state = request.GET.get("state") or None
    if state is not None and state not in IdentityReport.State.values:
        raise ApiError("state: must be open, approved or dropped")
    return JsonResponse(
        {
            "counts": campaign_report_counts(campaign=campaign),
            "reports": identity_reports(campaign=campaign, state=state),
        }
    )


RESOLVE_SCHEMA = {
    "type": "object",
    "required": ["action"],
    "additionalProperties": False,
    "properties": {
        "action": {"type": "string", "enum": ["approve", "drop"]},
        "reason": {"type": "string", "description": "required to drop: why"},
        "mask": {
            "type": "object",
            "description": 'approve only: {"<output id>": [[start, end], ...]} spans masked '
            'by hand first, each [start, end] in the final answer or {"part", "start", "end"} '
            "in a text of its transcript (parts as the held outputs list names them)",
        },
    },
}


@api_endpoint(
    ADMIN,
    methods=("POST",),
    summary="Resolve an identity report (and every open report of the same item): approve "
    "returns the item to the queues, optionally after masking spans of its outputs by hand; "
    "drop takes it out of the campaign and its figures, with the reason.",
    body={"application/json": {"schema": RESOLVE_SCHEMA}},
    responses={
        "200": '{"resolved": n, "state": "approved"|"dropped"}',
        "400": "invalid: every problem in errors",
        "404": "no such campaign, or no such report in it",
        "409": "the report was resolved already",
    },
)
def identity_report_resolve_api(
    request: AuthedHttpRequest, slug: str, report_id: int
) -> JsonResponse:
    campaign = found_or_404(Campaign.objects.all(), "campaign", slug=slug)
    report = found_or_404(IdentityReport.objects.filter(campaign=campaign), "report", pk=report_id)
    data = json_body(request)
    unknown = sorted(set(data) - {"action", "reason", "mask"})
    try:
        if unknown:
            raise ResolveInvalid([f"unknown keys: {', '.join(unknown)}"])
        if not isinstance(data.get("reason", ""), str):
            raise ResolveInvalid(["reason: must be a string"])
        masks = None
        if data.get("mask") is not None:
            if data.get("action") != "approve":
                raise ResolveInvalid(["mask: only with approve"])
            masks = masks_checked(data["mask"], item_id=report.item_id)
        resolved = identity_report_resolve(
            report=report,
            action=data.get("action"),
            user=request.user,
            reason=data.get("reason", ""),
            masks=masks,
        )
    except ResolveInvalid as exc:
        raise ApiError("nothing resolved", errors=exc.errors) from None
    except ReportNotOpen as exc:
        raise ApiError(str(exc), status=409) from None
    state = "approved" if data["action"] == "approve" else "dropped"
    return JsonResponse({"resolved": resolved, "state": state})
