"""The review side of a campaign's roster change (tasks/campaigns/rosters.py decides who is named).

Whoever leaves a roster gets the campaign's "remove reviewer": their open items go back to the
pool and they are marked removed on the assignments page; an arbiter's claimed disputes go
back to the queue. A reviewer named again is let back in. Registered in tasks.review_side.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db.models import Q

from evalsite.roles import ADMIN, LEAD, REVIEWER
from reviews import review as services
from reviews.arbitration.services import arbiter_campaign_release
from reviews.models import Arbitration, Assignment
from tasks.models import Campaign


def roster_changed(
    *,
    campaign: Campaign,
    role: str,
    named: set[User],
    again: set[User],
    by: User | None,
) -> int:
    """Apply a roster that now names exactly `named` for `role`: reviewers in `again` are let
    back in; whoever else holds work in the campaign and is not named (admins and leads
    excepted) has it returned. Returns how many leases (reviewers) or disputes (arbiters)."""
    for user in again:
        services.reviewer_restore_to_campaign(campaign=campaign, reviewer=user)
    if role == REVIEWER:
        workers = Assignment.objects.filter(campaign=campaign).values("reviewer_id")
    else:
        workers = Arbitration.objects.filter(
            item__campaign=campaign, state=Arbitration.State.ACTIVE
        ).values("arbiter_id")
    leaving = (
        get_user_model()
        .objects.filter(pk__in=workers)
        .exclude(pk__in=[u.pk for u in named])
        .exclude(Q(is_superuser=True) | Q(groups__name__in=[ADMIN, LEAD]))
        .order_by("pk")
    )
    returned = 0
    for user in leaving:
        if role == REVIEWER:
            returned += services.reviewer_remove_from_campaign(
                campaign=campaign, reviewer=user, by=by
            )
        else:
            returned += arbiter_campaign_release(campaign=campaign, arbiter=user)
    return returned
