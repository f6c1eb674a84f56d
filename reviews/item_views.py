"""The item page: one task of a campaign for leads and admins, and blinded for its arbiter."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from evalsite.roles import ADMIN, ARBITER, LEAD, role_required
from tasks.models import Campaign

from .item_selectors import arbiter_item, task_detail


@role_required(ADMIN, LEAD)
@require_GET
def campaign_item(request: HttpRequest, slug: str, task_id: str) -> HttpResponse:
    """Task, outputs with their contenders, every review, final values, arbitration, checks."""
    campaign = get_object_or_404(Campaign, slug=slug)
    context = {"campaign": campaign, **task_detail(campaign=campaign, task_id=task_id)}
    return render(request, "reviews/item.html", context)


@role_required(ARBITER)
@require_GET
def arbitration_item(request: HttpRequest, token: str) -> HttpResponse:
    """The arbiter's own item, read-only and blinded (labels A, B; Reviewer 1, 2)."""
    return render(
        request,
        "reviews/arbitration_item.html",
        {"ws": arbiter_item(token=token, arbiter=request.user)},
    )
