"""The item page: one task of a campaign for leads and admins, and blinded for its arbiter."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import ADMIN, ARBITER, LEAD, has_role, role_required
from reviews.comments import CommentInvalid, item_comment_add, item_comments
from reviews.items.selectors import arbiter_item, task_detail
from reviews.models import Arbitration, ReviewItem
from tasks.models import Campaign

THREAD = "reviews/_item_comments.html"


@role_required(ADMIN, LEAD)
@require_GET
def campaign_item(request: AuthedHttpRequest, slug: str, task_id: str) -> HttpResponse:
    """Task, outputs with their contenders, every review, final values, arbitration, checks."""
    campaign = get_object_or_404(Campaign, slug=slug)
    context = {"campaign": campaign, **task_detail(campaign=campaign, task_id=task_id)}
    return render(request, "reviews/item.html", context)


@role_required(ARBITER)
@require_GET
def arbitration_item(request: AuthedHttpRequest, token: str) -> HttpResponse:
    """The arbiter's own item, read-only and blinded (labels A, B; Reviewer 1, 2)."""
    return render(
        request,
        "reviews/arbitration_item.html",
        {"ws": arbiter_item(token=token, arbiter=request.user)},
    )


def _comment_posted(
    request: AuthedHttpRequest, *, item: ReviewItem, role: str, thread: dict, back: str
) -> HttpResponse:
    """Add the posted comment; htmx gets the thread again (with the refusal, the text kept),
    a plain form post goes back to the page it came from."""
    text = request.POST.get("text", "")
    error = ""
    try:
        item_comment_add(item=item, author=request.user, role=role, text=text)
    except CommentInvalid as exc:
        error = str(exc)
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect(f"{back}#{thread['thread_id']}")
    viewer = request.user if role == "arbiter" else None
    context = {
        **thread,
        "comments": item_comments(item=item, for_arbiter=viewer),
        "error": error,
        "draft": text if error else "",
    }
    return render(request, THREAD, context)


@role_required(ADMIN, LEAD)
@require_POST
def campaign_item_comment(request: AuthedHttpRequest, slug: str, item_id: int) -> HttpResponse:
    """A lead's or admin's comment on one item of the campaign."""
    item = get_object_or_404(
        ReviewItem.objects.select_related("task", "campaign"), pk=item_id, campaign__slug=slug
    )
    back = reverse("campaign_item", args=[slug, item.task.external_id])
    thread = {
        "post_url": reverse("campaign_item_comment", args=[slug, item.pk]),
        "thread_id": f"item-{item.pk}-comments",
    }
    role = "admin" if has_role(request.user, ADMIN) else "lead"
    return _comment_posted(request, item=item, role=role, thread=thread, back=back)


@role_required(ARBITER)
@require_POST
def arbitration_comment(request: AuthedHttpRequest, token: str) -> HttpResponse:
    """The item's arbiter's comment, from the arbitration page or its item page."""
    arbitration = (
        Arbitration.objects.filter(token=token, arbiter=request.user)
        .select_related("item__campaign")
        .first()
    )
    if arbitration is None or not arbitration.item.campaign.on_roster(request.user, ARBITER):
        raise Http404
    came_from = request.POST.get("back", "")
    back = (
        reverse("arbitration_item", args=[token])
        if came_from == "item"
        else reverse("arbitration_page", args=[token])
    )
    thread = {
        "post_url": reverse("arbitration_comment", args=[token]),
        "thread_id": "arb-comments",
        "back": came_from,
    }
    return _comment_posted(request, item=arbitration.item, role="arbiter", thread=thread, back=back)
