"""Monitor definitions: load, validate, create, edit, pause and archive a monitor, and the
threshold rules a run's comparison is checked against (`threshold_crossed`).

A monitor is a frozen test-set version re-run against contenders on a schedule; its runs
(runs.py), grading (grading.py) and alerts (alerts.py) read the definition kept here.
"""

from __future__ import annotations

import logging
import re

from django.db import IntegrityError, transaction
from django.utils import timezone

from tasks.campaigns.definition import (
    SLUG_RE,
    DefinitionError,
    campaign_definition_load,
    contender_conflicts,
    contender_validate,
)
from tasks.campaigns.definition_reader import DefinitionReader
from tasks.models import Contender, Provider, TestSet
from tasks.monitors.cron import schedule_problem
from tasks.monitors.judging import judge_definition
from tasks.monitors.metrics import COUNT_METRICS, is_rate, known_metric
from tasks.monitors.models import Monitor, MonitorRun

log = logging.getLogger(__name__)
R = MonitorRun.Status
MONITOR_KEYS = {
    "slug", "name", "testset", "version", "contenders", "samples_per_task", "schedule",
    "baseline", "thresholds", "alerts", "judge", "calibration", "allow_uncalibrated",
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
    judging = judge_definition(data, [t["metric"] for t in thresholds], errors)
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
            **judging,
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
            existing is not None and len(spec) > 1 and (diff := contender_conflicts(existing, spec))
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
    "paused", "judge", "calibration", "allow_uncalibrated",
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
        **(
            {
                "judge": monitor.judge.name,
                "calibration": monitor.calibration.slug,
                "allow_uncalibrated": monitor.allow_uncalibrated,
            }
            if monitor.judge_id
            else {}
        ),
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
    if "judge" in changes and changes["judge"] is None:
        # "judge": null stops grading with a judge: its calibration goes with it.
        for key in ("judge", "calibration", "allow_uncalibrated"):
            merged.pop(key, None)
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
