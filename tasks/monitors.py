"""Monitor services: definitions, runs (through the campaign generation pipeline), grading.

A run owns a hidden campaign (kind monitor_run) over the monitor's frozen test-set version,
contenders and samples: generation, its retries, limits, idempotency, reconciler and progress
are the campaign pipeline's, unchanged (docs/decisions/0006-monitor-runs-own-a-campaign.md).
When the campaign's last row finishes, `monitor_run_finish` grades the run (the checks ran
when each output was stored), computes the metrics, compares it with its baseline and records
the crossed thresholds (tasks/monitor_alerts.py delivers them).
"""

from __future__ import annotations

import logging
import re
from datetime import datetime

from croniter import croniter
from django.db import IntegrityError, transaction
from django.db.models import Max, Q
from django.utils import timezone

from .campaigns import (
    SLUG_RE,
    DefinitionError,
    _contender_conflicts,
    campaign_definition_load,
    contender_validate,
)
from .definition_reader import DefinitionReader
from .generation import GenerationNotSent, generation_enqueue, generation_rows_create
from .models import Campaign, Contender, Generation, Monitor, MonitorRun, TestSet
from .monitor_metrics import COUNT_METRICS, is_rate, known_metric, run_metrics, run_table

log = logging.getLogger(__name__)
R = MonitorRun.Status
MONITOR_KEYS = {
    "slug", "name", "testset", "version", "contenders", "samples_per_task", "schedule",
    "baseline", "thresholds", "alerts",
}  # fmt: skip
RULES = ("max_drop", "max_rise", "max", "on_change")


class MonitorError(Exception):
    """A run cannot start or be compared (no such run, nothing to compare with)."""


# -- definitions -------------------------------------------------------------------------------


def monitor_definition_load(text: str, *, filename: str = "") -> dict:
    return campaign_definition_load(text, filename=filename)


def monitor_definition_validate(data: dict) -> dict:
    """Every problem of the definition at once, each naming its field; raises DefinitionError."""
    errors: list[str] = []
    r = DefinitionReader(errors)
    r.unknown(data, MONITOR_KEYS, "")
    slug = r.string(data, "slug", "", required=True, max_len=100)
    if slug and not SLUG_RE.match(slug):
        errors.append("slug: lower-case letters, digits, - and _ only")
    elif slug and Monitor.objects.filter(slug=slug).exists():
        errors.append(f"slug: a monitor {slug!r} already exists")
    name = r.string(data, "name", "", max_len=200) or slug
    testset = _testset(data, errors)
    contenders = _contenders(data.get("contenders"), errors)
    samples = r.integer(data, "samples_per_task", "", default=1, lo=1, hi=100)
    schedule = r.string(data, "schedule", "", max_len=100)
    if schedule and (len(schedule.split()) != 5 or not croniter.is_valid(schedule)):
        errors.append(f"schedule: {schedule!r} is not a valid 5-field cron expression")
    baseline = data.get("baseline", "first")
    if isinstance(baseline, bool) or not (
        baseline in ("first", "previous") or (isinstance(baseline, int) and baseline >= 1)
    ):
        errors.append("baseline: 'first', 'previous' or a run number")
    elif isinstance(baseline, int):
        # A new monitor has no runs: a run number can only name a run that does not exist.
        errors.append(f"baseline: run {baseline} does not exist (the monitor has no runs yet)")
    thresholds = _thresholds(data.get("thresholds", []), errors)
    alerts = _alerts(data.get("alerts", {}), errors)
    if errors:
        raise DefinitionError(errors)
    return {
        "monitor": {
            "slug": slug,
            "name": name,
            "samples_per_task": samples,
            "schedule": schedule,
            "baseline": str(baseline),
            "thresholds": thresholds,
            "alerts": alerts,
        },
        "testset": testset,
        "contenders": contenders,
    }


def _testset(data: dict, errors: list[str]) -> TestSet | None:
    name, version = data.get("testset"), data.get("version")
    if not isinstance(name, str) or not name.strip():
        errors.append("testset: required (the name of an uploaded test set)")
        return None
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        errors.append("version: must be an integer")
        return None
    sets = TestSet.objects.filter(name=name.strip())
    found = sets.filter(version=version).first() if version else sets.order_by("-version").first()
    if found is None:
        errors.append(f"testset: no test set {name!r}" + (f" version {version}" if version else ""))
    return found


