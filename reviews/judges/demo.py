"""Demo step: a judge calibrated against a settled campaign, so `./dev run` shows the
calibration page with one dimension calibrated and one not, each with its reason.

`manage.py demo` runs this after the reviews step. It makes the campaign `judge-demo` on the
demo test set (12 tasks x 3 samples = 36 items, two of the demo's contenders, their outputs
written directly), settles every item with two simulated reviewers (the second a point off on
every fifth output, within the allowed gap), and writes the judgements of `demo-judge` as the
workers would store them: on accuracy it scores near the panel; on tone it is lenient, one
point above the truth (so its tone is biased and not calibrated); its preference follows its
scores. The judge points at the local fake endpoint (http://127.0.0.1:8001/v1, as the demo
monitor's contenders do): *Judge* on the page queues real judgements against it.

Then the demo monitor grades with the judge (demo_monitor.py).

Deterministic (a fixed seed); idempotent: an existing `judge-demo` campaign is left alone.
"""

from __future__ import annotations

import random
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from reviews.disputes.rules import item_settle
from reviews.judges.demo_monitor import monitor_judged
from reviews.judges.models import Judgement
from reviews.models import Review, ReviewItem, Score
from reviews.review.readiness import review_items_sync
from tasks.demo.campaign import RUBRIC
from tasks.models import Campaign, Generation, Judge, TestSet

SLUG = "judge-demo"
JUDGE = "demo-judge"
SEED = 36
DIMENSIONS = [d for d in RUBRIC if d["key"] in ("accuracy", "tone")]
PHRASES = {
    1: "I cannot help with that.",
    2: "Maybe try again later.",
    3: "Please restart the router.",
    4: "Please restart the router; if the light stays red, we will send a technician.",
    5: "Sorry for the trouble: restart the router, and if the light stays red we will send a "
    "technician tomorrow, free of charge.",
}


def load(context: dict, stdout) -> dict:
    if Campaign.objects.filter(slug=SLUG).exists():
        stdout.write(f"Judge demo {SLUG}: already present, left as it is.")
        return {}
    made = _judge_demo(context, stdout)
    if made:
        # The demo monitor grades with the judge just calibrated (reviews/judges/demo_monitor.py).
        monitor_judged(judge=_judge(), calibration=made["judge_demo"], stdout=stdout)
    return made


def _judge_demo(context: dict, stdout) -> dict:
    testset = TestSet.objects.filter(name="support-demo").order_by("-version").first()
    source = Campaign.objects.filter(slug="support-demo").first()
    users = context.get("users") or {}
    reviewers = [users.get("reviewer1"), users.get("reviewer2")]
    if testset is None or source is None or None in reviewers:
        stdout.write("Judge demo: the demo test set, campaign or reviewers are missing, skipped.")
        return {}
    contenders = list(source.contenders.order_by("name")[:2])
    rng = random.Random(SEED)
    with transaction.atomic():
        campaign = _campaign(testset, contenders)
        truth = _outputs(campaign, rng)
        review_items_sync(campaign=campaign)
        _settle(campaign, reviewers, truth, rng)
        judge = _judge()
        made = _judgements(campaign, judge, truth, rng)
    stdout.write(
        f"Judge demo {SLUG}: 36 settled items, {made} judgements by {JUDGE} "
        "(accuracy calibrated, tone lenient and not)"
    )
    return {"judge_demo": campaign}


def _campaign(testset: TestSet, contenders) -> Campaign:
    campaign = Campaign.objects.create(
        slug=SLUG,
        name="Judge calibration demo",
        testset=testset,
        rubric=[dict(d) for d in DIMENSIONS],
        samples_per_task=3,
        reviewed_samples=3,
        overlap=2,
        mode="both",
        status=Campaign.Status.REVIEWING,
    )
    campaign.contenders.set(contenders)
    return campaign


