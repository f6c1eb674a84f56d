"""The identity reports page: each report beside the item's texts, approve (with words masked
by hand) or drop with a reason (admins; leads read); and a reviewer's "this answer reveals the
model" on the review page (the arbiter's is on the arbitration page)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import ADMIN, LEAD, REVIEWER, has_role, role_required
from reviews.identity_reports.selectors import campaign_report_counts, identity_reports
from reviews.identity_reports.services import (
    REPORTED,
    NothingToReport,
    ReportNotOpen,
    ResolveInvalid,
    identity_report_resolve,
    reviewer_report,
)
from reviews.models import IdentityReport
from reviews.review.views import next_response, own_assignment
from tasks.blinding.hold import MaskInvalid, generation_texts, mask_spans_of_words
from tasks.models import Campaign, Generation


@role_required(ADMIN, LEAD)
@require_GET
def campaign_identity_reports_view(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    campaign = get_object_or_404(Campaign, slug=slug)
    reports = identity_reports(campaign=campaign)
    context = {
        "campaign": campaign,
        "open": [r for r in reports if r["state"] == IdentityReport.State.OPEN],
        "resolved": [r for r in reports if r["state"] != IdentityReport.State.OPEN][:50],
        "counts": campaign_report_counts(campaign=campaign),
        "is_admin": has_role(request.user, ADMIN),
    }
    return render(request, "reviews/identity_reports.html", context)


def _masks_from_words(request: AuthedHttpRequest, item_id: int) -> dict[int, list]:
    """{generation id: spans} from the page's "mask these words" field of each output."""
    masks = {}
    for generation in Generation.objects.filter(item_outputs__item_id=item_id):
        words = request.POST.get(f"mask-{generation.pk}", "").strip()
        if words:
            masks[generation.pk] = mask_spans_of_words(words, generation_texts(generation))
    return masks


@role_required(ADMIN)
@require_POST
def identity_report_resolve_view(
    request: AuthedHttpRequest, slug: str, report_id: int
) -> HttpResponse:
    campaign = get_object_or_404(Campaign, slug=slug)
    report = get_object_or_404(IdentityReport, campaign=campaign, pk=report_id)
    action = request.POST.get("action", "")
    try:
        masks = _masks_from_words(request, report.item_id) if action == "approve" else None
        identity_report_resolve(
            report=report,
            action=action,
            user=request.user,
            reason=request.POST.get("reason", ""),
            masks=masks,
        )
    except (ResolveInvalid, MaskInvalid) as exc:
        messages.error(request, f"Nothing resolved: {exc}.")
    except ReportNotOpen as exc:
        messages.info(request, str(exc).capitalize() + ".")
    else:
        messages.success(
            request,
            "Approved: the item is back in the queues."
            if action == "approve"
            else "Dropped: the item is out of the campaign and its figures.",
        )
    return redirect("campaign_identity_reports", slug=campaign.slug)


@role_required(REVIEWER)
@require_POST
def review_report_identity(request: AuthedHttpRequest, slug: str, token: str) -> HttpResponse:
    """ "This answer reveals the model": the item leaves every queue; the next one is shown."""
    campaign = get_object_or_404(Campaign, slug=slug)
    own_assignment(request, slug, token)  # someone else's token stays a 404
    try:
        reviewer_report(token=token, reviewer=request.user, note=request.POST.get("note", ""))
    except NothingToReport:
        notice = {"level": "warn", "text": "This item was no longer yours to report."}
    else:
        notice = {"level": "ok", "text": REPORTED}
    return next_response(request, campaign, notice=notice)
