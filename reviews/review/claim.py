"""The claim: a reviewer's next item, with a free slot, exactly k distinct reviewers per item.

One transaction. It locks the first item the reviewer may take with SELECT ... FOR NO KEY
UPDATE SKIP LOCKED (`sql.claim_candidate`: concurrent claims take different items instead of
queueing on one); under READ COMMITTED a waiting claim re-checks the locked row, and the live
counter is on that row, so it sees the first claim's increment (docs/decisions/0003). Under
the lock it reads the item's assignments afresh, then inserts (or revives a row of the
reviewer's that is not active, which no other path touches without the item lock) and bumps
the counter. The database constraints refuse whatever a race would still get past this
(reviews/review/__init__.py); a refused attempt is retried on another item.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Final

from django.contrib.auth.models import User
from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import Case, Exists, F, OuterRef, QuerySet, Value, When
from django.db.models.functions import Now

from reviews.models import Assignment, ReviewItem
from reviews.review import sql
from reviews.review.leases import assignment_expire_stale
from reviews.review.order import presented_order, shuffle_offset
from reviews.review.standing import REVIEWABLE
from tasks.models import Campaign, Generation, Task

log = logging.getLogger(__name__)

CLAIM_ATTEMPTS = 12


class ClaimBusy(Exception):
    """Every candidate was taken under our feet CLAIM_ATTEMPTS times in a row; retry."""


class NotReviewable(Exception):
    """The campaign is not open for this reviewer (wrong status, removed, not a reviewer)."""


@dataclass
class Claim:
    assignment: Assignment
    resumed: bool
    campaign: Campaign  # as read by the claim (the API passes only the slug)
    # The item's task and {ItemOutput pk: Generation}, read by the claim (None: not read).
    answer: tuple[Task, dict[int, Generation]] | None = None


@dataclass(frozen=True)
class ClaimContext:
    """What every claim asks first, in one statement (sql.claim_context): a view that reads
    it (for the roster, a probe question) passes it to the claim instead of it being read
    again."""

    campaign: Campaign | None  # None: no such campaign
    named: bool  # the campaign's reviewer roster names the reviewer (Campaign.on_roster)
    removed: bool  # an administrator removed the reviewer from the campaign
    stale: bool  # a lease in the campaign ran out and was not expired yet
    held: int | None  # the live lease the reviewer already holds, or None


class Retry(Enum):
    """An attempt lost a race (a constraint, a deadlock, a momentary lock): try again."""

    RETRY = "retry"


RETRY: Final = Retry.RETRY


def retryable(exc: OperationalError) -> bool:
    """A deadlock or serialization failure: PostgreSQL rolled us back; the retry is safe."""
    return getattr(exc.__cause__, "sqlstate", None) in ("40P01", "40001") and not (
        connection.in_atomic_block
    )


def claim_context(
    *, reviewer: User, campaign: Campaign | None = None, slug: str | None = None
) -> ClaimContext:
    """The campaign (by the one given, read again, or by its slug) with the reviewer's
    standing in it: what a claim needs before it looks for an item."""
    return ClaimContext(
        *sql.claim_context(reviewer_id=reviewer.pk, campaign_id=campaign and campaign.pk, slug=slug)
    )


def assignment_claim_next(
    *,
    reviewer: User,
    campaign: Campaign | None = None,
    slug: str | None = None,
    context: ClaimContext | None = None,
) -> Claim | None:
    """The reviewer's current item, or a newly claimed one, or None when nothing is left.

    Give the claim context a view already read (claim_context), or the campaign, or only its
    slug; without a context the campaign is read again, with the reviewer's standing. The
    roster is the caller's to check (Campaign.on_roster, with the context's `named`).
    NotReviewable if there is no such campaign, it is not open for review, or the reviewer
    was removed from it.
    """
    if context is None:
        context = claim_context(reviewer=reviewer, campaign=campaign, slug=slug)
    campaign = context.campaign
    if campaign is None or campaign.status not in REVIEWABLE or context.removed:
        raise NotReviewable(slug if campaign is None else campaign.slug)
    if context.stale:
        # Lazy expiry: abandoned slots come back even if the beat sweeper is not running.
        assignment_expire_stale(campaign=campaign)
    if context.held is not None:
        held = Assignment.objects.get(pk=context.held)
        return Claim(assignment=held, resumed=True, campaign=campaign)
    lease = timedelta(minutes=campaign.lease_minutes)
    for attempt in range(CLAIM_ATTEMPTS):
        try:
            result = _claim_once(campaign=campaign, reviewer=reviewer, lease=lease)
            if result is None and _lapsed_slots_returned(campaign):
                result = RETRY
        except OperationalError as exc:
            if not retryable(exc):
                raise
            result = RETRY
        if result is RETRY:
            # Lock holders finish in milliseconds; back off a little, with jitter.
            time.sleep(random.uniform(0.002, 0.01) * (attempt + 1))
            continue
        return result  # a Claim, or None: nothing left
    raise ClaimBusy(campaign.slug)


def _lapsed_slots_returned(campaign: Campaign) -> bool:
    """Whether a lease that ran out still held a slot when the claim found nothing left; if
    so it is expired now, and the claim must look again.

    The lazy expiry above skips a lease another session holds at that moment, typically
    another claim expiring it: the item still looks full until that session commits. Had
    the claim answered "nothing left" then, and had the reviewers who could take the slot
    stopped asking, the item kept fewer than k reviews for good. So wait for that session
    here (it holds the row for milliseconds), on the rare path where nothing was found."""
    if not Assignment.objects.filter(campaign=campaign).stale().exists():
        return False
    assignment_expire_stale(campaign=campaign, wait=True)
    return True


def _claim_once(*, campaign: Campaign, reviewer: User, lease: timedelta) -> Claim | Retry | None:
    try:
        return _claim_in_transaction(campaign=campaign, reviewer=reviewer, lease=lease)
    except IntegrityError as exc:
        # A constraint refused the insert or revival: the whole attempt rolled back (no
        # savepoint needed, the claim transaction did nothing else); try another item.
        log.info("claim lost a race (%s); trying another item", exc)
        return RETRY


def candidates(
    *, campaign: Campaign, reviewer: User, offset: int
) -> tuple[QuerySet[ReviewItem], ...]:
    """The claim's offer order in the ORM, pass by pass: the twin of `sql.claim_candidate`
    (tests/reviews/test_sql.py holds them equal). Breadth first, items already in review (so
    pairs complete), then fresh items in this reviewer's order, from their `offset` to the
    end, then wrapping round."""
    mine = Assignment.objects.filter(item=OuterRef("pk"), reviewer=reviewer).blocking()
    free = ReviewItem.objects.offerable(campaign).filter(~Exists(mine))
    wrapped = Case(When(shuffle_key__gte=offset, then=Value(0)), default=Value(1))
    return (
        free.filter(live_count__gt=0).order_by("-live_count", wrapped, "shuffle_key", "pk"),
        free.filter(live_count=0, shuffle_key__gte=offset).order_by("shuffle_key", "pk"),
        free.filter(live_count=0, shuffle_key__lt=offset).order_by("shuffle_key", "pk"),
        free.order_by("pk"),
    )


def _first(
    *, campaign: Campaign, reviewer: User, offset: int
) -> tuple[int, int, int, int, datetime] | None:
    """The first item of the offer order this reviewer may take, locked (sql.claim_candidate)."""
    for pass_index in range(3):
        found = sql.claim_candidate(
            campaign_id=campaign.pk, reviewer_id=reviewer.pk, offset=offset, pass_index=pass_index
        )
        if found is not None:
            return found
    return None


@transaction.atomic
def _claim_in_transaction(
    *, campaign: Campaign, reviewer: User, lease: timedelta
) -> Claim | Retry | None:
    offset = shuffle_offset(campaign=campaign, reviewer=reviewer)
    found = _first(campaign=campaign, reviewer=reviewer, offset=offset)
    if found is None:
        # SKIP LOCKED also skips items that are only *momentarily* locked (a submit or another
        # claim on them). "Nothing left" must mean nothing left, so look again without
        # locking; if candidates exist, retry once they are released.
        anything = sql.claim_candidate(
            campaign_id=campaign.pk,
            reviewer_id=reviewer.pk,
            offset=offset,
            pass_index=3,
            locked=False,
        )
        return RETRY if anything else None
    item_pk, overlap, live_count, rotation, clock = found
    # A fresh read (a new snapshot, now that the item is locked) of the item's rows: the live
    # slots, and whether this reviewer already has a row. The candidate query ran on an older
    # snapshot, and a row lock re-checks only the item row. Inserting over a row of ours that
    # exists but is being changed right now would wait on that transaction while we hold the
    # item lock it needs: a deadlock. So never insert when a row exists.
    rows = sql.item_slots(item_pk)
    used = {slot for _, _, state, slot in rows if state in Assignment.LIVE}
    previous = next(((pk, state) for pk, rid, state, _ in rows if rid == reviewer.pk), None)
    if previous is not None and previous[1] in Assignment.BLOCKING:
        return RETRY
    free = [s for s in range(overlap) if s not in used]
    if not free:
        # The counter said there was room but the rows disagree: never trust one alone.
        log.error("review item %s: live_count=%s but slots %s are taken", item_pk, live_count, used)
        return RETRY
    fields = {
        "state": Assignment.State.ACTIVE,
        "slot": free[0],
        "overlap": overlap,
        "lease_expires_at": clock + lease,
        "heartbeat_at": None,
        "submit_key": "",
    }
    task, generations = answer = sql.item_outputs(item_pk)
    if previous is not None:
        # Same token and same presented order: a page still open from the earlier lease keeps
        # working, and its labels still mean the same outputs.
        revived = Assignment.objects.filter(pk=previous[0], state=previous[1]).update(
            created_at=Now(), **fields
        )
        if revived != 1:
            raise IntegrityError("assignment changed while reviving it")
        assignment = Assignment.objects.get(pk=previous[0])
    else:
        in_contender_order = sorted(generations, key=lambda pk: (generations[pk].contender_id, pk))
        order = presented_order(rotation=rotation, output_ids=in_contender_order, slot=free[0])
        assignment = Assignment.objects.create(
            item_id=item_pk, campaign=campaign, reviewer=reviewer, order=order, **fields
        )
    ReviewItem.objects.filter(pk=item_pk).update(live_count=F("live_count") + 1)
    return Claim(assignment=assignment, resumed=False, campaign=campaign, answer=answer)
