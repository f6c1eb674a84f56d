"""A campaign's judges: the list with progress and the Judge button (lazy-loaded into the
campaign page), one judge's page (progress while it runs, calibration and its charts), and
the POST that starts judging (admins)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import ADMIN, LEAD, has_role, role_required
from evalsite.text import counted
from reviews.judges.calibration import (
    calibration_chart,
    judge_calibration,
    judging_failures,
    judging_progress,
)
from reviews.judges.policy_start import policy_state
from reviews.judges.services import JudgingError, judging_enqueue
from reviews.rubric import Rubric
from reviews.stats.calibration import EPSILON
from tasks.models import Campaign, Judge


@require_GET
@role_required(ADMIN, LEAD)
def campaign_judges_view(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    """Every judge with its progress on this campaign; `?summary=1` is the campaign page's
    section (htmx), the rest the page."""
    campaign = get_object_or_404(Campaign, slug=slug)
    rows = [
        {"judge": judge, "progress": judging_progress(campaign=campaign, judge=judge)}
        for judge in Judge.objects.order_by("name")
    ]
    context = {
        "campaign": campaign,
        "rows": rows,
        "is_admin": has_role(request.user, ADMIN),
        "policy": policy_state(campaign=campaign),
        # The section polls while a judge works on the campaign.
        "polling": any(r["progress"]["pending"] or r["progress"]["running"] for r in rows),
    }
    if request.GET.get("summary"):
        return render(request, "reviews/campaign_judges.html#judges", context)
    return render(request, "reviews/campaign_judges.html", context)


@require_GET
@role_required(ADMIN, LEAD)
def campaign_judge_view(request: AuthedHttpRequest, slug: str, name: str) -> HttpResponse:
    """One judge on one campaign: progress (polled while it runs), then the calibration."""
    campaign = get_object_or_404(Campaign, slug=slug)
    judge = get_object_or_404(Judge, name=name)
    progress = judging_progress(campaign=campaign, judge=judge)
    is_admin = has_role(request.user, ADMIN)
    context = {
        "campaign": campaign,
        "judge": judge,
        "progress": progress,
        "polling": bool(progress["pending"] or progress["running"]),
        "is_admin": is_admin,
    }
    if request.htmx and request.htmx.target == "judge-progress":
        return render(request, "reviews/judge_calibration.html#progress", context)
    calibration = judge_calibration(campaign=campaign, judge=judge)
    rubric = Rubric.of(campaign).final
    context["calibration"] = calibration
    context["failures"] = judging_failures(campaign=campaign, judge=judge) if is_admin else []
    context["epsilon"] = EPSILON
    context["dimensions"] = [
        {
            "key": key,
            "figures": figures,
            "chart": calibration_chart(
                campaign=campaign, judge=judge, dimension=key, scale=rubric.get(key)
            ),
        }
        for key, figures in calibration["dimensions"].items()
    ]
    return render(request, "reviews/judge_calibration.html", context)


@require_POST
@role_required(ADMIN)
def campaign_judge_run(request: AuthedHttpRequest, slug: str, name: str) -> HttpResponse:
    campaign = get_object_or_404(Campaign, slug=slug)
    judge = get_object_or_404(Judge, name=name)
    try:
        queued = judging_enqueue(campaign=campaign, judge=judge)
    except JudgingError as exc:
        messages.error(request, str(exc))
    else:
        if queued:
            messages.success(request, f"Queued {counted(queued, 'judgement')} for {judge.name}.")
        else:
            messages.info(request, "Nothing to queue: every judgement is queued, running or done.")
    url = reverse("campaign_judge", args=[campaign.slug, judge.name])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
