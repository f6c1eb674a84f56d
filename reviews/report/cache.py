"""The campaign report, cached by a fingerprint of its inputs: computed once per state of the
campaign (reviews, corrections, items, arbitrations, generations, contenders, settings) by
whichever process asks first, usually the worker's warm-up job (reviews/jobs.py), and shared
with the others through the "reports" cache."""

from __future__ import annotations

import hashlib
import json

from django.core.cache import caches
from django.db.models import Count, Max, Sum

from reviews.models import Arbitration, Review, ReviewItem, ReviewVersion
from tasks.models import Campaign, Generation

# A day: a state's report never goes stale (a new state is a new key); this only frees space.
REPORT_CACHE_SECONDS = 24 * 3600


def report_fingerprint(campaign: Campaign) -> str:
    # Reviews are added (or removed with a reviewer): count, max and sum of ids change
    # whenever the set does. A correction rewrites one in place and keeps the old answers as
    # a version: the versions' count and last id change with every correction.
    reviews = Review.objects.filter(item__campaign=campaign).aggregate(
        n=Count("id"), last=Max("id"), total=Sum("id")
    )
    reviews["corrections"] = list(
        ReviewVersion.objects.filter(review__item__campaign=campaign)
        .aggregate(n=Count("id"), last=Max("id"))
        .values()
    )
    items = list(
        ReviewItem.objects.filter(campaign=campaign)
        .values_list("state", "ready")
        .annotate(n=Count("id"))
        .order_by("state", "ready")
    )
    arbitrations = Arbitration.objects.filter(item__campaign=campaign).aggregate(
        n=Count("id"), resolved=Max("resolved_at")
    )
    generations = list(
        Generation.objects.filter(campaign=campaign)
        .values_list("status")
        .annotate(n=Count("id"), last=Max("finished_at"))
        .order_by("status")
    )
    contenders = list(
        campaign.contenders.order_by("id").values_list(
            "id", "name", "price_in_per_mtok", "price_out_per_mtok"
        )
    )
    settings = [
        # With the primary key in the cache key: another database's campaign of the same id
        # (a test run, a restored backup) is another campaign.
        campaign.created_at,
        campaign.slug,
        campaign.name,
        campaign.mode,
        campaign.rubric,
        campaign.weights,
        campaign.pass_threshold,
        campaign.samples_per_task,
        campaign.reviewed_samples,
        campaign.overlap,
        campaign.score_turns,
    ]
    raw = json.dumps(
        [reviews, items, arbitrations, generations, contenders, settings],
        default=str,
        sort_keys=True,
    )
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def campaign_report_cached(campaign: Campaign) -> dict:
    """The report of the campaign's current state: computed once per state, by whichever
    process asks first (the worker's warm-up job, usually) and shared with the others."""
    report, _ = campaign_report_warm(campaign)
    return report


def campaign_report_warm(campaign: Campaign) -> tuple[dict, bool]:
    """(the report, whether it had to be computed now)."""
    key = f"evalsite:report:{campaign.pk}:{report_fingerprint(campaign)}"
    reports = caches["reports"]
    report = reports.get(key)
    if report is not None:
        return report, False
    # Imported here: pandas/numpy stay out of every process's start-up (URLconf import).
    from reviews.report.campaign import campaign_report

    report = campaign_report(campaign=campaign)
    reports.set(key, report, REPORT_CACHE_SECONDS)
    return report, True


def reports_warm() -> int:
    """Compute the reports of the campaigns whose state changed since theirs was cached, so
    a lead's first look at the dashboards finds it ready. How many were computed."""
    computed = 0
    campaigns = Campaign.objects.exclude(kind=Campaign.Kind.MONITOR_RUN).filter(
        items__submitted_count__gt=0
    )
    for campaign in campaigns.distinct().order_by("pk"):
        computed += campaign_report_warm(campaign)[1]
    return computed
