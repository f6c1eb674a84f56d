"""The submit: a review saved once, fenced on the assignment still being the reviewer's.

The fence is a conditional UPDATE of the assignment (still active); the review, its scores
and the item's count are written only when it matched. The item is settled (agreed or
disputed) when its k-th review lands, in the same transaction.
"""

from __future__ import annotations

import random
import secrets
import time
from dataclasses import dataclass, field
from functools import cache

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import F
from django.db.models.functions import Now

from evalsite import rawrows
from tasks.models import Campaign

from ..disputes import item_settle
from ..models import Assignment, Review, ReviewItem, Score
from ..sql import ASSIGNMENTS as _A
from ..sql import ITEMS as _I
from ..sql import fetch, now_sql
from .answers import review_payload_parse, same_answers
from .claim import RETRY, ClaimBusy, retryable
from .leases import LIVE

SUBMIT_KEY_MAX = Assignment._meta.get_field("submit_key").max_length


@dataclass
class SubmitResult:
    """What happened to a submit. `code` is stable (the API returns it as "status")."""

    # saved | saved_late | duplicate | key_reused | invalid | already_submitted | reassigned |
    # skipped | released
    code: str
    message: str
    assignment: Assignment
    errors: dict[str, str] = field(default_factory=dict)
    review: Review | None = None

    @property
    def ok(self) -> bool:
        return self.code in {"saved", "saved_late", "duplicate"}


def _settled_result(assignment: Assignment, key: str) -> SubmitResult:
    if key and assignment.submit_key == key:
        return SubmitResult(
            "duplicate",
            "Already saved: this review arrived before, it was not saved twice.",
            assignment,
        )
    return SubmitResult(
        "already_submitted", "You already submitted a review for this item.", assignment
    )


def _closed_result(assignment: Assignment) -> SubmitResult:
    if assignment.state == Assignment.State.SKIPPED:
        return SubmitResult(
            "skipped", "You skipped this item; the review was not saved.", assignment
        )
    if assignment.state == Assignment.State.RELEASED:
        return SubmitResult(
            "released",
            "An administrator released this item from you; the review was not saved.",
            assignment,
        )
    return SubmitResult(
        "reassigned",
        "Your time on this item ran out and it was given to another reviewer; "
        "the review was not saved.",
        assignment,
    )


@cache
def _submit_assignment_sql() -> str:
    return (
        f"SELECT {rawrows.columns('a', Assignment)}, {rawrows.columns('i', ReviewItem)}, "
        f"{rawrows.columns('c', Campaign)} FROM {_A} a JOIN {_I} i ON i.id = a.item_id "
        f"JOIN {rawrows.table(Campaign)} c ON c.id = i.campaign_id "
        # The token alone picks the row (its unique index); whose it is is checked after.
        f"WHERE a.token = %s"
    )


def _submit_assignment(*, token: str, reviewer: AbstractBaseUser) -> Assignment:
    """The reviewer's assignment `token` with its item and campaign, in one query written
    once (every submit reads them; building the ORM's join cost more than running it)."""
    rows = fetch(_submit_assignment_sql(), [token])
    if not rows:
        raise Assignment.DoesNotExist(token)
    assignment, item, campaign = rawrows.instances(rows[0], Assignment, ReviewItem, Campaign)
    if assignment.reviewer_id != reviewer.pk:
        raise Assignment.DoesNotExist(token)  # someone else's: as if it did not exist
    item.campaign = campaign
    assignment.item = item
    return assignment


