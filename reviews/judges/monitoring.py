"""What a monitor asks of judges (through tasks/review_side.py): a judge's verdicts on a
calibration campaign, judging a run's outputs (alone, and against the baseline run's), and
the judge's scores and preferences of them.

Monitors live in tasks and never import reviews; these functions are registered in the port
by ReviewsConfig.ready()."""

from __future__ import annotations

import pandas as pd
from django.db import transaction

from reviews.judges.calibration import judge_calibration, judging_progress
from reviews.judges.models import Judgement
from reviews.judges.screen import VERSUS_BASELINE
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


def judge_outputs(*, judge: Judge, campaign: Campaign, baseline: Campaign | None = None) -> dict:
    """Judge every done output of a monitor run's campaign, once: one review item per output
    (the judge scores it alone, blind, on the campaign's rubric) and, with `baseline` (the
    baseline run's campaign), one item per output beside the baseline's output of the same
    contender, task and sample (the judge says which is better). The judgements are queued
    the first time only (the reconciler re-sends lost ones; a failed judgement stays failed
    and its output unscored). Returns the progress: {"finished", "judgements", "done",
    "failed", "cost", ...}."""
    if not Judgement.objects.filter(campaign=campaign, judge=judge).exists():
        with transaction.atomic():
            made = output_items_create(campaign)
            if baseline is not None:
                made += _versus_items_create(campaign, baseline)
        if not made:
            return {**judging_progress(campaign=campaign, judge=judge), "finished": True}
        judging_enqueue(campaign=campaign, judge=judge)
    return judging_progress(campaign=campaign, judge=judge)


def output_items_create(campaign: Campaign) -> int:
    """A ready item per done output. It stays `waiting`: reviewers are offered open items
    only, and a monitor run's campaign has no roster anyway. Returns how many were made."""
    done = Generation.objects.filter(
        campaign=campaign, status=Generation.Status.DONE, single_turn=False
    ).values_list("pk", "task_id", "sample_index", "contender_id")
    made = 0
    for pk, task_id, sample, contender_id in done:
        item, _ = ReviewItem.objects.get_or_create(
            campaign=campaign,
            task_id=task_id,
            sample_index=sample,
            pair_key=f"output-{contender_id}",
            defaults={"overlap": 1, "ready": True},
        )
        ItemOutput.objects.get_or_create(item=item, generation_id=pk)
        made += 1
    return made


def _versus_items_create(campaign: Campaign, baseline: Campaign) -> int:
    """A ready item per done output of the run whose contender (by name, as the comparison
    matches them) has a done output of the same task and sample in the baseline run: the
    two outputs side by side, for the judge's preference. Returns how many were made."""
    fields = ("pk", "task_id", "sample_index", "contender__name", "contender_id")

    def done(of: Campaign):
        return Generation.objects.filter(
            campaign=of, status=Generation.Status.DONE, single_turn=False
        ).values_list(*fields)

    before = {(task, sample, name): pk for pk, task, sample, name, _ in done(baseline)}
    made = 0
    for pk, task_id, sample, name, contender_id in done(campaign):
        other = before.get((task_id, sample, name))
        if other is None:
            continue
        item, _ = ReviewItem.objects.get_or_create(
            campaign=campaign,
            task_id=task_id,
            sample_index=sample,
            pair_key=f"{VERSUS_BASELINE}{contender_id}",
            defaults={"overlap": 1, "ready": True},
        )
        ItemOutput.objects.get_or_create(item=item, generation_id=pk)
        ItemOutput.objects.get_or_create(item=item, generation_id=other)
        made += 1
    return made


def judge_preferences(*, judge: Judge, campaign: Campaign, baseline: Campaign) -> list[dict]:
    """The judge's preference of each run output over the baseline run's output of the same
    task and sample: [{"contender", "task", "sample", "value"}], value 1 (the run's output
    won), 0 (the baseline's) or 0.5 (a tie, both bad, or a judge whose samples and orders
    draw: the majority of its choices, as for any judge's preference)."""
    sides: dict[int, dict[int, str]] = {}
    for item_id, output_id, campaign_id in ItemOutput.objects.filter(
        item__campaign=campaign, item__pair_key__startswith=VERSUS_BASELINE
    ).values_list("item_id", "pk", "generation__campaign_id"):
        side = (
            "run"
            if campaign_id == campaign.pk
            else "baseline"
            if campaign_id == baseline.pk
            else ""
        )
        sides.setdefault(item_id, {})[output_id] = side
    choices: dict[int, list[str]] = {}
    for item_id, preference in Judgement.objects.filter(
        campaign=campaign, judge=judge, status=Judgement.Status.DONE, item_id__in=list(sides)
    ).values_list("item_id", "preference"):
        picked = sides[item_id].get(int(preference)) if preference.isdigit() else "tie"
        choices.setdefault(item_id, []).append(picked or "tie")
    where = {
        item_id: (name, task, sample)
        for item_id, name, task, sample in ItemOutput.objects.filter(
            item_id__in=list(choices), generation__campaign=campaign
        ).values_list(
            "item_id",
            "generation__contender__name",
            "generation__task__external_id",
            "generation__sample_index",
        )
    }
    wins = {"run": 1.0, "baseline": 0.0, "tie": 0.5}
    return [
        {
            "contender": where[item_id][0],
            "task": where[item_id][1],
            "sample": where[item_id][2],
            "value": wins[calibration.majority(picked)],
        }
        for item_id, picked in sorted(choices.items())
        if item_id in where and set(sides[item_id].values()) == {"run", "baseline"}
    ]
