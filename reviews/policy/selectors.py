"""What a campaign's page and report show of its review policy."""

from __future__ import annotations

from collections import Counter

from django.db.models import Count, Q

from tasks.models import Campaign

from ..models import ReviewItem
from ..report_outcomes import SETTLED
from .services import review_policy

S = ReviewItem.State


def policy_summary(*, campaign: Campaign) -> dict | None:
    """The policy and where its items went: {"judge", "humans", "audit_share", "items",
    "judging" (waiting for the judge), "people" (routed to people), "judge_settled",
    "reviews_saved" (the judge-settled items' k reviews each), "reasons" {rule: items}}; None
    without a policy."""
    policy = review_policy(campaign)
    if policy is None:
        return None
    items = ReviewItem.objects.filter(campaign=campaign).exclude(state=S.DROPPED)
    counts = items.aggregate(
        total=Count("pk"),
        judging=Count("pk", filter=Q(state=S.JUDGING)),
        judge=Count("pk", filter=Q(source="judge")),
        people=Count("pk", filter=~Q(policy_reasons=[])),
    )
    reasons = Counter(
        reason
        for listed in items.exclude(policy_reasons=[]).values_list("policy_reasons", flat=True)
        for reason in listed
    )
    return {
        **policy,
        "items": counts["total"],
        "judging": counts["judging"],
        "people": counts["people"],
        "judge_settled": counts["judge"],
        "reviews_saved": counts["judge"] * campaign.overlap,
        "reasons": dict(sorted(reasons.items())),
    }


def outcome_basis(*, campaign: Campaign) -> dict:
    """Who settled the final outcomes the report's figures are built from: {"basis": "human" |
    "judge" | "mixed" (None before any item is settled), "human": items, "judge": items}."""
    counts = dict(
        ReviewItem.objects.filter(campaign=campaign, state__in=SETTLED, final__isnull=False)
        .values_list("source")
        .annotate(n=Count("pk"))
        .order_by()
    )
    human, judge = counts.get("human", 0), counts.get("judge", 0)
    basis = None
    if human and judge:
        basis = "mixed"
    elif human or judge:
        basis = "human" if human else "judge"
    return {"basis": basis, "human": human, "judge": judge}