def _contenders(raw, errors: list[str]) -> list[dict]:
    if not isinstance(raw, list) or not raw:
        errors.append("contenders: a non-empty list of contender names or definitions")
        return []
    out = []
    for i, item in enumerate(raw):
        where = f"contenders[{i}]"
        spec = contender_validate(item, where, errors)
        if spec is None:
            continue
        existing = Contender.objects.filter(name=spec["name"]).first()
        if len(spec) == 1 and existing is None:
            errors.append(f"{where}: no contender named {spec['name']!r}")
        elif (
            existing is not None
            and len(spec) > 1
            and (diff := _contender_conflicts(existing, spec))
        ):
            errors.append(
                f"{where}: contender {spec['name']!r} exists with other {', '.join(diff)}"
            )
        elif spec.get("provider") == "imported":
            errors.append(f"{where}: an imported contender cannot be re-run by a monitor")
        out.append(spec)
    return out


def _thresholds(raw, errors: list[str]) -> list[dict]:
    if not isinstance(raw, list):
        errors.append("thresholds: must be a list")
        return []
    out = []
    for i, item in enumerate(raw):
        where = f"thresholds[{i}]"
        if not isinstance(item, dict):
            errors.append(f"{where}: must be an object")
            continue
        metric = item.get("metric")
        rules = [k for k in RULES if k in item]
        for key in sorted(set(item) - {"metric", *RULES}):
            errors.append(f"{where}.{key}: unknown field")
        if not isinstance(metric, str) or not known_metric(metric):
            errors.append(f"{where}.metric: unknown metric {metric!r}")
            continue
        if len(rules) != 1:
            errors.append(
                f"{where}: exactly one of max_drop, max_rise, max, on_change"
                + (f" (got both {' and '.join(rules)})" if len(rules) > 1 else "")
            )
            continue
        rule, value = rules[0], item[rules[0]]
        if metric == "served_model" and rule != "on_change":
            errors.append(f"{where}.{rule}: served_model takes on_change: true")
        elif rule == "on_change" and metric != "served_model":
            errors.append(f"{where}.on_change: only for served_model")
        elif rule == "on_change" and value is not True:
            errors.append(f"{where}.on_change: must be true")
        elif rule != "on_change" and (
            isinstance(value, bool) or not isinstance(value, int | float) or value < 0
        ):
            errors.append(f"{where}.{rule}: must be a number >= 0")
        elif rule == "max" and metric not in COUNT_METRICS:
            errors.append(f"{where}.max: only for counts (regressed_tasks, improved_tasks)")
        elif rule != "max" and metric in COUNT_METRICS:
            errors.append(f"{where}.{rule}: {metric} is a count: use max")
        out.append({"metric": metric, rule: value})
    return out


def _alerts(raw, errors: list[str]) -> dict:
    if not isinstance(raw, dict):
        errors.append("alerts: must be an object")
        return {}
    for key in sorted(set(raw) - {"webhook", "email"}):
        errors.append(f"alerts.{key}: unknown field")
    out = {}
    webhook = raw.get("webhook")
    if webhook is not None:
        if not isinstance(webhook, str) or not re.match(r"^https?://[^\s/$.?#][^\s]*$", webhook):
            errors.append("alerts.webhook: must be an http(s) URL")
        else:
            out["webhook"] = webhook
    email = raw.get("email", [])
    email = [email] if isinstance(email, str) else email
    if not isinstance(email, list) or not all(
        isinstance(a, str) and re.match(r"^[^@\s]+@[^@\s]+$", a) for a in email
    ):
        errors.append("alerts.email: a list of e-mail addresses")
    elif email:
        out["email"] = email
    return out


