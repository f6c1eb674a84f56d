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
from .models import Campaign, Contender, Generation, Monitor, MonitorRun, Provider, TestSet
from .monitor_cron import schedule_problem
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


def monitor_definition_validate(data: dict, *, existing: Monitor | None = None) -> dict:
    """Every problem of the definition at once, each naming its field; raises DefinitionError.

    `existing`: the monitor an edit changes (its slug is its own, its runs may be a baseline)."""
    errors: list[str] = []
    r = DefinitionReader(errors)
    if not isinstance(data, dict):
        raise DefinitionError(["the definition must be an object"])
    r.unknown(data, MONITOR_KEYS, "")
    slug = r.string(data, "slug", "", required=True, max_len=100)
    if slug and not SLUG_RE.match(slug):
        errors.append("slug: lower-case letters, digits, - and _ only")
    elif slug == "new":
        errors.append("slug: 'new' is the address of the new-monitor page; choose another")
    elif existing is None and slug and (taken := Monitor.objects.filter(slug=slug).first()):
        archived = " (deleted: its runs are kept under this slug)" if taken.archived_at else ""
        errors.append(f"slug: a monitor {slug!r} already exists{archived}")
    name = r.string(data, "name", "", max_len=200) or slug
    testset = _testset(data, errors)
    contenders = _contenders(data.get("contenders"), errors)
    samples = r.integer(data, "samples_per_task", "", default=1, lo=1, hi=100)
    schedule = r.string(data, "schedule", "", max_len=100)
    if schedule and (problem := schedule_problem(schedule)):
        errors.append(f"schedule: {problem}")
    baseline = _baseline(data.get("baseline", "first"), existing, errors)
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


def _baseline(baseline, existing: Monitor | None, errors: list[str]):
    if isinstance(baseline, str) and baseline.isdigit():
        baseline = int(baseline)  # as stored, and as a form sends it
    if isinstance(baseline, bool) or not (
        baseline in ("first", "previous") or (isinstance(baseline, int) and baseline >= 1)
    ):
        errors.append("baseline: 'first', 'previous' or a run number")
    elif isinstance(baseline, int) and existing is None:
        # A new monitor has no runs: a run number can only name a run that does not exist.
        errors.append(f"baseline: run {baseline} does not exist (the monitor has no runs yet)")
    elif isinstance(baseline, int) and not existing.runs.filter(number=baseline).exists():
        errors.append(f"baseline: run {baseline} does not exist")
    return baseline


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
        elif existing is not None and existing.provider == Provider.IMPORTED:
            # Its outputs came from a file: a run would end "done" with every row failed.
            errors.append(
                f"{where}: {spec['name']!r} is an imported contender (outputs from a file): "
                "a monitor re-runs contenders with an endpoint"
            )
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
        for key in sorted(set(item) - {"metric", "confidence", *RULES}):
            errors.append(f"{where}.{key}: unknown field")
        confidence = item.get("confidence")
        if "confidence" in item and not _confidence_ok(confidence, rules):
            errors.append(
                f"{where}.confidence: a level between 0.5 and 0.999 (e.g. 0.95), "
                "with max_drop or max_rise"
            )
            continue
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
        out.append(
            {
                "metric": metric,
                rule: value,
                **({"confidence": confidence} if "confidence" in item else {}),
            }
        )
    return out


def _confidence_ok(confidence, rules: list[str]) -> bool:
    """A level for the interval of the difference: only rules on a difference have one."""
    return (
        isinstance(confidence, int | float)
        and not isinstance(confidence, bool)
        and 0.5 <= confidence <= 0.999
        and rules in (["max_drop"], ["max_rise"])
    )


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
    monitor.contenders.set(_contender_rows(valid["contenders"]))
    return monitor


EDITABLE = {
    "name", "contenders", "samples_per_task", "schedule", "baseline", "thresholds", "alerts",
    "paused",
}  # fmt: skip


def monitor_definition(monitor: Monitor) -> dict:
    """The monitor as a definition (the create_monitor format): what an edit starts from."""
    return {
        "slug": monitor.slug,
        "name": monitor.name,
        "testset": monitor.testset.name,
        "version": monitor.testset.version,
        "contenders": sorted(monitor.contenders.values_list("name", flat=True)),
        "samples_per_task": monitor.samples_per_task,
        "schedule": monitor.schedule,
        "baseline": int(monitor.baseline) if monitor.baseline.isdigit() else monitor.baseline,
        "thresholds": monitor.thresholds,
        "alerts": monitor.alerts,
    }


@transaction.atomic
def monitor_update(*, monitor: Monitor, changes: dict) -> Monitor:
    """Change a monitor's definition and/or pause it: every problem at once (DefinitionError),
    nothing changed then. The test set and slug stay (runs compare on one test-set version)."""
    if not isinstance(changes, dict):
        raise DefinitionError(["the body must be an object"])
    errors = []
    current = monitor_definition(monitor)
    for key in sorted(set(changes) - EDITABLE):
        if key in ("slug", "testset", "version"):
            # A whole definition file may be sent back with them unchanged.
            if changes[key] != current[key]:
                errors.append(f"{key}: cannot be changed (runs compare on one test set version)")
        else:
            errors.append(f"{key}: unknown field")
    paused = changes.get("paused", monitor.paused)
    if not isinstance(paused, bool):
        errors.append("paused: must be true or false")
    merged = {**current}
    merged.update({k: v for k, v in changes.items() if k in EDITABLE - {"paused"}})
    if merged.get("schedule") is None:
        merged["schedule"] = ""
    try:
        valid = monitor_definition_validate(merged, existing=monitor)
    except DefinitionError as exc:
        errors += exc.errors
    if errors:
        raise DefinitionError(errors)
    locked = Monitor.objects.select_for_update().get(pk=monitor.pk)
    fields = {k: v for k, v in valid["monitor"].items() if k != "slug"}
    if fields["schedule"] != locked.schedule:
        fields.update(error="", error_at=None)  # a schedule error belongs to the old schedule
    for key, value in {**fields, "paused": paused}.items():
        setattr(locked, key, value)
    locked.save()
    locked.contenders.set(_contender_rows(valid["contenders"]))
    return locked


