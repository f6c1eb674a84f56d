"""The reviewer loop over JSON for scripts (docs/reviewing.md "API"): next -> submit, blinded."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpResponse, JsonResponse
from django.urls import reverse

from evalsite.api import ApiError, api_endpoint, json_body, no_content
from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import REVIEWER
from reviews import review as services
from reviews.blinding_probe.selectors import probe_question
from reviews.blinding_probe.services import (
    GuessInvalid,
    ProbeGone,
    probe_after_submit,
    probe_answer,
)
from reviews.models import COMMENT_MAX_CHARS, Assignment
from reviews.review import selectors

SUBMIT_BODY = {
    "application/json": {
        "schema": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "scores": {
                    "type": "object",
                    "description": 'per label, per rubric dimension: {"A": {"accuracy": 4}}; "na" or null '
                    "where the dimension allows N/A; whole numbers on nominal and ordinal dimensions; "
                    'a conversation scored turn by turn also has each turn\'s key ("turn_quality@1", '
                    '...: the item\'s rubric entries with a "turn")',
                    "additionalProperties": {"type": "object"},
                },
                "preference": {
                    "type": "string",
                    "description": 'a label ("A", "B", ...), "tie" or "both_bad"',
                },
                "flags": {
                    "type": "object",
                    "description": 'per label: ["hallucination", "refusal", "format_violation", "unsafe", "identity_leak"]',
                },
                "comment": {"type": "string", "maxLength": COMMENT_MAX_CHARS},
                "seconds_spent": {"type": "integer"},
                "key": {
                    "type": "string",
                    "description": "client-generated idempotency key (or the Idempotency-Key header), "
                    "at most 64 characters: repeat it when retrying so a review is never saved twice",
                    "maxLength": 64,
                },
            },
        },
        "example": {
            "scores": {"A": {"accuracy": 4}, "B": {"accuracy": 5}},
            "preference": "B",
            "flags": {"B": ["hallucination"]},
            "comment": "",
            "key": "3f6c0c1e-retry-safe",
        },
    }
}

NOT_OPEN = "no such campaign open to you"
SUBMIT_STATUS = {
    "saved": 201,
    "saved_late": 201,
    "duplicate": 200,
    "key_reused": 409,
    "invalid": 400,
    "already_submitted": 409,
    "reassigned": 409,
    "skipped": 409,
    "released": 409,
}


@api_endpoint(
    REVIEWER,
    methods=("POST",),
    summary="Claim the next item to review in a campaign (or get back the one you hold).\n\n"
    "Returns an assignment token, the blinded task, the candidates as labels and text only, the rubric, "
    "and when the lease ends. 204 when nothing is left for you. Each candidate has its final "
    "`text` and its `transcript` (tool calls and results, turn by turn; [] for a plain output), "
    "masked: docs/api.md, Transcripts.",
    responses={
        "200": "the assignment: token, task (with `turns` for a conversation), candidates "
        "({label, text, transcript}), rubric, preference_choices, flags, lease_expires_at",
        "204": "nothing left to review for you in this campaign",
        "404": "no such campaign open to you",
        "503": "every candidate item was taken concurrently; retry",
    },
)
def campaign_next(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    context = services.claim_context(reviewer=request.user, slug=slug)
    # Not on the campaign's reviewer roster: the same 404 as a campaign that does not exist.
    campaign = context.campaign
    if campaign is None or not campaign.on_roster(request.user, REVIEWER, named=context.named):
        raise ApiError(NOT_OPEN, status=404)
    try:
        claim = services.assignment_claim_next(reviewer=request.user, context=context)
    except services.NotReviewable:
        raise ApiError(NOT_OPEN, status=404) from None
    except services.ClaimBusy:
        raise ApiError("busy: every candidate was taken concurrently; retry", status=503) from None
    if claim is None:
        return no_content()
    task, generations = claim.answer or (None, None)  # read by the claim unless resumed
    screen = selectors.review_screen(
        assignment=claim.assignment,
        campaign=claim.campaign,
        task=task,
        generations=generations,
        html=False,
    )
    payload = selectors.review_api_payload(
        screen=screen,
        resumed=claim.resumed,
        submit_url=reverse("api_assignment_submit", args=[claim.assignment.token]),
    )
    payload["heartbeat_url"] = reverse("api_assignment_heartbeat", args=[claim.assignment.token])
    return JsonResponse(payload)


@api_endpoint(
    REVIEWER,
    methods=("POST",),
    summary="Keep your lease on an assignment while you work on it.\n\n"
    "Extends the lease by the campaign's lease length from now, up to a cap counted from the "
    "claim (so an abandoned client cannot hold an item for ever). Send it every few minutes "
    "while a review is in progress, as the review page does.",
    responses={
        "200": '{"ok": true, "lease_expires_at": ...}',
        "404": "no such assignment of yours",
        "409": "no live lease: it ran out (submitting may still work if nobody took the slot), "
        "or the assignment was submitted, skipped or released (the message says which)",
    },
)
def assignment_heartbeat(request: AuthedHttpRequest, token: str) -> JsonResponse:
    try:
        expires = services.assignment_heartbeat(token=token, reviewer=request.user)
    except Assignment.DoesNotExist:
        raise ApiError("no such assignment of yours", status=404) from None
    except services.LeaseGone as gone:
        raise ApiError(str(gone), status=409) from None
    return JsonResponse({"ok": True, "lease_expires_at": expires.isoformat()})


@api_endpoint(
    REVIEWER,
    methods=("POST",),
    summary="Submit the review for an assignment.\n\n"
    "Idempotent with a client key: repeating a submit with the same key returns 200 and status "
    '"duplicate" without saving twice; the same key with different answers returns 409 '
    '"key_reused" and the first answers stand. A submit after your lease was given to someone else returns 409 '
    '"reassigned". A lease that ran out stays yours until the minute sweep (or a claim) '
    'returns it: until then a submit is "saved"; after it, if nobody took the slot, it is '
    'saved all the same ("saved_late").',
    body=SUBMIT_BODY,
    query={"Idempotency-Key": {"description": "the body's `key`, as a header", "in": "header"}},
    responses={
        "201": 'saved: {"status": "saved"|"saved_late", "message": ...}',
        "200": 'already saved with this key: {"status": "duplicate"}',
        "400": 'invalid: {"error": ..., "errors": {"scores.A.accuracy": "required", ...}}; '
        "an unknown or wrongly typed field is an error too",
        "404": "no such assignment of yours",
        "409": "already submitted with another key, this key with different answers, skipped, "
        "released, or reassigned",
        "503": "the item kept changing while saving; retry with the same key",
    },
)
def assignment_submit(request: AuthedHttpRequest, token: str) -> JsonResponse:
    data = json_body(request)
    # The key stays in `data`: the service refuses one that is not a string with the rest.
    key = data.get("key")
    key = (key if isinstance(key, str) else "") or request.headers.get("Idempotency-Key", "")
    try:
        result = services.assignment_submit(token=token, reviewer=request.user, key=key, data=data)
    except Assignment.DoesNotExist:
        raise ApiError("no such assignment of yours", status=404) from None
    except services.ClaimBusy:
        raise ApiError(
            "busy: retry with the same key (it will not be saved twice)", status=503
        ) from None
    status = SUBMIT_STATUS[result.code]
    if result.ok:
        body: dict[str, object] = {"status": result.code, "message": result.message}
        probe = _probe_after(result, reviewer=request.user)
        if probe is not None:
            body["blinding_probe"] = probe
    else:
        body = {"error": result.message, "status": result.code}
        if result.errors:
            body["errors"] = result.errors
    return JsonResponse(body, status=status)


def _probe_after(result: services.SubmitResult, *, reviewer: User) -> dict | None:
    """A saved review that was the reviewer's Nth in a campaign with a blinding probe: the
    question (reviews.blinding_probe), with where to answer it."""
    if result.code not in ("saved", "saved_late"):
        return None
    assignment = result.assignment  # read by the submit with its item and campaign
    campaign = assignment.item.campaign
    probe = probe_after_submit(campaign=campaign, reviewer=reviewer, item_id=assignment.item_id)
    if probe is None:
        return None
    question = probe_question(probe=probe, campaign=campaign)
    return {
        "question": "Which contender do you think wrote this answer?",
        "text": question["text"],
        "choices": question["choices"],
        "answer_url": reverse("api_blinding_probe_answer", args=[probe.token]),
    }


@api_endpoint(
    REVIEWER,
    methods=("POST",),
    summary="Answer a blinding-probe question (a submit's `blinding_probe`): which contender "
    'you think wrote the answer it showed: {"guess": "<one of its choices>"}.',
    body={
        "application/json": {
            "schema": {
                "type": "object",
                "required": ["guess"],
                "additionalProperties": False,
                "properties": {"guess": {"type": "string"}},
            }
        }
    },
    responses={
        "200": '{"ok": true}',
        "400": "guess is not one of the question's choices",
        "404": "no open question of yours under this token",
    },
)
def blinding_probe_answer(request: AuthedHttpRequest, token: str) -> JsonResponse:
    data = json_body(request)
    try:
        probe_answer(token=token, reviewer=request.user, guess=data.get("guess"))
    except ProbeGone as exc:
        raise ApiError(str(exc), status=404) from None
    except GuessInvalid as exc:
        raise ApiError(str(exc)) from None
    return JsonResponse({"ok": True})
