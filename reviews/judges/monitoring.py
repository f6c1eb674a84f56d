"""What a monitor asks of judges (through tasks/review_side.py): a judge's verdicts on a
calibration campaign, judging a run's outputs, and the judge's scores of them.

Monitors live in tasks and never import reviews; these two reads are registered in the port
by ReviewsConfig.ready()."""

from __future__ import annotations

import pandas as pd
from django.db import transaction

from reviews.judges.calibration import judge_calibration, judging_progress
from reviews.judges.models import Judgement
from reviews.judges.services import judging_enqueue
from reviews.models import ItemOutput, ReviewItem
from reviews.rubric import Rubric
from reviews.stats import calibration
from tasks.models import Campaign, Generation, Judge


def judge_verdicts(*, judge: Judge, campaign: Campaign) -> dict:
    """{"rubric": [keys], "dimensions": {key: {"verdict", "reason"}}, "preference": {...} or
    None}: the calibration page's verdicts, computed now (the panel may have grown)."""
    figures = judge_calibration(campaign=campaign, judge=judge)
    preference = figures["preference"]
    return {
        "rubric": [d.key for d in Rubric.of(campaign).final],
        "dimensions": {
            key: {"verdict": d["verdict"], "reason": d["reason"]}
            for key, d in figures["dimensions"].items()
        },
        "preference": (
            None
            if preference is None
            else {"verdict": preference["verdict"], "reason": preference["reason"]}
        ),
    }


def judge_output_scores(*, judge: Judge, campaign: Campaign) -> list[dict]:
    """One row per judged output and dimension: the median of the judge's samples and orders
    (N/A left out), with the output's contender, task and sample."""
    rows = [
        (item, int(output), str(dim), float(value) if value is not None else float("nan"))
        for item, scores in Judgement.objects.filter(
            campaign=campaign, judge=judge, status=Judgement.Status.DONE, scores__isnull=False
        ).values_list("item_id", "scores")
        for output, dims in (scores or {}).items()
        for dim, value in (dims or {}).items()
        if not isinstance(value, bool)
    ]
    if not rows:
        return []
    combined = calibration.judge_scores(
        pd.DataFrame(rows, columns=["item", "output", "dimension", "value"])
    )
    where = {
        pk: (contender, task, sample)
        for pk, contender, task, sample in ItemOutput.objects.filter(
            pk__in=combined["output"].unique().tolist()
        ).values_list(
            "pk",
            "generation__contender__name",
            "generation__task__external_id",
            "generation__sample_index",
        )
    }
    return [
        {
            "contender": where[output][0],
            "task": where[output][1],
            "sample": where[output][2],
            "dimension": dim,
            "value": float(value),
        }
        for output, dim, value in zip(
            combined["output"], combined["dimension"], combined["value"], strict=True
        )
        if output in where
    ]


def judge_outputs(*, judge: Judge, campaign: Campaign) -> dict:
    """Judge every done output of a monitor run's campaign, once: one review item per output
    (the judge scores it alone, blind, on the campaign's rubric), its judgements queued the
    first time only (the reconciler re-sends lost ones; a failed judgement stays failed and
    its output unscored). Returns the progress: {"finished", "judgements", "done", "failed",
    "cost", ...}."""
    if not Judgement.objects.filter(campaign=campaign, judge=judge).exists():
        if not _output_items_create(campaign):
            return {**judging_progress(campaign=campaign, judge=judge), "finished": True}
        judging_enqueue(campaign=campaign, judge=judge)
    return judging_progress(campaign=campaign, judge=judge)


def _output_items_create(campaign: Campaign) -> int:
    """A ready item per done output. It stays `waiting`: reviewers are offered open items
    only, and a monitor run's campaign has no roster anyway. Returns how many outputs have
    one."""
    done = Generation.objects.filter(
        campaign=campaign, status=Generation.Status.DONE, single_turn=False
    ).values_list("pk", "task_id", "sample_index", "contender_id")
    with transaction.atomic():
        for pk, task_id, sample, contender_id in done:
            item, _ = ReviewItem.objects.get_or_create(
                campaign=campaign,
                task_id=task_id,
                sample_index=sample,
                pair_key=f"output-{contender_id}",
                defaults={"overlap": 1, "ready": True},
            )
            ItemOutput.objects.get_or_create(item=item, generation_id=pk)
    return ItemOutput.objects.filter(item__campaign=campaign).count()