def monitor_pause(*, monitor: Monitor, paused: bool) -> Monitor:
    """Pause (the schedule starts nothing; runs by hand still work) or resume a monitor."""
    Monitor.objects.filter(pk=monitor.pk).update(paused=paused)
    monitor.paused = paused
    return monitor


def monitor_archive(*, monitor: Monitor) -> Monitor:
    """Delete a monitor for its users: it leaves the pages, the API and the schedule; its runs,
    their campaigns and alerts are kept (`compare slug#n` still reads them). Idempotent."""
    Monitor.objects.filter(pk=monitor.pk, archived_at__isnull=True).update(
        archived_at=timezone.now()
    )
    monitor.refresh_from_db()
    return monitor


def _contender_rows(specs: list[dict]) -> list[Contender]:
    rows = []
    for spec in specs:
        contender = Contender.objects.filter(name=spec["name"]).first()
        rows.append(contender or Contender.objects.create(**spec))
    return rows


# -- runs ----------------------------------------------------------------------------------------


def monitor_run_start(
    *, monitor: Monitor, scheduled_for: datetime | None = None, baseline: int | None = None
) -> MonitorRun | None:
    """Create run N+1 with its hidden campaign and queue its generation.

    A scheduled run names its due time: the unique (monitor, scheduled_for) constraint lets one
    caller through, and the others get None. The run number is taken under a lock of the
    monitor row (unique (monitor, number) backs it)."""
    if monitor.archived_at is not None:
        raise MonitorError(f"monitor {monitor.slug} was deleted: its runs are kept, none start")
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
    finished = counts["done"] + counts["failed"] + counts["cancelled"]
    return {"total": sum(counts.values()), "finished": finished, **counts}


def run_rows(campaign_id: int) -> dict[str, list[dict]]:
    """{contender name: [generation dicts]} for the metrics: the task's own regime only.

    A conversation task with a `single_turn` statement has a second row per sample (the same
    request in one message, `single_turn=True`) under the same task and sample index; read
    together, whichever came last would replace the conversation's row in the table."""
    out: dict[str, list[dict]] = {}
    fields = (
        "contender__name", "task__external_id", "sample_index", "status", "output",
        "check_results", "checks_passed", "latency_ms", "ttft_ms", "cost", "served_model",
        "fingerprint", "tokens_per_s",
    )  # fmt: skip
    rows = Generation.objects.filter(campaign_id=campaign_id, single_turn=False)
    for row in rows.values(*fields).iterator(2000):
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
    for run in MonitorRun.objects.filter(status=R.GENERATING).select_related("monitor"):
        try:
            if monitor_run_finish(run_id=run.pk) is not None:
                finished += 1
        except Exception as exc:  # noqa: BLE001 - one run's failure must not stop the others
            log.exception("monitor run %s: grading failed", run)
            MonitorRun.objects.filter(pk=run.pk).update(
                error=f"grading failed: {type(exc).__name__}: {exc}"[:1000]
            )
    return finished


def monitor_campaign_finished(*, campaign_id: int) -> None:
    """Called when a campaign's generation ends: grade its run, if it is a monitor's."""
    run = MonitorRun.objects.filter(campaign_id=campaign_id).only("pk").first()
    if run is not None:
        monitor_run_finish(run_id=run.pk)


def threshold_crossed(threshold: dict, entry: dict | None, changed: bool) -> bool:
    """Whether one threshold is crossed by one contender's comparison entry.

    Without `confidence` the point estimates are compared (the run's value against the
    baseline's). With `confidence` (e.g. 0.95) the whole interval of the difference at that
    level must lie past the limit: a move the bootstrap cannot tell from noise alerts nobody."""
    if "on_change" in threshold:
        return changed
    if entry is None or entry.get("run") is None:
        return False
    metric, run_value, base = threshold["metric"], entry["run"], entry.get("baseline")
    if "max" in threshold:
        return run_value > threshold["max"]
    if base is None:
        return False
    if "confidence" in threshold:
        bounds = _interval_of(entry, threshold["confidence"])
        if bounds is None:
            return False  # no interval (too few shared tasks): nothing is certain
        moves = [_move(metric, base, base + bound) for bound in bounds]
        if "max_drop" in threshold:
            return -max(moves) > threshold["max_drop"] + 1e-12
        return min(moves) > threshold["max_rise"] + 1e-12
    move = _move(metric, base, run_value)
    if "max_drop" in threshold:
        return -move > threshold["max_drop"] + 1e-12
    return move > threshold["max_rise"] + 1e-12


def _move(metric: str, base: float, value: float) -> float:
    """How far `value` moved from `base`: in absolute terms for rates, relatively otherwise."""
    if is_rate(metric):
        return value - base
    if base == 0:
        return 0.0 if value == 0 else float("inf") if value > 0 else float("-inf")
    return (value - base) / base


def _interval_of(entry: dict, level: float) -> list | None:
    bounds = entry.get("ci95") if level == 0.95 else (entry.get("intervals") or {}).get(str(level))
    return bounds if bounds and None not in bounds else None
