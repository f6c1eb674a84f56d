"""A judge's view of one review item: what a reviewer sees, in the judgement's order.

Built by the reviewer's own selector (reviews.review.selectors.review_screen) on the item with the
judgement's order standing in for an assignment's, so masking, labels, transcripts, rubric and
instructions are the reviewer's by construction, then put in the reviewer API's shape. Only
the rubric's own dimensions are asked (a conversation's per-turn scores are left to people).

A monitor run's item "against the baseline" (its pair key starts with VERSUS_BASELINE) shows
the run's output beside the baseline run's output of the same task and sample, and asks only
which is better: the judge's preference, whatever the campaign's mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from reviews import transcript_shown
from reviews.review.selectors import review_screen
from reviews.screen import task_json
from tasks.judges.answer import AnswerShape, Scale
from tasks.models import Campaign

# The pair key of a monitor run's item showing a run's output beside its baseline's.
VERSUS_BASELINE = "vs-baseline-"


@dataclass(frozen=True)
class Seat:
    """What review_screen reads of an assignment: the item and the order shown."""

    item_id: int
    order: list[int]
    token: str = ""
    state: str = "judge"
    lease_expires_at: datetime | None = None


def versus_baseline(pair_key: str) -> bool:
    """Whether an item shows a monitor run's output against its baseline's (preference only)."""
    return pair_key.startswith(VERSUS_BASELINE)


def judge_view(
    *, campaign: Campaign, item_id: int, order: list[int], preference_only: bool = False
) -> dict:
    """The reviewer API's view of the item (labels and masked text only) in `order`.
    `preference_only`: ask which output is better and no scores (an item against a baseline)."""
    screen = review_screen(assignment=Seat(item_id, list(order)), campaign=campaign, html=False)
    shown = screen["task"]
    rubric = [
        {k: d[k] for k in ("key", "label", "description", "min", "max", "anchors", "allow_na")}
        for d in screen["rubric"]
        if not d["turn"]
    ]
    choices = screen["preference_choices"]
    if preference_only:
        labels = [c["label"] for c in screen["candidates"]]
        rubric, choices = [], [*labels, "tie", "both_bad"]
    return {
        "mode": "pairwise" if preference_only else screen["campaign"]["mode"],
        "task": task_json(
            category=shown["category"],
            multi_turn=shown["multi_turn"],
            conversation=shown["conversation"],
            reference=shown["reference"]["text"] if shown["reference"] else None,
            turns=shown["turns"],
        ),
        "instructions": (screen["instructions"] or {}).get("text", ""),
        "candidates": [transcript_shown.candidate_json(c) for c in screen["candidates"]],
        "rubric": rubric,
        "preference_choices": choices,
    }


def answer_shape(view: dict) -> AnswerShape:
    """What a judgement of `view` must answer."""
    return AnswerShape(
        labels=tuple(c["label"] for c in view["candidates"]),
        scales=tuple(
            Scale(key=d["key"], min=d["min"], max=d["max"], allow_na=d["allow_na"])
            for d in view["rubric"]
        ),
        preference_choices=tuple(view["preference_choices"]),
    )
