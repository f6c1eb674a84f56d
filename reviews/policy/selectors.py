"""What a campaign's page and report show of its review policy."""

from __future__ import annotations

from collections import Counter

from django.db.models import Count, Q

from reviews.models import ReviewItem
from tasks.models import Campaign

S = ReviewItem.State
# What the campaign page and report say of a policy whose judge was let in uncalibrated.
UNCALIBRATED = "judge not calibrated"


def policy_summary(*, campaign: Campaign) -> dict | None:
    """The policy and where its items went: {"judge", "humans", "audit_share", "items",
    "judging" (waiting for the judge), "people" (routed to people), "judge_settled",
    "reviews_saved" (the judge-settled items' k reviews each), "reasons" {rule: items},
    "calibration" (the campaign the judge was calibrated on), "allow_uncalibrated", "note"
    ("judge not calibrated" when let in uncalibrated, else "")}; None without a policy. The
    judge's own state is added by reviews/judges/policy_start.py `policy_state`."""
    policy = campaign.review_policy()
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
        "calibration": None,
        "allow_uncalibrated": False,
        **policy,
        "note": UNCALIBRATED if policy.get("allow_uncalibrated") else "",
        "items": counts["total"],
        "judging": counts["judging"],
        "people": counts["people"],
        "judge_settled": counts["judge"],
        "reviews_saved": counts["judge"] * campaign.overlap,
        "reasons": dict(sorted(reasons.items())),
    }
