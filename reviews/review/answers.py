"""A submit's answers: checked against the rubric (reviews/rubric.py), labels mapped to outputs."""

from __future__ import annotations

import math

from reviews.disputes.rules import unknown_field_errors
from reviews.models import Assignment, Preference, Review, ReviewItem
from reviews.rubric import CheckOptions, Rubric, answers_check
from reviews.rubric import Mode as AnswerMode
from tasks.blinding import render as blinding
from tasks.models import Campaign

SUBMIT_FIELDS = ("scores", "preference", "flags", "comment", "seconds_spent", "key")


def review_payload_parse(
    *, campaign: Campaign, order: list[int], data: dict, item: ReviewItem | None = None
) -> tuple[dict, dict[str, str]]:
    """Check a submit against the rubric and map labels to ItemOutput ids.

    `data` = {"scores": {"A": {"accuracy": 4}}, "preference": "A"|"tie"|"both_bad",
    "flags": {"A": ["hallucination"]}, "comment": "...", "seconds_spent": 42, "key": "..."}.
    "na" or null is N/A where a dimension allows it. Returns (parsed, errors); errors map
    "scores.A.accuracy"-style paths to messages. Any other field is an error: a misspelt one
    would otherwise be dropped without a word. The answers are checked by reviews/rubric.py,
    against the `item`'s rubric when given (its task's per-turn scores included).
    """
    labels = blinding.labels(len(order))
    by_label = dict(zip(labels, order, strict=True))
    wants_scores, wants_preference = campaign.wants()
    errors = unknown_field_errors(data, SUBMIT_FIELDS)
    if not isinstance(data.get("key"), str | None):
        errors["key"] = "must be a string"
    answers = answers_check(
        rubric=Rubric.for_item(item) if item is not None else Rubric.of(campaign),
        labels=labels,
        data=data,
        mode=AnswerMode.REVIEW,
        options=CheckOptions(wants_scores=wants_scores, wants_preference=wants_preference),
    )
    errors.update(answers.errors)
    preference, preferred = answers.preference or "", None
    if preference in by_label:
        preference, preferred = Preference.OUTPUT, by_label[preference]

    # A number from the API, text from the review page's hidden field (which the browser's
    # clock fills: negative if the clock was set back, so clamped, never refused: the reviewer
    # could not correct a hidden field).
    seconds = data.get("seconds_spent")
    if seconds is None or seconds == "":
        seconds = None
    else:
        try:
            value = float(seconds) if not isinstance(seconds, bool) else math.nan
        except (TypeError, ValueError):
            value = math.nan
        if math.isfinite(value):
            seconds = round(max(0.0, min(value, 86400.0)))
        else:
            errors["seconds_spent"] = "must be a number of seconds"
            seconds = None

    parsed = {
        "scores": {by_label[label]: dims for label, dims in answers.scores.items() if dims},
        "preference": preference,
        "preferred_output_id": preferred,
        "flags": {str(by_label[label]): sorted(set(f)) for label, f in answers.flags.items() if f},
        "comment": answers.comment,
        "seconds_spent": seconds,
    }
    return parsed, errors


def same_answers(assignment: Assignment, data: dict) -> bool:
    """Whether a retry carries the answers stored under its key (a retry after a network
    error does; a script reusing one key for changed answers does not). The time spent is
    left out: the review page's clock moves between a submit and its retry."""
    parsed, errors = review_payload_parse(
        campaign=assignment.item.campaign, order=assignment.order, data=data, item=assignment.item
    )
    review = Review.objects.filter(assignment=assignment).first()
    if errors or review is None:
        return not errors
    stored: dict[int, dict] = {}
    for output_id, dimension, value in review.scores.values_list("output_id", "dimension", "value"):
        stored.setdefault(output_id, {})[dimension] = value
    return (
        stored == parsed["scores"]
        and (review.preference, review.preferred_output_id)
        == (parsed["preference"], parsed["preferred_output_id"])
        and review.flags == parsed["flags"]
        and review.comment == parsed["comment"]
    )
