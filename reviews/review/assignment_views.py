"""The admin/lead view of assignment state: the campaign's assignments page, releasing a lease,
removing a reviewer from a campaign (and letting them back)."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from evalsite.htmx import AuthedHttpRequest, wants_fragment
from evalsite.roles import ADMIN, LEAD, REVIEWER, role_required
from evalsite.text import counted
from reviews import review as services
from reviews.models import Assignment
from reviews.review import selectors
from tasks.campaigns.rosters import roster_exclude, roster_include
from tasks.models import Campaign


@role_required(ADMIN, LEAD)
@require_GET
def campaign_assignments(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    campaign = get_object_or_404(Campaign, slug=slug)
    try:
        page = int(request.GET.get("page", "1"))
    except ValueError:
        page = 1
    state = request.GET.get("state", "")
    overview = selectors.assignment_overview(campaign=campaign, page=page, item_state=state)
    context = {"campaign": campaign, **overview}
    template = (
        "reviews/assignments.html#items" if wants_fragment(request) else "reviews/assignments.html"
    )
    return render(request, template, context)


def _back_to_assignments(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    """Back to the page as the user left it: the item filter and page it pushed into its URL."""
    url = reverse("campaign_assignments", args=[slug])
    came_from = urlsplit(request.headers.get("Referer", ""))
    if came_from.path == url:
        kept = [(k, v) for k, v in parse_qsl(came_from.query) if k in ("state", "page")]
        url += f"?{urlencode(kept)}" if kept else ""
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@role_required(ADMIN, LEAD)
@require_POST
def assignment_release(request: AuthedHttpRequest, slug: str, token: str) -> HttpResponse:
    campaign = get_object_or_404(Campaign, slug=slug)
    try:
        released = services.assignment_release(campaign=campaign, token=token)
    except Assignment.DoesNotExist:
        raise Http404 from None
    if released:
        messages.success(request, "Lease released; the slot is back in the pool.")
    else:
        messages.warning(request, "That lease had already ended.")
    return _back_to_assignments(request, slug)


@role_required(ADMIN, LEAD)
@require_POST
def reviewer_remove(request: AuthedHttpRequest, slug: str, user_id: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign, slug=slug)
    reviewer = get_object_or_404(get_user_model(), pk=user_id)
    if request.POST.get("restore"):
        services.reviewer_restore_to_campaign(campaign=campaign, reviewer=reviewer)
        # and back on the campaign's reviewer list, where it names its reviewers
        roster_include(campaign=campaign, user=reviewer, role=REVIEWER)
        messages.success(request, f"{reviewer.get_username()} may review this campaign again.")
    else:
        n = services.reviewer_remove_from_campaign(
            campaign=campaign, reviewer=reviewer, by=request.user
        )
        roster_exclude(campaign=campaign, user=reviewer, role=REVIEWER)
        messages.success(
            request,
            f"{reviewer.get_username()} was removed from this campaign; {counted(n, 'open lease')} returned to the pool.",
        )
    return _back_to_assignments(request, slug)
