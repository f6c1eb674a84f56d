"""The identity reports page: each report beside the item's texts, approve (with words masked
by hand) or drop with a reason (admins; leads read)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from evalsite.roles import ADMIN, LEAD, has_role, role_required
from reviews.identity_reports.selectors import campaign_report_counts, identity_reports
from reviews.identity_reports.services import ReportNotOpen, ResolveInvalid, identity_report_resolve
from reviews.models import IdentityReport, ItemOutput
from tasks.blinding.hold import MaskInvalid, mask_spans_of_words
from tasks.models import Campaign


@role_required(ADMIN, LEAD)
@require_GET
def campaign_identity_reports_view(request: HttpRequest, slug: str) -> HttpResponse:
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


def _masks_from_words(request: HttpRequest, item_id: int) -> dict[int, list]:
    """{generation id: spans} from the page's "mask these words" field of each output."""
    masks = {}
    for gid, text in ItemOutput.objects.filter(item_id=item_id).values_list(
        "generation_id", "generation__output"
    ):
        words = request.POST.get(f"mask-{gid}", "").strip()
        if words:
            masks[gid] = mask_spans_of_words(words, text or "")
    return masks


@role_required(ADMIN)
@require_POST
def identity_report_resolve_view(request: HttpRequest, slug: str, report_id: int) -> HttpResponse:
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