@transaction.atomic
def monitor_create(*, definition: dict, user=None) -> Monitor:
    """All or nothing: a definition with any problem creates nothing (DefinitionError)."""
    valid = monitor_definition_validate(definition)
    testset = TestSet.objects.select_for_update().get(pk=valid["testset"].pk)
    testset.freeze()
    try:
        with transaction.atomic():
            monitor = Monitor.objects.create(testset=testset, created_by=user, **valid["monitor"])
    except IntegrityError:
        raise DefinitionError(
            [f"slug: a monitor {valid['monitor']['slug']!r} already exists"]
        ) from None
    contenders = []
    for spec in valid["contenders"]:
        contender = Contender.objects.filter(name=spec["name"]).first()
        contenders.append(contender or Contender.objects.create(**spec))
    monitor.contenders.set(contenders)
    return monitor


# -- runs ----------------------------------------------------------------------------------------


def monitor_run_start(
    *, monitor: Monitor, scheduled_for: datetime | None = None, baseline: int | None = None
) -> MonitorRun | None:
    """Create run N+1 with its hidden campaign and queue its generation.

    A scheduled run names its due time: the unique (monitor, scheduled_for) constraint lets one
    caller through, and the others get None. The run number is taken under a lock of the
    monitor row (unique (monitor, number) backs it)."""
    if baseline is not None and not monitor.runs.filter(number=baseline).exists():
        raise MonitorError(f"baseline: run {baseline} of {monitor.slug} does not exist")
    run = None
    try:
        with transaction.atomic():
            run = _run_create(monitor=monitor, scheduled_for=scheduled_for, baseline=baseline)
            generation_enqueue(campaign=run.campaign)
    except IntegrityError:
        if scheduled_for is not None and monitor.runs.filter(scheduled_for=scheduled_for).exists():
            return None  # another beat or worker started this due time
        raise
    except GenerationNotSent:
        # Committed and queued in the database: the reconciler sends the messages later.
        log.warning("monitor %s run %s: broker unreachable, left to the reconciler", monitor, run)
    return run


def _run_create(*, monitor: Monitor, scheduled_for, baseline) -> MonitorRun:
    Monitor.objects.select_for_update().filter(pk=monitor.pk).first()
    if scheduled_for is not None and monitor.runs.filter(scheduled_for=scheduled_for).exists():
        raise IntegrityError("due time already started")
    number = (monitor.runs.aggregate(n=Max("number"))["n"] or 0) + 1
    campaign = Campaign.objects.create(
        slug=f"monitor-{monitor.slug}-run-{number}"[:100],
        name=f"{monitor.name} · run {number}",
        testset=monitor.testset,
        kind=Campaign.Kind.MONITOR_RUN,
        samples_per_task=monitor.samples_per_task,
        reviewed_samples=1,
        overlap=1,
        hold_identity_leaks=False,
        created_by=monitor.created_by,
    )
    campaign.contenders.set(monitor.contenders.all())
    generation_rows_create(campaign=campaign)
    return MonitorRun.objects.create(
        monitor=monitor,
        number=number,
        campaign=campaign,
        scheduled_for=scheduled_for,
        baseline_number=baseline,
    )


def monitor_run_active(run: MonitorRun) -> bool:
    return (
        Generation.objects.filter(campaign_id=run.campaign_id)
        .filter(
            Q(status=Generation.Status.RUNNING)
            | Q(status=Generation.Status.PENDING, queued_at__isnull=False)
        )
        .exists()
    )


def monitor_run_progress(run: MonitorRun) -> dict:
    counts = {s: 0 for s in Generation.Status.values}
    for status in Generation.objects.filter(campaign_id=run.campaign_id).values_list(
        "status", flat=True
    ):
        counts[status] += 1
    return {"total": sum(counts.values()), **counts}


def run_rows(campaign_id: int) -> dict[str, list[dict]]:
    """{contender name: [generation dicts]} for the metrics."""
    out: dict[str, list[dict]] = {}
    fields = (
        "contender__name", "task__external_id", "sample_index", "status", "output",
        "check_results", "checks_passed", "latency_ms", "ttft_ms", "cost", "served_model",
        "fingerprint", "tokens_per_s",
    )  # fmt: skip
    for row in Generation.objects.filter(campaign_id=campaign_id).values(*fields).iterator(2000):
        out.setdefault(row["contender__name"], []).append(
            {
                "task": row["task__external_id"],
                "sample": row["sample_index"],
                "status": row["status"],
                "output": row["output"],
                "check_results": row["check_results"],
                "checks_passed": row["checks_passed"],
                "latency_ms": row["latency_ms"],
                "ttft_ms": row["ttft_ms"],
                "cost": float(row["cost"]) if row["cost"] is not None else None,
                "served_model": row["served_model"],
                "fingerprint": row["fingerprint"],
                "tokens_per_s": row["tokens_per_s"],
            }
        )
    return out


