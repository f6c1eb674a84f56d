"""Reviewer pages (blind): the campaign's start page, the review page, submit, skip, correct,
the probe question and the heartbeat (the lead's assignments page: assignment_views.py).

Reviewer views only ever pass the plain, blinded dicts from `selectors` to templates.
Assignments are looked up by (token, request.user): someone else's token is a 404.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from functools import cache

from django.contrib import messages
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect, replace_url

from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import REVIEWER, role_required
from reviews import review as services
from reviews.blinding_probe.selectors import pending_probe, probe_question
from reviews.blinding_probe.services import (
    GuessInvalid,
    ProbeGone,
    probe_after_submit,
    probe_answer,
)
from reviews.models import FLAGS, Assignment, ReviewItem
from reviews.review import history as history_selectors
from reviews.review import selectors
from reviews.rubric import Rubric
from reviews.screen import Viewer, rubric_shown
from tasks.blinding import render as blinding
from tasks.blinding.campaign_texts import campaign_identity_terms, instructions_shown
from tasks.models import Campaign

REVIEW_TEMPLATE = "reviews/review.html"
ANSWERS_TEMPLATE = f"{REVIEW_TEMPLATE}#answers"
SKIP_OPTIONS_TEMPLATE = f"{REVIEW_TEMPLATE}#skip_options"

# Blank answer grids already rendered, by campaign and grid input. The grid (rubric x outputs
# x points, preference, flags) is most of the page's template work and is the same for every
# item of a campaign until the reviewer enters something. Emptied when full: there are only
# a few campaigns and label sets per process.
_blank_answers: dict[tuple, str] = {}
BLANK_ANSWERS_MAX = 64


def answers_preview_html(*, campaign: Campaign, terms: tuple[str, ...], labels: list[str]) -> str:
    """The answer grid as a reviewer gets it, blank, for an unsaved campaign's rubric and mode
    and one output per label: the new-campaign form's live preview (tasks/campaigns/rubric_builder.py,
    through tasks.review_side)."""
    wants_scores, wants_preference = campaign.wants()
    screen = {
        # The review page's reading of a campaign's rubric (labels, anchors masked), for a
        # task of one reply (no per-turn questions).
        "rubric": rubric_shown(Rubric.of(campaign), Viewer(terms)) if wants_scores else [],
        "candidates": [{"label": label} for label in labels],
        "preference_choices": [*labels, "tie", "both_bad"] if wants_preference else [],
        "flag_choices": list(FLAGS),
        "wants_preference": wants_preference,
    }
    form = selectors.review_form(screen=screen)
    return render_to_string(
        ANSWERS_TEMPLATE, {"form": form, "screen": {"wants_preference": wants_preference}}
    )


def _answers_html(
    *, campaign: Campaign, screen: dict, entered: dict | None, errors: dict | None
) -> str:
    """The answer grid: with what was entered and its errors, or blank (cached)."""

    def render() -> str:
        form = selectors.review_form(screen=screen, entered=entered, errors=errors)
        context = {"form": form, "screen": {"wants_preference": screen["wants_preference"]}}
        return render_to_string(ANSWERS_TEMPLATE, context)

    if entered or errors:
        return render()
    # The key holds all the grid is made of, so a cached grid is only ever served where the
    # very same grid would be rendered.
    key = (campaign.pk, screen["wants_preference"], selectors.review_form_input(screen))
    html = _blank_answers.get(key)
    if html is None:
        html = render()
        if len(_blank_answers) >= BLANK_ANSWERS_MAX:
            _blank_answers.clear()
        _blank_answers[key] = html
    return html


@cache
def _skip_options() -> str:
    """The skip form's reasons, the same on every page: rendered once."""
    return render_to_string(SKIP_OPTIONS_TEMPLATE, {"skip_reasons": services.SKIP_REASONS})


def _closed_for_good(
    request: AuthedHttpRequest, campaign: Campaign, *, removed: bool
) -> HttpResponse:
    """A campaign this reviewer may no longer review, on one of its pages: say why."""
    return render(
        request,
        "reviews/review_closed.html",
        {
            "campaign": {"slug": campaign.slug, "name": campaign.name},
            "text": services.barred_message(removed=removed),
            "closed_for_good": True,
        },
        status=403,
    )


