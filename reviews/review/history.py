"""A reviewer's own history in a campaign ("my reviews") and a submitted review's answers as
its correction form shows them. Blind like every reviewer read: tokens, labels and masked
texts only, never an id, a contender or another reviewer."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.paginator import Page, Paginator
from django.db.models import Count, Max

from reviews.models import Assignment, Preference, Review, ReviewItem
from tasks.blinding import render as blinding
from tasks.blinding.campaign_texts import campaign_identity_terms, words_shown
from tasks.models import Campaign, Task

HISTORY_PER_PAGE = 50
PREVIEW_CHARS = 140
STATE_WORDS = {
    ReviewItem.State.OPEN: "waiting for the other reviews",
    ReviewItem.State.AGREED: "settled: agreed",
    ReviewItem.State.DISPUTED: "disputed: with an arbiter",
    ReviewItem.State.RESOLVED: "settled by an arbiter",
}


def reviewer_history(
    *, campaign: Campaign, reviewer: User, page: int | str = 1, may_review: bool
) -> Page:
    """The reviewer's submitted reviews in `campaign`, newest first, a page of them: when,
    which task (its opening words, masked), whether the item is settled, how often corrected,
    and whether it can still be corrected (its item open, the campaign open to them)."""
    rows = (
        Review.objects.filter(
            reviewer=reviewer,
            item__campaign=campaign,
            assignment__state=Assignment.State.SUBMITTED,
        )
        .annotate(corrections=Count("versions"), corrected_at=Max("versions__replaced_at"))
        .select_related("assignment", "item__task")
        .order_by("-submitted_at", "-pk")
    )
    paged = Paginator(rows, HISTORY_PER_PAGE).get_page(page)
    terms = campaign_identity_terms(campaign)
    paged.object_list = [
        {
            "token": review.assignment.token,
            "submitted_at": review.submitted_at,
            "corrected_at": review.corrected_at,
            "corrections": review.corrections,
            "task": words_shown(_opening(review.item.task), terms),
            "state": review.item.state,
            "state_words": STATE_WORDS.get(review.item.state, review.item.state),
            "correctable": may_review and review.item.state == ReviewItem.State.OPEN,
        }
        for review in paged.object_list
    ]
    return paged


def _opening(task: Task) -> str:
    """The words a reviewer recognises a task by: its prompt, or its first user turn."""
    users = [m.get("content") for m in task.messages or [] if m.get("role") == "user"]
    turns = [t for t in task.turns or [] if isinstance(t, str)]
    text = task.prompt or (turns[0] if turns else "") or next((u for u in users if u), "")
    text = " ".join(str(text).split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def review_entered(assignment: Assignment) -> dict:
    """The latest answers of the review on `assignment`, as the review form takes what a
    reviewer entered: by the labels this reviewer saw (their presented order)."""
    review = Review.objects.prefetch_related("scores").get(assignment=assignment)
    label_of = dict(zip(assignment.order, blinding.labels(len(assignment.order)), strict=True))
    scores: dict[str, dict[str, str]] = {}
    for score in review.scores.all():
        label = label_of.get(score.output_id)
        if label is not None:
            value = "na" if score.value is None else _number(score.value)
            scores.setdefault(label, {})[score.dimension] = value
    preference = review.preference
    if preference == Preference.OUTPUT:
        preference = label_of.get(review.preferred_output_id, "")
    flags = {
        label_of[int(output)]: list(names)
        for output, names in (review.flags or {}).items()
        if int(output) in label_of and names
    }
    return {"scores": scores, "preference": preference, "flags": flags, "comment": review.comment}


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
