"""The held outputs page: every output reviewers will be shown that waits for an admin, each
hold reason highlighted in the masked view; bulk approve, and an extra mask by hand before
approving one (docs/blinding.md, "Flag and hold")."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import ADMIN, LEAD, has_role, role_required
from evalsite.text import counted
from tasks.blinding.hold import (
    IdentityNotHeld,
    MaskInvalid,
    generation_identity_approve,
    generation_texts,
    generations_identity_approve,
    mask_spans_of_words,
)
from tasks.campaigns.selectors import campaign_get, campaign_held_outputs, held_outputs

PAGE_SIZE = 25


@require_http_methods(["GET"])
@role_required(ADMIN, LEAD)
def campaign_held(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    """The held outputs of a campaign (admins approve, leads read)."""
    campaign = campaign_get(slug=slug)
    page = Paginator(held_outputs(campaign).values_list("pk", flat=True), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    rows = campaign_held_outputs(campaign=campaign, ids=list(page.object_list))
    context = {
        "campaign": campaign,
        "page": page,
        "rows": rows,
        "is_admin": has_role(request.user, ADMIN),
    }
    return render(request, "tasks/campaign_held.html", context)


@require_POST
@role_required(ADMIN)
def campaign_held_approve(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    """Approve the checked outputs, or all of them ("approve all")."""
    campaign = campaign_get(slug=slug)
    if request.POST.get("all"):
        ids = None
    else:
        ids = [int(v) for v in request.POST.getlist("ids") if v.isdigit()]
        if not ids:
            messages.info(request, "Nothing approved: tick the outputs to approve first.")
            return redirect("campaign_held", slug=campaign.slug)
    result = generations_identity_approve(campaign=campaign, ids=ids, user=request.user)
    messages.success(
        request,
        f"Approved {counted(len(result['approved']), 'output')}: reviewers see the masked "
        f"views; {counted(result['items_opened'], 'review item')} opened for review.",
    )
    return redirect("campaign_held", slug=campaign.slug)


@require_POST
@role_required(ADMIN)
def campaign_held_mask(request: AuthedHttpRequest, slug: str, output_id: int) -> HttpResponse:
    """Mask the given words (every occurrence in this output) by hand, then approve it."""
    campaign = campaign_get(slug=slug)
    generation = held_outputs(campaign).filter(pk=output_id).first()
    if generation is None:
        messages.info(request, "That output is not held any more.")
        return redirect("campaign_held", slug=campaign.slug)
    try:
        spans = mask_spans_of_words(request.POST.get("words", ""), generation_texts(generation))
        opened = generation_identity_approve(generation=generation, user=request.user, mask=spans)
    except MaskInvalid as exc:
        messages.error(request, f"Nothing masked: {exc}.")
    except IdentityNotHeld as exc:
        messages.info(request, str(exc))
    else:
        messages.success(
            request,
            f"Masked {counted(len(spans), 'span')} and approved; "
            f"{counted(opened, 'review item')} opened for review.",
        )
    return redirect("campaign_held", slug=campaign.slug)