def _outputs(campaign: Campaign, rng: random.Random) -> dict[int, dict[str, int]]:
    """Done generations whose text fits a drawn quality; {generation id: {dim: true value}}."""
    rows, truth = [], []
    for task in campaign.testset.tasks.order_by("position"):
        for contender in campaign.contenders.all():
            for sample in range(3):
                accuracy, tone = rng.randint(1, 5), rng.randint(1, 5)
                rows.append(
                    Generation(
                        campaign=campaign,
                        task=task,
                        contender=contender,
                        sample_index=sample,
                        status=Generation.Status.DONE,
                        output=PHRASES[accuracy],
                        input_tokens=120,
                        output_tokens=40,
                        latency_ms=800,
                        cost=Decimal("0.0001"),
                        checks_passed=True,
                        finished_at=timezone.now(),
                    )
                )
                truth.append({"accuracy": accuracy, "tone": tone})
    made = Generation.objects.bulk_create(rows)
    return {g.pk: t for g, t in zip(made, truth, strict=True)}


def _settle(campaign: Campaign, reviewers, truth: dict, rng: random.Random) -> None:
    """Two reviews per item, then the item settled by the dispute rules."""
    now = timezone.now()
    unit = 0
    for item in ReviewItem.objects.filter(campaign=campaign).order_by("pk"):
        outputs = list(item.outputs.order_by("pk"))
        values = {o.pk: truth[o.generation_id] for o in outputs}
        overall = {o: sum(v.values()) for o, v in values.items()}
        best = max(overall, key=overall.get)
        tied = list(overall.values()).count(overall[best]) > 1
        for n, reviewer in enumerate(reviewers):
            review = Review.objects.create(
                item=item,
                reviewer=reviewer,
                preference="tie" if tied else "output",
                preferred_output_id=None if tied else best,
                submitted_at=now,
                presented_order=[o.pk for o in outputs],
            )
            scores = []
            for output in outputs:
                for dim, value in values[output.pk].items():
                    off = 1 if n == 1 and (unit + len(scores)) % 5 == 4 and value < 5 else 0
                    scores.append(
                        Score(review=review, output=output, dimension=dim, value=value + off)
                    )
            Score.objects.bulk_create(scores)
        unit += 1
        item.submitted_count = item.live_count = 2
        item.save(update_fields=["submitted_count", "live_count"])
        item_settle(item)


def _judge() -> Judge:
    judge, _ = Judge.objects.get_or_create(
        name=JUDGE,
        defaults={
            "provider": Judge.Provider.OPENAI,
            "base_url": "http://127.0.0.1:8001/v1",
            "model": "demo-judge-model",
            "params": {"temperature": 0},
            "price_in_per_mtok": Decimal("0.5"),
            "price_out_per_mtok": Decimal("1.5"),
            "max_concurrency": 8,
            "samples": 1,
            "position_swap": True,
            "instructions": "Judge the tone by how our best agent would write.",
        },
    )
    return judge


def _judgements(campaign: Campaign, judge: Judge, truth: dict, rng: random.Random) -> int:
    """Each item judged in a drawn order and its reverse: accuracy near the truth, tone one
    point lenient; the preference the better total, as the judge scored it."""
    rows = []
    for item in ReviewItem.objects.filter(campaign=campaign).prefetch_related("outputs"):
        outputs = [o.pk for o in item.outputs.all()]
        generation = {o.pk: o.generation_id for o in item.outputs.all()}
        order = rng.sample(outputs, len(outputs))
        for swapped in (False, True):
            scores = {}
            for output in outputs:
                t = truth[generation[output]]
                slip = 1 if rng.random() < 0.1 and t["accuracy"] < 5 else 0
                scores[str(output)] = {
                    "accuracy": t["accuracy"] + slip,
                    "tone": min(t["tone"] + 1, 5),
                }
            totals = {o: sum(v.values()) for o, v in scores.items()}
            best = max(totals, key=totals.get)
            tied = list(totals.values()).count(totals[best]) > 1
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
                    scores=scores,
                    preference="tie" if tied else best,
                    reasoning="Compared both answers against the rubric's anchors.",
                    raw_answer="(written by the demo)",
                    input_tokens=900,
                    output_tokens=120,
                    cost=Decimal("0.00063"),
                    latency_ms=1400,
                    finished_at=timezone.now(),
                )
            )
    Judgement.objects.bulk_create(rows)
    return len(rows)