def assignment_submit(
    *, token: str, reviewer: AbstractBaseUser, key: str, data: dict
) -> SubmitResult:
    """Save a review once, fenced on the assignment still being this reviewer's.

    - Same `key` again (double click, retry after a network error) -> "duplicate", nothing new.
    - Lease ran out but nobody took the slot -> saved anyway ("saved_late"); work is not lost.
    - Lease ran out and the slot went to someone else -> "reassigned", nothing saved.
    Raises Assignment.DoesNotExist for a token that is not the reviewer's.
    """
    key = (key or "").strip()
    assignment = _submit_assignment(token=token, reviewer=reviewer)
    if len(key) > SUBMIT_KEY_MAX:
        # Refused, not cut: two keys that share their first characters would be one key,
        # and the second review would be taken for a retry of the first.
        return SubmitResult(
            "invalid",
            "Some answers are missing or invalid.",
            assignment,
            errors={"key": f"at most {SUBMIT_KEY_MAX} characters (a UUID has 36)"},
        )
    if assignment.state == Assignment.State.SUBMITTED:
        result = _settled_result(assignment, key)
        if result.code == "duplicate" and not same_answers(assignment, data):
            return SubmitResult(
                "key_reused",
                "Not saved: other answers to this item were already saved under the same "
                "submit key, and those stand.",
                assignment,
            )
        return result
    if assignment.state in (Assignment.State.SKIPPED, Assignment.State.RELEASED):
        return _closed_result(assignment)
    campaign = assignment.item.campaign
    parsed, errors = review_payload_parse(campaign=campaign, order=assignment.order, data=data)
    if errors:
        return SubmitResult(
            "invalid", "Some answers are missing or invalid.", assignment, errors=errors
        )
    if not key:
        key = "server-" + secrets.token_hex(8)

    for attempt in range(3):
        try:
            with transaction.atomic():
                review = _review_store_fenced(
                    assignment=assignment, reviewer=reviewer, key=key, parsed=parsed
                )
                if review is not None:
                    assignment.state, assignment.submit_key = Assignment.State.SUBMITTED, key
                    return SubmitResult("saved", "Saved.", assignment, review=review)
            # Not fenced. That transaction is over on purpose: a fence that lost a race may
            # still hold the row lock PostgreSQL took while re-checking it, and the late path
            # locks the item first (like a claim); holding both the other way round deadlocks.
            result = _submit_late(assignment=assignment, reviewer=reviewer, key=key, parsed=parsed)
        except OperationalError as exc:
            if not retryable(exc):
                raise
            result = RETRY
        if result is not RETRY:
            return result
        time.sleep(random.uniform(0.005, 0.02) * (attempt + 1))
    raise ClaimBusy("the item kept changing while saving; retry with the same key")


def _submit_late(
    *, assignment: Assignment, reviewer: AbstractBaseUser, key: str, parsed: dict
) -> SubmitResult:
    """A submit whose fence failed: a double click's twin, or a lease that ran out."""
    with transaction.atomic():
        item = (
            ReviewItem.objects.select_for_update(of=("self",), no_key=True)
            .filter(pk=assignment.item_id)
            .only("pk", "overlap", "live_count", "state")
            .first()
        )
        assignment.refresh_from_db()
        if assignment.state == Assignment.State.SUBMITTED:
            return _settled_result(assignment, key)
        if assignment.state == Assignment.State.ACTIVE:
            # Revived by a claim of the same reviewer meanwhile: go through the fence again
            # (not here, while holding the item lock).
            return RETRY
        if assignment.state != Assignment.State.EXPIRED:
            return _closed_result(assignment)
        # Expired: take a slot again if one is still free, so finished work is not lost.
        used = set(
            Assignment.objects.filter(item_id=item.pk, state__in=LIVE).values_list(
                "slot", flat=True
            )
        )
        free = [s for s in range(item.overlap) if s not in used]
        if item.state != ReviewItem.State.OPEN or item.live_count >= item.overlap or not free:
            return _closed_result(assignment)
        try:
            with transaction.atomic():
                revived = Assignment.objects.filter(
                    pk=assignment.pk, state=Assignment.State.EXPIRED
                ).update(
                    state=Assignment.State.SUBMITTED,
                    slot=free[0],
                    overlap=item.overlap,
                    submit_key=key,
                    submitted_at=Now(),
                )
                if revived != 1:
                    raise IntegrityError("assignment changed while saving a late review")
                ReviewItem.objects.filter(pk=item.pk).update(live_count=F("live_count") + 1)
        except IntegrityError:
            return _closed_result(assignment)
        review = _review_store(assignment=assignment, reviewer=reviewer, parsed=parsed)
    assignment.refresh_from_db()
    return SubmitResult(
        "saved_late",
        "Saved. Your time on this item had run out, but it still needed your review.",
        assignment,
        review=review,
    )


