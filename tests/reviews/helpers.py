"""Small helpers shared by the review tests."""

from django.db.models import Count, Q

from reviews.models import Assignment, ReviewItem
from tasks.blinding import render as blinding


def full_review(assignment: Assignment, value: int = 4, preference: str | None = "A") -> dict:
    """A complete, valid submit for the factories' rubric (accuracy, completeness).

    preference=None for campaigns in "rubric" mode, which do not ask for one.
    """
    labels = blinding.labels(len(assignment.order))
    data = {"scores": {label: {"accuracy": value, "completeness": value} for label in labels}}
    if preference is not None:
        data["preference"] = preference
    return data


def invariant_violations(campaign) -> list[str]:
    """Every way the assignment tables could disagree with the double-assignment rules."""
    problems = []
    items = ReviewItem.objects.filter(campaign=campaign).annotate(
        live_rows=Count(
            "assignments", distinct=True, filter=Q(assignments__state__in=["active", "submitted"])
        ),
        submitted_rows=Count(
            "assignments", distinct=True, filter=Q(assignments__state="submitted")
        ),
        review_rows=Count("reviews", distinct=True),
        reviewers=Count("assignments__reviewer", distinct=True),
        rows=Count("assignments", distinct=True),
    )
    for item in items:
        if item.live_count != item.live_rows:
            problems.append(
                f"item {item.pk}: live_count {item.live_count} != {item.live_rows} live rows"
            )
        if item.submitted_count != item.submitted_rows:
            problems.append(
                f"item {item.pk}: submitted_count {item.submitted_count} != {item.submitted_rows} rows"
            )
        if item.review_rows != item.submitted_rows:
            problems.append(
                f"item {item.pk}: {item.review_rows} reviews for {item.submitted_rows} submitted"
            )
        if item.live_rows > item.overlap:
            problems.append(f"item {item.pk}: {item.live_rows} live assignments > k={item.overlap}")
        if item.reviewers != item.rows:
            problems.append(f"item {item.pk}: a reviewer appears twice")
        slots = list(
            Assignment.objects.filter(item=item, state__in=["active", "submitted"]).values_list(
                "slot", flat=True
            )
        )
        if len(slots) != len(set(slots)) or any(s >= item.overlap for s in slots):
            problems.append(f"item {item.pk}: bad live slots {slots}")
    # Each assignment carries its item's campaign (progress counts read it, not the item).
    misfiled = Assignment.objects.filter(item__campaign=campaign).exclude(campaign=campaign)
    problems += [
        f"assignment {pk}: not filed under its item's campaign"
        for pk in misfiled.values_list("pk", flat=True)
    ]
    return problems
