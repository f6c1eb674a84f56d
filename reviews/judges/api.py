"""JSON API of a campaign's judges: start judging (admin), progress and calibration."""

from __future__ import annotations

from django.http import JsonResponse

from evalsite.api import ApiError, api_endpoint, found_or_404
from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import ADMIN, LEAD
from reviews.judges.calibration import judge_calibration, judging_progress
from reviews.judges.services import JudgingError, judging_enqueue
from reviews.stats.rounding import clean
from tasks.models import Campaign, Judge


@api_endpoint(
    ADMIN,
    methods=("POST",),
    summary="Judge the campaign's ready review items with a judge (admin): one judgement per "
    "item, sample and order. Answers 202 with how many were queued.",
    responses={
        "202": "queued",
        "400": "cannot judge (no item ready, API key variable not set)",
        "403": "role",
        "404": "no such campaign or judge",
    },
)
def judge_runs(request: AuthedHttpRequest, slug: str, name: str) -> JsonResponse:
    campaign = found_or_404(Campaign.objects.all(), "campaign", slug=slug)
    judge = found_or_404(Judge.objects.all(), "judge", name=name)
    try:
        queued = judging_enqueue(campaign=campaign, judge=judge)
    except JudgingError as exc:
        raise ApiError(str(exc)) from None
    progress = judging_progress(campaign=campaign, judge=judge)
    return JsonResponse(
        {"campaign": campaign.slug, "judge": judge.name, "queued": queued, "progress": progress},
        status=202,
    )


@api_endpoint(
    ADMIN,
    LEAD,
    summary="A judge on a campaign: progress, cost and the calibration against the panel "
    "(the report's `judges` entry).",
    responses={"200": "progress and calibration", "403": "role", "404": "no campaign or judge"},
)
def judge_on_campaign(request: AuthedHttpRequest, slug: str, name: str) -> JsonResponse:
    campaign = found_or_404(Campaign.objects.all(), "campaign", slug=slug)
    judge = found_or_404(Judge.objects.all(), "judge", name=name)
    return JsonResponse(
        clean(
            {
                "campaign": campaign.slug,
                "judge": judge.name,
                "progress": judging_progress(campaign=campaign, judge=judge),
                "calibration": judge_calibration(campaign=campaign, judge=judge),
            }
        )
    )
