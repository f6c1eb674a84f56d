"""Leases: expiry (lazy and by the sweeper), heartbeat, skip, release.

Lock order, to stay deadlock-free: paths that end an *active* assignment (submit, skip,
expire, release) lock the assignment row first and the item row second; a claim locks the item
row and then only inserts (docs/decisions/0003-claims-count-on-the-item-row.md).
Leases are compared with the database clock, never the web server's.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Now

from evalsite.roles import REVIEWER
from reviews.models import Assignment, ReviewItem
from reviews.review.sql import db_now
from tasks.models import Campaign

LIVE = Assignment.LIVE
BLOCKING = Assignment.BLOCKING

# A heartbeat extends the lease by the campaign's lease length, up to this many lease lengths
# after the claim: an open but forgotten tab cannot hold a slot for ever.
HEARTBEAT_CAP_LEASES = 4


SKIP_REASONS = {
    "expertise": "I can't judge this topic",
    "unreadable": "The text is unreadable or broken",
    "conflict": "Conflict of interest",
    "other": "Other",
}


def stale_leases_q() -> Q:
    """Active assignments whose lease ran out (database clock), not yet expired by a sweep."""
    return Assignment.stale_q()


def decrement_live(item_counts: Counter) -> None:
    # Sorted, so two transactions that release slots on the same items lock them in one order.
    for item_id in sorted(item_counts):
        ReviewItem.objects.filter(pk=item_id).update(
            live_count=F("live_count") - item_counts[item_id]
        )


def assignment_expire_stale(
    *, campaign: Campaign | None = None, limit: int = 500, wait: bool = False
) -> int:
    """Return the slots of leases that ran out (database clock). Safe to run concurrently:
    a lease another session holds right now (expiring it, or its reviewer submitting) is
    skipped, or with `wait` waited for, then looked at again (that session may have ended it)."""
    stale = Assignment.objects.stale()
    if campaign is not None:
        stale = stale.filter(campaign=campaign)
    # Usually nothing is stale: one indexed read, no transaction, on every claim.
    if not stale.exists():
        return 0
    with transaction.atomic():
        locked = stale.select_for_update(skip_locked=not wait, of=("self",), no_key=True)
        rows = list(locked.order_by("pk").values_list("pk", "item_id")[:limit])
        if not rows:
            return 0
        # The rows are locked and still active (FOR UPDATE re-checked them): no other path can
        # end them now, so each slot is returned exactly once.
        Assignment.objects.filter(pk__in=[pk for pk, _ in rows]).update(
            state=Assignment.State.EXPIRED
        )
        decrement_live(Counter(item_id for _, item_id in rows))
    return len(rows)


def assignment_sweep_expired() -> int:
    """Beat entry: expire every stale lease in every campaign, in batches, then return the
    leases of accounts that can no longer finish them."""
    total = 0
    while True:
        n = assignment_expire_stale(limit=1000)
        total += n
        if n < 1000:
            return total + assignment_release_unfinishable()


def assignment_release_unfinishable() -> int:
    """Open leases held by accounts that can no longer finish them (deactivated, or no longer
    reviewers) back to the pool. Changing the account releases them at once (user_update);
    this catches a claim that was in flight at that moment, whose lease would otherwise hold
    its slot until it ran out."""
    holders = get_user_model().objects.filter(assignments__state=Assignment.State.ACTIVE)
    reviewers = get_user_model().objects.filter(is_active=True, groups__name=REVIEWER)
    unfinishable = holders.exclude(pk__in=reviewers.values("pk")).distinct()
    return sum(reviewer_leases_release(reviewer=user) for user in unfinishable)


def lease_extended(*, expires_at: datetime, claimed_at: datetime, lease: timedelta) -> datetime:
    """A heartbeat's new lease end (review and arbitration pages alike): one more lease from
    now on the database clock, never past HEARTBEAT_CAP_LEASES leases after the claim (a
    forgotten tab cannot hold an item for ever), never shorter than it was."""
    return max(expires_at, min(db_now() + lease, claimed_at + HEARTBEAT_CAP_LEASES * lease))


LEASE_LAPSED = "Your time on this item ran out. Submitting may still work if nobody else took it."


class LeaseGone(Exception):
    """A heartbeat for a lease that is no longer live; the message says what became of it."""


def assignment_heartbeat(*, token: str, reviewer: User) -> datetime:
    """Extend a live lease (the page is open); LeaseGone if there is none to extend."""
    assignment = (
        Assignment.objects.select_related("item__campaign")
        .filter(token=token, reviewer=reviewer)
        .only("pk", "state", "created_at", "lease_expires_at", "item__campaign__lease_minutes")
        .first()
    )
    if assignment is None:
        raise Assignment.DoesNotExist(token)
    new_expiry = lease_extended(
        expires_at=assignment.lease_expires_at,
        claimed_at=assignment.created_at,
        lease=timedelta(minutes=assignment.item.campaign.lease_minutes),
    )
    updated = (
        Assignment.objects.filter(pk=assignment.pk)
        .live_leases()
        .update(lease_expires_at=new_expiry, heartbeat_at=Now())
    )
    if not updated:
        # Submitted, skipped, released or expired say so; an active one ran out of time.
        active = assignment.state == Assignment.State.ACTIVE
        raise LeaseGone(LEASE_LAPSED if active else assignment.state_message)
    return new_expiry


def assignment_state_message(assignment: Assignment) -> str:
    return assignment.state_message


def assignment_skip(*, token: str, reviewer: User, reason: str) -> bool:
    """Give an item back with a reason; the reviewer will not be offered it again."""
    reason = (reason or "").strip()[:200]
    if not reason:
        raise ValueError("a reason is required to skip")
    assignment = Assignment.objects.only("pk", "item_id").get(token=token, reviewer=reviewer)
    return _end_active(assignment, state=Assignment.State.SKIPPED, skip_reason=reason)


def assignment_release(*, campaign: Campaign, token: str) -> bool:
    """Admin/lead: take an active lease away; the slot returns to the pool at once."""
    assignment = Assignment.objects.only("pk", "item_id").get(token=token, campaign=campaign)
    return _end_active(assignment, state=Assignment.State.RELEASED)


def _end_active(assignment: Assignment, **changes: object) -> bool:
    """End the assignment if it is still active and return its slot (the conditional UPDATE
    locks the assignment row first, then the item's: the lock order above)."""
    with transaction.atomic():
        done = Assignment.objects.filter(pk=assignment.pk).active().update(**changes)
        if done:
            decrement_live(Counter({assignment.item_id: 1}))
    return bool(done)


def reviewer_leases_release(*, reviewer: User) -> int:
    """Every open lease the reviewer holds, in every campaign, back to the pool (a deactivated
    account, or one that lost the reviewer role, cannot finish them). Returns how many."""
    with transaction.atomic():
        return leases_release(reviewer=reviewer)


def leases_release(*, reviewer: User, campaign: Campaign | None = None) -> int:
    leases = Assignment.objects.filter(reviewer=reviewer).active()
    if campaign is not None:
        leases = leases.filter(campaign=campaign)
    rows = list(
        leases.select_for_update(of=("self",), no_key=True)
        .order_by("pk")
        .values_list("pk", "item_id")
    )
    if rows:
        Assignment.objects.filter(pk__in=[pk for pk, _ in rows]).update(
            state=Assignment.State.RELEASED
        )
        decrement_live(Counter(item_id for _, item_id in rows))
    return len(rows)


def item_leases_release(*, item_id: int) -> int:
    """Every open lease on one item back (an item reported as revealing its model leaves
    every queue at once): assignment rows locked first, then the item's count, the lock order
    above. Returns how many."""
    with transaction.atomic():
        rows = list(
            Assignment.objects.filter(item_id=item_id)
            .active()
            .select_for_update(of=("self",), no_key=True)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        if rows:
            Assignment.objects.filter(pk__in=rows).update(state=Assignment.State.RELEASED)
            decrement_live(Counter({item_id: len(rows)}))
    return len(rows)
