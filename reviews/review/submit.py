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

from django.contrib.auth.models import User
from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import F
from django.db.models.functions import Now

from reviews.disputes.rules import item_settle
from reviews.models import Assignment, Review, ReviewItem, Score
from reviews.review import sql
from reviews.review.answers import review_payload_parse, same_answers
from reviews.review.claim import RETRY, ClaimBusy, Retry, retryable
from reviews.review.leases import LIVE

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


def reviewer_assignment(*, token: str, reviewer: User) -> tuple[Assignment, bool]:
    """The reviewer's assignment `token` with its item and campaign, and whether they were
    removed from the campaign, in one statement; someone else's token is as if it did not
    exist (Assignment.DoesNotExist)."""
    found = sql.submit_assignment(token=token)
    if found is None or found[0].reviewer_id != reviewer.pk:
        raise Assignment.DoesNotExist(token)
    return found


def assignment_submit(
    *,
    reviewer: User,
    key: str,
    data: dict,
    token: str | None = None,
    assignment: Assignment | None = None,
) -> SubmitResult:
    """Save a review once, fenced on the assignment still being this reviewer's.

    - Same `key` again (double click, retry after a network error) -> "duplicate", nothing new.
    - Lease ran out but nobody took the slot -> saved anyway ("saved_late"); work is not lost.
    - Lease ran out and the slot went to someone else -> "reassigned", nothing saved.
    Give the `token`, or the `assignment` a view already read with reviewer_assignment (its
    item and campaign loaded; not read again). Raises Assignment.DoesNotExist for a token
    that is not the reviewer's.
    """
    key = (key or "").strip()
    if assignment is None:
        assignment, _ = reviewer_assignment(token=token or "", reviewer=reviewer)
    refused = _submit_refused(assignment=assignment, key=key, data=data)
    if refused is not None:
        return refused
    campaign = assignment.item.campaign
    parsed, errors = review_payload_parse(
        campaign=campaign, order=assignment.order, data=data, item=assignment.item
    )
    if errors:
        return SubmitResult(
            "invalid", "Some answers are missing or invalid.", assignment, errors=errors
        )
    if not key:
        key = "server-" + secrets.token_hex(8)
    return _submit_store(assignment=assignment, reviewer=reviewer, key=key, parsed=parsed)


def _submit_refused(*, assignment: Assignment, key: str, data: dict) -> SubmitResult | None:
    """The answer to a submit that stores nothing: a key too long, an assignment already
    submitted (a duplicate, or a reused key), skipped or released. None: go on."""
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
    return None


def _submit_store(
    *, assignment: Assignment, reviewer: User, key: str, parsed: dict
) -> SubmitResult:
    """Store the checked answers: fenced in one transaction, else by the late path; a lost
    race is retried (three times, then ClaimBusy)."""
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
    *, assignment: Assignment, reviewer: User, key: str, parsed: dict
) -> SubmitResult | Retry:
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
    *, assignment: Assignment, reviewer: User, key: str, parsed: dict
) -> Review | None:
    """The fence, then the review: None (nothing written) unless the assignment was still this
    reviewer's active one, which the fence marks submitted under `key`.

    On PostgreSQL fence and writes are one statement (reviews/review/sql.py); elsewhere the same
    steps in the ORM, which that statement is tested against (docs/decisions/0004)."""
    review = _review_of(assignment, reviewer, parsed)
    if connection.vendor == "postgresql":
        stored = sql.review_store_fenced(
            assignment=assignment,
            reviewer_id=reviewer.pk,
            key=key,
            review=parsed,
            scores=_score_rows(parsed),
        )
        if stored is None:
            return None
        review.pk, review.submitted_at, submitted, overlap, state = stored
        review._state.adding = False
        _settle_if_complete(assignment, submitted=submitted, overlap=overlap, state=state)
        return review
    fenced = (
        Assignment.objects.filter(pk=assignment.pk)
        .active()
        .update(state=Assignment.State.SUBMITTED, submit_key=key, submitted_at=Now())
    )
    return (
        _review_store(assignment=assignment, reviewer=reviewer, parsed=parsed) if fenced else None
    )


def _review_of(assignment: Assignment, reviewer: User, parsed: dict) -> Review:
    return Review(
        item_id=assignment.item_id,
        assignment=assignment,
        reviewer=reviewer,
        preference=parsed["preference"],
        preferred_output_id=parsed["preferred_output_id"],
        flags=parsed["flags"],
        comment=parsed["comment"],
        seconds_spent=parsed["seconds_spent"],
        submitted_at=Now(),  # the database clock
        presented_order=list(assignment.order),
    )


def _score_rows(parsed: dict) -> list[tuple]:
    """(output id, dimension, value) of each score of a parsed submit."""
    return [
        (output_id, dimension, value)
        for output_id, dims in parsed["scores"].items()
        for dimension, value in dims.items()
    ]


def _review_store(*, assignment: Assignment, reviewer: User, parsed: dict) -> Review:
    """Write the review and its scores; settle the item when this was its k-th review."""
    review = _review_of(assignment, reviewer, parsed)
    review.save(force_insert=True)
    Score.objects.bulk_create(
        Score(review=review, output_id=output_id, dimension=dimension, value=value)
        for output_id, dimension, value in _score_rows(parsed)
    )
    item = ReviewItem.objects.filter(pk=assignment.item_id)
    item.update(submitted_count=F("submitted_count") + 1)
    # That UPDATE keeps the item row locked until commit, so this is the count with this
    # review and without any other's not yet committed: two last reviews cannot both miss the
    # settle, nor both run it.
    submitted, overlap, state = item.values_list("submitted_count", "overlap", "state").get()
    _settle_if_complete(assignment, submitted=submitted, overlap=overlap, state=state)
    return review


def _settle_if_complete(
    assignment: Assignment, *, submitted: int, overlap: int, state: str
) -> None:
    """Settle the item (agreed or disputed) when this review was its k-th."""
    if submitted >= overlap and state == ReviewItem.State.OPEN:
        item = assignment.item  # loaded with its campaign by the caller
        item.submitted_count, item.state = submitted, state
        item_settle(item, output_ids=assignment.order)


# The correction (correct.py) writes the scores as a submit does.
score_rows = _score_rows
