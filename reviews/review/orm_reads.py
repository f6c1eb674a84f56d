"""The review loop's six budget reads written with the ORM: the A/B variant of reviews/sql.py's
`claim_context`, `item_slots`, `item_outputs`, `review_page`, `submit_assignment` and
`item_reviews`, same signatures and results (tests/reviews/test_sql.py holds them equal)."""

from __future__ import annotations

from django.db.models import Count, Exists, IntegerField, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce

from reviews.models import Assignment, ItemOutput, Review, ReviewerRemoval
from tasks.models import Campaign, Generation, Task


def _removed(reviewer, campaign) -> Exists:
    return Exists(ReviewerRemoval.objects.filter(reviewer_id=reviewer, campaign_id=campaign))


def claim_context(
    *, reviewer_id: int, campaign_id: int | None = None, slug: str | None = None
) -> tuple[Campaign | None, bool, bool, bool, int | None]:
    key = {"slug": slug} if campaign_id is None else {"pk": campaign_id}
    leases = Assignment.objects.filter(campaign_id=OuterRef("pk"))
    held = leases.live_leases().filter(reviewer_id=reviewer_id).order_by("created_at", "pk")
    named = Campaign.reviewers.through.objects.filter(
        campaign_id=OuterRef("pk"), user_id=reviewer_id
    )
    campaign = (
        Campaign.objects.filter(**key)
        .annotate(
            named=Exists(named),
            removed=_removed(reviewer_id, OuterRef("pk")),
            stale=Exists(leases.stale()),
            held=Subquery(held.values("pk")[:1]),
        )
        .first()
    )
    if campaign is None:
        return None, False, False, False, None
    return campaign, campaign.named, campaign.removed, campaign.stale, campaign.held


def item_slots(item_id: int) -> list[tuple[int, int, str, int]]:
    return list(
        Assignment.objects.filter(item_id=item_id).values_list("pk", "reviewer_id", "state", "slot")
    )


def item_outputs(item_id: int) -> tuple[Task, dict[int, Generation]]:
    shown = list(ItemOutput.objects.shown(item_id))
    if not shown:
        return Task.objects.get(review_items__pk=item_id), {}
    return shown[0].item.task, {o.pk: o.generation for o in shown}


def review_page(*, token: str, slug: str) -> tuple[Assignment, Campaign, bool, int] | None:
    done = (
        Assignment.objects.filter(
            reviewer_id=OuterRef("reviewer_id"),
            campaign_id=OuterRef("campaign_id"),
            state=Assignment.State.SUBMITTED,
        )
        .order_by()
        .values("reviewer_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    assignment = (
        Assignment.objects.select_related("campaign")
        .filter(token=token, campaign__slug=slug)
        .annotate(
            removed=_removed(OuterRef("reviewer_id"), OuterRef("campaign_id")),
            done=Coalesce(Subquery(done, output_field=IntegerField()), Value(0)),
        )
        .first()
    )
    if assignment is None:
        return None
    return assignment, assignment.campaign, assignment.removed, assignment.done


def item_reviews(item_id: int) -> list[tuple]:
    rows = Review.objects.filter(item_id=item_id).order_by("submitted_at", "pk", "scores__pk")
    return list(
        rows.values_list(
            "pk",
            "preference",
            "preferred_output_id",
            "flags",
            "scores__output_id",
            "scores__dimension",
            "scores__value",
        )
    )


def submit_assignment(*, token: str) -> tuple[Assignment, bool] | None:
    assignment = (
        Assignment.objects.select_related("item__campaign")
        .annotate(removed=_removed(OuterRef("reviewer_id"), OuterRef("campaign_id")))
        .filter(token=token)
        .first()
    )
    if assignment is None:
        return None
    return assignment, assignment.removed