def own_assignment(request: AuthedHttpRequest, slug: str, token: str) -> Assignment:
    return get_object_or_404(
        Assignment.objects.select_related("item"),
        token=token,
        reviewer=request.user,
        item__campaign__slug=slug,
    )


def _may_review(request: AuthedHttpRequest, campaign: Campaign) -> bool:
    """On the campaign's roster (tasks/campaigns/rosters.py), not removed, and the campaign open."""
    return campaign.on_roster(request.user, REVIEWER) and services.reviewer_may_review(
        campaign=campaign, reviewer=request.user
    )


def _review_url(slug: str, token: str) -> str:
    return reverse("review_page", args=[slug, token])


def _barred(request: AuthedHttpRequest, slug: str, token: str) -> HttpResponse:
    """The reviewer's own item, in a campaign they may no longer review (removed, or it
    closed while they worked): not saved, and the item's page says why. A bare 404 here
    read as a server fault, and "try again" could never succeed."""
    messages.warning(request, "Not saved: this item can no longer be reviewed.")
    url = _review_url(slug, token)
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@dataclass(frozen=True)
class _Shown:
    """What the review page says besides the item: a notice, the answers as the reviewer
    `entered` them with their `errors`, `busy` (every candidate taken concurrently: not
    "finished"), and `correcting`: the reviewer's own submitted review, its answers in
    `entered`, sent to review_correct instead of a submit."""

    notice: dict | None = None
    entered: dict | None = None
    errors: dict | None = None
    busy: bool = False
    correcting: bool = False


def _render_review(
    request: AuthedHttpRequest,
    *,
    campaign: Campaign,
    assignment: Assignment | None,
    page: selectors.ReviewPage | None = None,
    shown: _Shown = _Shown(),
    answer: tuple | None = None,
) -> HttpResponse:
    """The review page, or only its #review region for htmx requests.

    `page` is what review_page already read (task, outputs, progress), `answer` the claim's
    (the item's task and outputs, Claim.answer): neither is read again.
    """
    notice, entered, errors = shown.notice, shown.entered, shown.errors
    busy, correcting = shown.busy, shown.correcting
    progress = (
        {"done": page.done}
        if page is not None
        else selectors.reviewer_progress(campaign=campaign, reviewer=request.user)
    )
    if assignment is not None and not correcting:
        # "Item n of N": this one after those done, of all that can still come to them.
        available = progress.get("available")
        if available is None:
            available = selectors.available_for(campaign=campaign, reviewer=request.user)
        progress = {**progress, "position": progress["done"] + 1}
        progress["total"] = progress["done"] + 1 + available
    context = {
        "campaign": {"slug": campaign.slug, "name": campaign.name},
        "progress": progress,
        "notice": notice,
        "finished": assignment is None and not busy,
        "busy": busy,
        "correcting": correcting,
    }
    if assignment is not None:
        task, generations = (page.task, page.generations) if page else answer or (None, None)
        screen = selectors.review_screen(
            assignment=assignment, campaign=campaign, task=task, generations=generations
        )
        # A conversation's per-turn scores go in its turn blocks (score_turns).
        selectors.turn_questions_attach(screen=screen, entered=entered, errors=errors)
        context.update(
            screen=screen,
            answers=_answers_html(campaign=campaign, screen=screen, entered=entered, errors=errors),
            skip_options=_skip_options(),
            live=assignment.state == Assignment.State.ACTIVE,
            # Replaced by a client-generated key when JavaScript runs; either way a repeated
            # POST of this form carries the same key and is saved once.
            submit_key=secrets.token_urlsafe(12),
            # Heartbeat three times per lease, at most once a minute.
            heartbeat_ms=min(60_000, campaign.lease_minutes * 20_000),
        )
    template = f"{REVIEW_TEMPLATE}#review" if request.htmx else REVIEW_TEMPLATE
    response = render(request, template, context)
    response["Cache-Control"] = "no-store"
    return response