def campaign_tables(campaign: Campaign) -> dict:
    tasks = list(
        campaign.testset.tasks.order_by("external_id").values_list("external_id", flat=True)
    )
    return {
        name: run_table(rows, tasks=tasks, samples=campaign.samples_per_task)
        for name, rows in sorted(run_rows(campaign.pk).items())
    }


def baseline_for(run: MonitorRun) -> MonitorRun | None:
    """The run this one is compared with: the run's own choice, else the monitor's."""
    earlier = run.monitor.runs.filter(number__lt=run.number, status=R.DONE)
    if run.baseline_number:
        return run.monitor.runs.filter(number=run.baseline_number).first()
    choice = run.monitor.baseline
    if choice == "first":
        return earlier.order_by("number").first()
    if choice == "previous":
        return earlier.order_by("-number").first()
    return run.monitor.runs.filter(number=int(choice)).exclude(pk=run.pk).first()


def monitor_run_finish(*, run_id: int) -> MonitorRun | None:
    """Grade a run whose generation ended: metrics, comparison, alerts. Idempotent: only the
    caller whose conditional UPDATE moves it out of `generating` does the work."""
    from .monitor_alerts import alerts_record
    from .monitor_compare import compare_runs

    run = MonitorRun.objects.select_related("monitor", "campaign").get(pk=run_id)
    if run.status != R.GENERATING or monitor_run_active(run):
        return None
    tables = campaign_tables(run.campaign)
    metrics = {name: run_metrics(table) for name, table in tables.items()}
    baseline = baseline_for(run)
    comparison = compare_runs(baseline, run, run_tables=tables) if baseline else None
    with transaction.atomic():
        if not MonitorRun.objects.filter(pk=run.pk, status=R.GENERATING).update(
            status=R.DONE,
            metrics=metrics,
            comparison=comparison,
            baseline_number=baseline.number if baseline else None,
            finished_at=timezone.now(),
        ):
            return None
        Campaign.objects.filter(pk=run.campaign_id).update(status=Campaign.Status.CLOSED)
        run.refresh_from_db()
        if comparison is not None:
            comparison["alerts"] = alerts_record(run=run, comparison=comparison)
            MonitorRun.objects.filter(pk=run.pk).update(comparison=comparison)
            run.comparison = comparison
    return run


def monitor_runs_finish_due() -> int:
    """Beat safety net: grade every run whose generation has ended (a lost finish job)."""
    finished = 0
    for run in MonitorRun.objects.filter(status=R.GENERATING):
        if monitor_run_finish(run_id=run.pk) is not None:
            finished += 1
    return finished


def monitor_campaign_finished(*, campaign_id: int) -> None:
    """Called when a campaign's generation ends: grade its run, if it is a monitor's."""
    run = MonitorRun.objects.filter(campaign_id=campaign_id).only("pk").first()
    if run is not None:
        monitor_run_finish(run_id=run.pk)


def threshold_crossed(threshold: dict, entry: dict | None, changed: bool) -> bool:
    """Whether one threshold is crossed by one contender's comparison entry."""
    if "on_change" in threshold:
        return changed
    if entry is None or entry.get("run") is None:
        return False
    metric, run_value, base = threshold["metric"], entry["run"], entry.get("baseline")
    if "max" in threshold:
        return run_value > threshold["max"]
    if base is None:
        return False
    if is_rate(metric):
        move = run_value - base
    elif base == 0:
        move = 0.0 if run_value == 0 else float("inf")
    else:
        move = (run_value - base) / base
    if "max_drop" in threshold:
        return -move > threshold["max_drop"] + 1e-12
    return move > threshold["max_rise"] + 1e-12
