"""Whether a reviewer may review a campaign, and an admin's removal and restoring of one."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from reviews.models import ReviewerRemoval
from reviews.review.leases import leases_release
from tasks.models import Campaign

REVIEWABLE = (Campaign.Status.GENERATING, Campaign.Status.REVIEWING)


def reviewer_may_review(*, campaign: Campaign, reviewer: User) -> bool:
    return not reviewer_barred_message(campaign=campaign, reviewer=reviewer)


def reviewer_barred_message(*, campaign: Campaign, reviewer: User) -> str:
    """Why `reviewer` may not review `campaign` any more, for them to read ('' if they may)."""
    if campaign.status not in REVIEWABLE:
        return barred_message(removed=False)
    if reviewer_removed(campaign=campaign, reviewer=reviewer):
        return barred_message(removed=True)
    return ""


def reviewer_removed(*, campaign: Campaign, reviewer: User) -> bool:
    return ReviewerRemoval.objects.filter(campaign=campaign, reviewer=reviewer).exists()


def barred_message(*, removed: bool) -> str:
    if removed:
        return (
            "An administrator removed you from this campaign: nothing more comes to you here. "
            "The reviews you submitted are kept."
        )
    return "This campaign is not open for review any more."


def reviewer_remove_from_campaign(
    *, campaign: Campaign, reviewer: User, by: User | None = None
) -> int:
    """Admin/lead: no more items for this reviewer here; their open leases return to the pool.

    Reviews they already submitted stay (they are real, finished work). Returns how many
    leases were released.
    """
    with transaction.atomic():
        ReviewerRemoval.objects.get_or_create(
            campaign=campaign, reviewer=reviewer, defaults={"removed_by": by}
        )
        return leases_release(reviewer=reviewer, campaign=campaign)


def reviewer_restore_to_campaign(*, campaign: Campaign, reviewer: User) -> bool:
    return ReviewerRemoval.objects.filter(campaign=campaign, reviewer=reviewer).delete()[0] > 0