def next_response(
    request: AuthedHttpRequest,
    campaign: Campaign,
    notice: dict | None = None,
    context: services.ClaimContext | None = None,
) -> HttpResponse:
    """Claim the next item and show it (htmx: swap in place, no full reload); a blinding
    probe question waiting for this reviewer comes first. `context`: the claim's context,
    when the view read it already."""
    probe = pending_probe(campaign=campaign, reviewer=request.user)
    if probe is not None:
        if notice:
            messages.success(request, notice["text"])
        url = reverse("review_probe", args=[campaign.slug, probe.token])
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    busy = False
    try:
        claim = services.assignment_claim_next(
            campaign=campaign, reviewer=request.user, context=context
        )
    except services.NotReviewable:
        if services.reviewer_removed(campaign=campaign, reviewer=request.user):
            # Removed since their page loaded (a start page, "Try again"): its entry says so.
            url = reverse("review_campaign", args=[campaign.slug])
            return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
        raise Http404 from None
    except services.ClaimBusy:
        # Not "finished": every candidate was taken concurrently; the reviewer retries.
        busy, claim = True, None
        text = "Many reviewers are claiming items right now; try again in a moment."
        notice = {"level": "warn", "text": f"{notice['text']} {text}" if notice else text}
    if not request.htmx:
        if notice:
            (messages.warning if notice["level"] == "warn" else messages.success)(
                request, notice["text"]
            )
        if claim is None:
            return redirect("review_campaign", campaign.slug)
        return redirect(_review_url(campaign.slug, claim.assignment.token))
    response = _render_review(
        request,
        campaign=campaign,
        assignment=claim.assignment if claim else None,
        shown=_Shown(notice=notice, busy=busy),
        # The new item's task and outputs as the claim read them (None when it resumed one).
        answer=claim.answer if claim else None,
    )
    target = (
        _review_url(campaign.slug, claim.assignment.token)
        if claim
        else reverse("review_campaign", args=[campaign.slug])
    )
    return replace_url(response, target)


@never_cache  # live counts: Back must not show them from before the last review
@role_required(REVIEWER)
@require_GET
def reviewer_home(request: AuthedHttpRequest) -> HttpResponse:
    campaigns = selectors.reviewer_campaigns(reviewer=request.user)
    return render(request, "reviews/reviewer_home.html", {"campaigns": campaigns})


