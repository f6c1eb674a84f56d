"""Demo step: the demo monitor grades with the demo judge, so `./dev run` shows a monitor run
judged by a judge calibrated against people.

After the judge demo (reviews/judges/demo.py), the `support-golden` monitor of the monitor
demo (tasks/monitors/demo.py) is set to grade with `demo-judge`, calibrated on `judge-demo`,
with a threshold on `judge.accuracy`: the dimension the judge is calibrated on (its tone is
lenient, and its preference's advantage interval reaches just below -0.1: neither may grade a
monitor). Run 5 is then made as the monitor demo makes its runs (answers written from the
shipped outputs, no endpoint called) and judged as the workers would store it: each output
scored on the judge campaign's rubric, in both orders. Run 1's outputs (the baseline) are
scored too, so the comparison has the judge's figures on both sides.

Deterministic (a fixed seed); idempotent: a monitor that already has a judge is left alone.
"""

from __future__ import annotations

import random
from datetime import timedelta
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from reviews.judges.models import Judgement
from reviews.judges.monitoring import output_items_create
from reviews.models import ItemOutput, ReviewItem
from tasks.models import Campaign, Judge
from tasks.monitors import demo as monitor_demo
from tasks.monitors.definition import monitor_update
from tasks.monitors.grading import monitor_run_finish
from tasks.monitors.models import Monitor, MonitorRun
from tasks.monitors.runs import monitor_run_create

SEED = 3605


def monitor_judged(*, judge: Judge, calibration: Campaign, stdout) -> MonitorRun | None:
    """Grade the demo monitor with `judge` (calibrated on `calibration`) and add its judged
    run 5. None when there is no demo monitor or it has a judge already."""
    monitor = Monitor.objects.filter(slug=monitor_demo.SLUG).first()
    if monitor is None or monitor.judge_id:
        stdout.write(f"Monitor {monitor_demo.SLUG}: no judge added (missing, or judged already)")
        return None
    thresholds = [*monitor.thresholds, {"metric": "judge.accuracy", "max_drop": 0.5}]
    with transaction.atomic():
        monitor = monitor_update(
            monitor=monitor,
            changes={
                "judge": judge.name,
                "calibration": calibration.slug,
                "thresholds": thresholds,
            },
        )
    first = monitor.runs.get(number=1)
    # Run 1 was made before the judge: it gets the judge's rubric, and its outputs are scored.
    Campaign.objects.filter(pk=first.campaign_id).update(
        rubric=calibration.rubric, instructions=calibration.instructions, mode="rubric"
    )
    rng = random.Random(SEED)
    _judgements_write(campaign=first.campaign, judge=judge, rng=rng)
    with transaction.atomic():
        run = monitor_run_create(monitor=monitor, scheduled_for=None, baseline=None)
    now = timezone.now()
    monitor_demo.run_answer(
        run=run, number=5, answers=monitor_demo.shipped_answers(), rng=rng, now=now
    )
    _judgements_write(campaign=run.campaign, judge=judge, rng=rng)
    monitor_run_finish(run_id=run.pk)
    when = now - timedelta(hours=1)
    MonitorRun.objects.filter(pk=run.pk).update(created_at=when, finished_at=when)
    run.alerts.update(created_at=when)
    stdout.write(
        f"Monitor {monitor.slug}: graded by {judge.name} (calibrated on {calibration.slug}), "
        "run 5 judged"
    )
    return run


def _judgements_write(*, campaign: Campaign, judge: Judge, rng: random.Random) -> int:
    """The judge's answers for the run's outputs, stored as the workers store them: accuracy
    4 for an answer that passes its checks and 2 for one that does not (a point off now and
    then), tone 4."""
    with transaction.atomic():
        output_items_create(campaign)
    accuracy = {}
    for pk, passed in ItemOutput.objects.filter(item__campaign=campaign).values_list(
        "pk", "generation__checks_passed"
    ):
        accuracy[pk] = (4 if passed is not False else 2) - (1 if rng.random() < 0.15 else 0)
    rows = []
    items = ReviewItem.objects.filter(campaign=campaign).prefetch_related("outputs")
    for item in items.order_by("pk"):
        outputs = sorted(o.pk for o in item.outputs.all())
        order = rng.sample(outputs, len(outputs))
        scores = {str(o): {"accuracy": accuracy[o], "tone": 4} for o in outputs}
        for swapped in (False, True):
            rows.append(
                Judgement(
                    judge=judge,
                    campaign=campaign,
                    item=item,
                    sample=0,
                    swapped=swapped,
                    order=order[::-1] if swapped else order,
                    status=Judgement.Status.DONE,
                    attempts=1,
                    reasoning="Read the answer against the rubric's anchors.",
                    raw_answer="(written by the demo)",
                    input_tokens=700,
                    output_tokens=90,
                    cost=Decimal("0.000485"),
                    latency_ms=1200,
                    finished_at=timezone.now(),
                    scores=scores,
                )
            )
    Judgement.objects.bulk_create(rows)
    return len(rows)