def _review_store_fenced(
    *, assignment: Assignment, reviewer: AbstractBaseUser, key: str, parsed: dict
) -> Review | None:
    """The fence, then the review: None (nothing written) unless the assignment was still this
    reviewer's active one, which the fence marks submitted under `key`."""
    now, now_params = now_sql()
    fence = (
        f"UPDATE {_A} SET state = {rawrows.literal(Assignment.State.SUBMITTED)}, submit_key = %s, "
        f"submitted_at = {now} WHERE id = %s AND state = {rawrows.literal(Assignment.State.ACTIVE)}"
    )
    fence_params = [key, *now_params, assignment.pk]
    if connection.vendor == "postgresql":
        # One round trip: the review, its scores and the item's count are written only when
        # the fence changed its row, in the fence's own statement.
        return _review_store(
            assignment=assignment,
            reviewer=reviewer,
            parsed=parsed,
            fence=(f"fence AS ({fence} RETURNING id)", fence_params),
        )
    with connection.cursor() as cursor:
        cursor.execute(fence, fence_params)
        fenced = cursor.rowcount
    return (
        _review_store(assignment=assignment, reviewer=reviewer, parsed=parsed) if fenced else None
    )


def _review_store(
    *,
    assignment: Assignment,
    reviewer: AbstractBaseUser,
    parsed: dict,
    fence: tuple[str, list] | None = None,
) -> Review | None:
    """Write the review and its scores; settle the item when this was its k-th review.

    `fence` (PostgreSQL): a `fence AS (UPDATE ... RETURNING id)` query and its parameters; all
    the writes then run in that one statement, only if the fence returns its row (else None)."""
    review = Review(
        item_id=assignment.item_id,
        assignment=assignment,
        reviewer=reviewer,
        preference=parsed["preference"],
        preferred_output_id=parsed["preferred_output_id"],
        flags=parsed["flags"],
        comment=parsed["comment"],
        seconds_spent=parsed["seconds_spent"],
        presented_order=list(assignment.order),
    )
    scores = [
        (output_id, dim, value)
        for output_id, dims in parsed["scores"].items()
        for dim, value in dims.items()
    ]
    columns = ("review_id", "output_id", "dimension", "value")
    # Counting the review returns the item's fresh state (the item row stays locked by this
    # UPDATE until commit, so two last reviews cannot both miss the settle).
    counted = "submitted_count, overlap, state"
    count = (
        f"UPDATE {_I} SET submitted_count = submitted_count + 1 WHERE id = %s RETURNING {counted}"
    )
    if fence is not None:
        fence_sql, fence_params = fence
        review_sql, review_params, clock = rawrows.insert_sql(
            review, db_now=["submitted_at"], source="fence"
        )
        writes, params = [fence_sql, f"review AS ({review_sql})"], [*fence_params, *review_params]
        if scores:
            scores_sql, scores_params = rawrows.insert_rows_sql(
                Score, columns, scores, first_from="review.id"
            )
            writes.append(f"scores AS ({scores_sql})")
            params += scores_params
        writes.append(
            f"counted AS (UPDATE {_I} i SET submitted_count = i.submitted_count + 1 FROM review "
            f"WHERE i.id = %s RETURNING i.submitted_count, i.overlap, i.state)"
        )
        rows = fetch(
            f"WITH {', '.join(writes)} SELECT review.*, {counted} FROM review, counted",
            [*params, assignment.item_id],
        )
        if not rows:
            return None
        *returned, submitted, overlap, state = rows[0]
        rawrows.inserted(review, returned, clock)
    else:
        rawrows.insert(review, db_now=["submitted_at"])  # the database clock, in the INSERT
        rows = [(review.pk, *score) for score in scores]
        if rows and connection.vendor == "postgresql":
            # The scores go in the same statement (one round trip less).
            insert_scores, params = rawrows.insert_rows_sql(Score, columns, rows)
            count, count_params = f"WITH scores AS ({insert_scores}) {count}", params
        else:
            rawrows.insert_rows(Score, columns, rows)
            count_params = []
        (submitted, overlap, state) = fetch(count, [*count_params, assignment.item_id])[0]
    if submitted >= overlap and state == ReviewItem.State.OPEN:
        item = assignment.item  # loaded with its campaign by the caller
        item.submitted_count, item.state = submitted, state
        item_settle(item, output_ids=assignment.order)
    return review