@never_cache  # live counts: Back must not show them from before the last review
@role_required(REVIEWER)
@require_GET
def review_campaign(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    """A campaign's entry: resume the open item, or offer to start, or say the queue is done.
    A campaign whose roster does not hold the reviewer is a 404, as one that does not exist."""
    campaign = get_object_or_404(Campaign.objects.visible_to(request.user, REVIEWER), slug=slug)
    if not services.reviewer_may_review(campaign=campaign, reviewer=request.user):
        # Removed: a bookmark or an open tab brings them here; say why, not a bare 404.
        if services.reviewer_removed(campaign=campaign, reviewer=request.user):
            return _closed_for_good(request, campaign, removed=True)
        raise Http404
    current = (
        Assignment.objects.filter(
            reviewer=request.user, campaign=campaign, state=Assignment.State.ACTIVE
        )
        .order_by("created_at", "pk")
        .first()
    )
    if current is not None:
        return redirect(_review_url(slug, current.token))
    progress = selectors.reviewer_progress(campaign=campaign, reviewer=request.user)
    return render(
        request,
        "reviews/review_start.html",
        {
            "campaign": {"slug": campaign.slug, "name": campaign.name},
            "progress": progress,
            "instructions": instructions_shown(campaign, campaign_identity_terms(campaign)),
        },
    )


@role_required(REVIEWER)
@require_POST
def review_next(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    # The claim itself refuses a campaign that is not open to this reviewer (-> 404); one
    # whose roster does not hold them is refused before it. The campaign and the reviewer's
    # standing are read once, here, and passed to the claim.
    context = services.claim_context(reviewer=request.user, slug=slug)
    campaign = context.campaign
    if campaign is None or not campaign.on_roster(request.user, REVIEWER, named=context.named):
        raise Http404
    return next_response(request, campaign, context=context)


@role_required(REVIEWER)
@require_GET
def review_page(request: AuthedHttpRequest, slug: str, token: str) -> HttpResponse:
    page = selectors.review_page_data(slug=slug, token=token, reviewer=request.user)
    if page is None or not page.campaign.on_roster(request.user, REVIEWER):
        raise Http404
    assignment, campaign = page.assignment, page.campaign
    if not page.may_review:
        # The reviewer's own link, to a campaign they may no longer review: say why.
        return _closed_for_good(request, campaign, removed=page.removed)
    if assignment.state != Assignment.State.ACTIVE:
        return render(
            request,
            "reviews/review_closed.html",
            {
                "campaign": {"slug": campaign.slug, "name": campaign.name},
                "text": services.assignment_state_message(assignment),
            },
        )
    return _render_review(request, campaign=campaign, assignment=assignment, page=page)


def _submitted_data(request: AuthedHttpRequest, labels: list[str], dims: list[str]) -> dict:
    post = request.POST
    scores = {
        label: {
            dim: post.get(f"score-{label}-{dim}", "")
            for dim in dims
            if post.get(f"score-{label}-{dim}", "") != ""
        }
        for label in labels
    }
    return {
        "scores": {label: values for label, values in scores.items() if values},
        "preference": post.get("preference", ""),
        "flags": {
            label: post.getlist(f"flag-{label}")
            for label in labels
            if post.getlist(f"flag-{label}")
        },
        "comment": post.get("comment", ""),
        "seconds_spent": post.get("seconds_spent", ""),
    }


@role_required(REVIEWER)
@require_POST
def review_submit(request: AuthedHttpRequest, slug: str, token: str) -> HttpResponse:
    # The assignment with its item and campaign and the reviewer's removal, in one read that
    # the submit uses too.
    try:
        assignment, removed = services.reviewer_assignment(token=token, reviewer=request.user)
    except Assignment.DoesNotExist:
        raise Http404 from None  # someone else's token stays a 404
    campaign = assignment.item.campaign
    if campaign.slug != slug:
        raise Http404
    if not (
        campaign.on_roster(request.user, REVIEWER)
        and campaign.status in services.REVIEWABLE
        and not removed
    ):
        return _barred(request, slug, token)
    labels = blinding.labels(len(assignment.order))
    # The item's rubric: a conversation's per-turn scores (score_turns) are fields too.
    data = _submitted_data(request, labels, Rubric.for_item(assignment.item).keys)
    try:
        result = services.assignment_submit(
            assignment=assignment,
            reviewer=request.user,
            key=request.POST.get("submit_key", ""),
            data=data,
        )
    except services.ClaimBusy:
        notice = {
            "level": "warn",
            "text": "Busy right now: not saved yet. Submit again; it will never be saved twice.",
        }
        return _render_review(
            request,
            campaign=campaign,
            assignment=assignment,
            shown=_Shown(notice=notice, entered=data),
        )
    if result.code == "invalid":
        # htmx 2 swaps only 2xx: the form comes back with its errors and status 200.
        notice = {"level": "error", "text": "Not saved yet: please answer the marked questions."}
        return _render_review(
            request,
            campaign=campaign,
            assignment=assignment,
            shown=_Shown(notice=notice, entered=data, errors=result.errors),
        )
    if result.code in ("saved", "saved_late"):
        probe_after_submit(campaign=campaign, reviewer=request.user, item_id=assignment.item_id)
    level = "ok" if result.ok else "warn"
    return next_response(request, campaign, notice={"level": level, "text": result.message})


@never_cache  # corrections change it
@role_required(REVIEWER)
@require_GET
def review_history(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    """The reviewer's own submitted reviews in a campaign, each correctable until settled."""
    campaign = get_object_or_404(Campaign.objects.visible_to(request.user, REVIEWER), slug=slug)
    may_review = services.reviewer_may_review(campaign=campaign, reviewer=request.user)
    page = history_selectors.reviewer_history(
        campaign=campaign,
        reviewer=request.user,
        page=request.GET.get("page", 1),
        may_review=may_review,
    )
    return render(
        request,
        "reviews/review_history.html",
        {
            "campaign": {"slug": campaign.slug, "name": campaign.name},
            "page": page,
            "may_review": may_review,
        },
    )


def _to_history(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    url = reverse("review_history", args=[slug])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@role_required(REVIEWER)
@require_http_methods(["GET", "POST"])
def review_correct(request: AuthedHttpRequest, slug: str, token: str) -> HttpResponse:
    """A submitted review, its answers filled in, to correct until its item is settled."""
    campaign = get_object_or_404(Campaign.objects.visible_to(request.user, REVIEWER), slug=slug)
    assignment = own_assignment(request, slug, token)  # someone else's token stays a 404
    if assignment.state == Assignment.State.ACTIVE:
        return redirect(_review_url(slug, token))  # not submitted yet: the item itself
    if assignment.state != Assignment.State.SUBMITTED:
        raise Http404
    if not _may_review(request, campaign):
        messages.warning(request, "This campaign is closed to you: reviews can no longer change.")
        return _to_history(request, slug)
    assignment.item.campaign = campaign
    if request.method == "POST":
        labels = blinding.labels(len(assignment.order))
        data = _submitted_data(request, labels, Rubric.for_item(assignment.item).keys)
        result = services.review_correct(token=token, reviewer=request.user, data=data)
        if result.code == "invalid":
            notice = {
                "level": "error",
                "text": "Not saved yet: please answer the marked questions.",
            }
            return _render_review(
                request,
                campaign=campaign,
                assignment=assignment,
                shown=_Shown(notice=notice, entered=data, errors=result.errors, correcting=True),
            )
        (messages.success if result.ok else messages.warning)(request, result.message)
        return _to_history(request, slug)
    if assignment.item.state != ReviewItem.State.OPEN:
        messages.warning(request, services.settled_message(assignment.item.state))
        return _to_history(request, slug)
    entered = history_selectors.review_entered(assignment)
    return _render_review(
        request,
        campaign=campaign,
        assignment=assignment,
        shown=_Shown(entered=entered, correcting=True),
    )


@role_required(REVIEWER)
@require_http_methods(["GET", "POST"])
def review_probe(request: AuthedHttpRequest, slug: str, token: str) -> HttpResponse:
    """The blinding probe's question (reviews.blinding_probe): answered, the next item."""
    campaign = get_object_or_404(Campaign.objects.visible_to(request.user, REVIEWER), slug=slug)
    probe = pending_probe(campaign=campaign, reviewer=request.user)
    if probe is None or probe.token != token:
        raise Http404
    error = ""
    if request.method == "POST":
        try:
            probe_answer(token=token, reviewer=request.user, guess=request.POST.get("guess", ""))
        except ProbeGone:
            raise Http404 from None
        except GuessInvalid:
            error = "Choose one of the names."
        else:
            return next_response(request, campaign, notice={"level": "ok", "text": "Thank you."})
    context = {
        "campaign": campaign,
        "question": probe_question(probe=probe, campaign=campaign),
        "error": error,
    }
    return render(request, "reviews/probe.html", context)


@role_required(REVIEWER)
@require_POST
def review_skip(request: AuthedHttpRequest, slug: str, token: str) -> HttpResponse:
    campaign = get_object_or_404(Campaign, slug=slug)
    own_assignment(request, slug, token)  # someone else's token stays a 404
    if not _may_review(request, campaign):
        return _barred(request, slug, token)
    code = request.POST.get("reason", "")
    detail = request.POST.get("detail", "").strip()
    reason = services.SKIP_REASONS.get(code, "")
    if detail:
        reason = f"{reason}: {detail}" if reason else detail
    if not reason:
        assignment = own_assignment(request, slug, token)
        notice = {"level": "error", "text": "Choose a reason to skip this item."}
        return _render_review(
            request, campaign=campaign, assignment=assignment, shown=_Shown(notice=notice)
        )
    skipped = services.assignment_skip(token=token, reviewer=request.user, reason=reason)
    text = (
        "Skipped; you will not get this item again."
        if skipped
        else "This item was no longer yours to skip."
    )
    return next_response(
        request, campaign, notice={"level": "ok" if skipped else "warn", "text": text}
    )


@role_required(REVIEWER)
@require_POST
def review_heartbeat(request: AuthedHttpRequest, slug: str, token: str) -> JsonResponse:
    campaign = get_object_or_404(Campaign, slug=slug)
    own_assignment(request, slug, token)
    barred = services.reviewer_barred_message(campaign=campaign, reviewer=request.user)
    if not campaign.on_roster(request.user, REVIEWER):
        barred = services.barred_message(removed=True)  # taken off the roster
    if barred:
        # The page's script shows the message (a 404 page here read as a lost connection).
        return JsonResponse({"ok": False, "message": barred}, status=409)
    try:
        expires = services.assignment_heartbeat(token=token, reviewer=request.user)
    except services.LeaseGone as gone:
        return JsonResponse({"ok": False, "message": str(gone)}, status=409)
    return JsonResponse({"ok": True, "lease_expires_at": expires.isoformat()})
