"""A reviewer's correction of a review they submitted, until its item is settled.

The Review row stays the latest version (settling, agreement and exports read it); the answers
it replaces are kept as a ReviewVersion. Race with the settle: a correction locks the item row
and goes on only while the item is still open; the k-th submit moves the item's counters in
an UPDATE of that same row before it settles. So either the correction commits first and the
settle (a later statement, a fresh snapshot) reads the corrected answers, or the settle
commits first and the correction finds the item agreed or disputed and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models.functions import Now

from reviews.models import Assignment, Review, ReviewItem, ReviewVersion, Score
from reviews.review.answers import review_payload_parse
from reviews.review.submit import reviewer_assignment, score_rows

SETTLED_WORDS = {
    ReviewItem.State.AGREED: "settled: the reviewers agreed",
    ReviewItem.State.DISPUTED: "disputed and waiting for an arbiter",
    ReviewItem.State.RESOLVED: "settled by an arbiter",
}


@dataclass
class CorrectResult:
    # saved | invalid | settled | not_submitted
    code: str
    message: str
    errors: dict[str, str] = field(default_factory=dict)
    version: int = 0  # the review's version after a saved correction (2 = corrected once)

    @property
    def ok(self) -> bool:
        return self.code == "saved"


def settled_message(state: str) -> str:
    return (
        f"This item is {SETTLED_WORDS.get(state, 'settled')}; your review can no longer be changed."
    )


def review_correct(*, token: str, reviewer: User, data: dict) -> CorrectResult:
    """Replace the answers of `reviewer`'s submitted review on assignment `token` with `data`
    (a submit's shape), keeping the old ones. Raises Assignment.DoesNotExist for a token that
    is not the reviewer's."""
    assignment, _ = reviewer_assignment(token=token, reviewer=reviewer)
    if assignment.state != Assignment.State.SUBMITTED:
        return CorrectResult("not_submitted", "Only a submitted review can be corrected.")
    data = {k: v for k, v in data.items() if k != "key"}
    parsed, errors = review_payload_parse(
        campaign=assignment.item.campaign, order=assignment.order, data=data, item=assignment.item
    )
    if errors:
        return CorrectResult("invalid", "Some answers are missing or invalid.", errors=errors)
    with transaction.atomic():
        # The item row first, as a submit's counters and a claim take it (no deadlock).
        state = (
            ReviewItem.objects.select_for_update(of=("self",), no_key=True)
            .filter(pk=assignment.item_id)
            .values_list("state", flat=True)
            .get()
        )
        if state != ReviewItem.State.OPEN:
            return CorrectResult("settled", settled_message(state))
        review = Review.objects.select_for_update().get(assignment=assignment)
        version = _version_keep(review)
        _answers_replace(review, parsed)
    return CorrectResult("saved", "Corrected. Your earlier answers are kept.", version=version + 1)


def _version_keep(review: Review) -> int:
    """Keep the review's current answers as its next old version; that version's number."""
    version = review.versions.count() + 1
    ReviewVersion.objects.create(
        review=review,
        version=version,
        answers={
            "preference": review.preference,
            "preferred_output": review.preferred_output_id,
            "flags": review.flags,
            "comment": review.comment,
            "seconds_spent": review.seconds_spent,
            "scores": [[s.output_id, s.dimension, s.value] for s in review.scores.order_by("pk")],
        },
        replaced_at=Now(),
    )
    return version


def _answers_replace(review: Review, parsed: dict) -> None:
    review.preference = parsed["preference"]
    review.preferred_output_id = parsed["preferred_output_id"]
    review.flags = parsed["flags"]
    review.comment = parsed["comment"]
    if parsed["seconds_spent"] is not None:
        review.seconds_spent = (review.seconds_spent or 0) + parsed["seconds_spent"]
    review.save(
        update_fields=["preference", "preferred_output", "flags", "comment", "seconds_spent"]
    )
    review.scores.all().delete()
    Score.objects.bulk_create(
        Score(review=review, output_id=output_id, dimension=dimension, value=value)
        for output_id, dimension, value in score_rows(parsed)
    )
