""" "Review blind": a campaign from a run's regressed tasks, the baseline's and the run's
outputs as its two (imported) contenders, for people to judge what the checks flagged.

The regressed tasks are copied into a new test-set version of their own (a campaign is over a
whole frozen test set); the outputs go in through the outputs import, as any imported
contender's, so masking, checks and identity holds apply to them as to any campaign.
"""

from __future__ import annotations

import json
import secrets

from django.db import transaction

from tasks.blinding import render as blinding
from tasks.campaigns.definition import MAX_REDACT_WORDS, DefinitionError, campaign_create
from tasks.generation.outputs_import import outputs_import
from tasks.intake.conversation import conversation_values
from tasks.intake.parse import testset_checksum
from tasks.models import Campaign, Contender, Generation, Task, TestSet
from tasks.monitors.definition import MonitorError
from tasks.monitors.models import MonitorRun

RUBRIC = [
    {"key": "quality", "label": "Overall quality", "min": 1, "max": 5,
     "anchors": {"1": "unusable", "5": "excellent"}},
]  # fmt: skip


@transaction.atomic
def review_blind_create(*, run: MonitorRun, contender: str, user=None) -> Campaign:
    entry = ((run.comparison or {}).get("contenders") or {}).get(contender)
    if not entry or not entry["regressions"]:
        raise MonitorError(f"run {run.number} has no regressed task for {contender}")
    baseline = run.monitor.runs.get(number=run.baseline_number)
    task_ids = [r["task_id"] for r in entry["regressions"]]
    testset = _regressions_testset(run=run, task_ids=task_ids, user=user)
    campaign, (a_name, b_name) = _blind_campaign(
        run=run, baseline=baseline, testset=testset, contender=contender, user=user
    )
    for name_, source_run in ((a_name, baseline), (b_name, run)):
        outputs = Generation.objects.filter(
            campaign_id=source_run.campaign_id, contender__name=contender,
            task__external_id__in=task_ids, sample_index=0,
        ).values_list("task__external_id", "output")  # fmt: skip
        raw = "\n".join(
            json.dumps({"task_id": t, "sample": 0, "output": text or "(no answer)"})
            for t, text in outputs
        ).encode()
        outputs_import(campaign=campaign, contender_name=name_, raw=raw)
    return campaign


def _regressions_testset(*, run: MonitorRun, task_ids: list[str], user) -> TestSet:
    """A new version of the run's regressions test set: copies of the regressed tasks."""
    source = run.campaign.testset
    tasks = list(source.tasks.filter(external_id__in=task_ids).order_by("position"))
    name = f"{source.name}-{run.monitor.slug}-{run.number}-regressions"[:200]
    version = (
        TestSet.objects.filter(name=name)
        .order_by("-version")
        .values_list("version", flat=True)
        .first()
        or 0
    ) + 1
    copies = [
        {"external_id": t.external_id, "category": t.category, "tier": t.tier,
         "case_type": t.case_type, "prompt": t.prompt, "messages": t.messages,
         "reference": t.reference, "checks": t.checks, "metadata": t.metadata,
         **conversation_values(t)}
        for t in tasks
    ]  # fmt: skip
    testset = TestSet.objects.create(
        name=name, version=version, checksum=testset_checksum(copies), task_count=len(copies),
        created_by=user,
    )  # fmt: skip
    Task.objects.bulk_create(
        Task(testset=testset, position=i, **copy) for i, copy in enumerate(copies)
    )
    return testset


def monitored_identity_words(*, runs: list[MonitorRun], contender: str) -> list[str]:
    """What would name the monitored contender in its own answers: its name, model id,
    version label and endpoint host (with their aliases), and the model ids its endpoint
    answered with in these runs. The blind campaign's contenders are imported copies that
    know none of it, so these are its redaction words."""
    spec = (
        Contender.objects.filter(name=contender)
        .values("name", "model", "version_label", "base_url")
        .first()
    ) or {"name": contender}
    served = (
        Generation.objects.filter(
            campaign_id__in=[r.campaign_id for r in runs], contender__name=contender
        )
        .exclude(served_model="")
        .values_list("served_model", flat=True)
        .distinct()
    )
    specs = [spec, *({"model": model} for model in served)]
    return sorted(blinding.identity_terms(contenders=specs))[:MAX_REDACT_WORDS]


def _blind_campaign(
    *, run: MonitorRun, baseline: MonitorRun, testset: TestSet, contender: str, user
) -> tuple[Campaign, tuple[str, str]]:
    """The campaign over the copied tasks, with the two runs as imported contenders; returns
    it and their two names. The monitored contender's own names and model ids are masked."""
    a_name = f"{run.monitor.slug}#{baseline.number} {contender}"[:100]
    b_name = f"{run.monitor.slug}#{run.number} {contender}"[:100]
    # Neither slug nor name carries the contender: both reach reviewers, unmasked.
    slug = f"{run.monitor.slug}-{run.number}-blind-{secrets.token_hex(3)}"[:100]
    try:
        campaign, _ = campaign_create(
            definition={
                "slug": slug,
                "name": f"{run.monitor.name}: run {run.number} vs {baseline.number} (blind)",
                "testset": {"name": testset.name, "version": testset.version},
                "contenders": [
                    {"name": a_name, "provider": "imported"},
                    {"name": b_name, "provider": "imported"},
                ],
                "samples_per_task": 1,
                "mode": "both",
                "rubric": RUBRIC,
                "redact": monitored_identity_words(runs=[baseline, run], contender=contender),
            },
            user=user,
        )
    except DefinitionError as exc:
        # The monitor's own slug or name names a model (both reach reviewers).
        raise MonitorError("; ".join(exc.errors)) from None
    return campaign, (a_name, b_name)
