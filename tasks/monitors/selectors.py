"""Reads for the monitor pages (admins and leads: identities are shown), and the trend chart.

The chart is server-rendered SVG (no script, no CDN): one small chart per metric, a line per
contender across runs, and for rates a band of each run's 95% Wilson interval.
"""

from __future__ import annotations

import json
import math
from typing import Any

from django.db.models import Count
from django.shortcuts import get_object_or_404

from tasks.checks import transcripts
from tasks.models import Generation
from tasks.monitors.cron import ScheduleError, fire_times
from tasks.monitors.format import metric_value
from tasks.monitors.judging import judge_note
from tasks.monitors.metrics import is_rate
from tasks.monitors.models import Monitor, MonitorAlert, MonitorRun

CHART_METRICS = ("check_pass_rate", "pass_at_1", "error_rate", "latency_ms.p95", "cost_per_task")
W, H, PAD = 320, 120, 24
COLOURS = ("#1f6feb", "#d73a49", "#2da44e", "#bf8700", "#8250df", "#57606a")


def monitor_list() -> list[dict]:
    rows = []
    live = Monitor.objects.filter(archived_at=None).select_related("testset")
    for m in live.annotate(n_runs=Count("runs")):
        latest = m.runs.order_by("-number").first()
        rows.append(
            {
                "monitor": m,
                "n_runs": m.n_runs,
                "latest": latest,
                "alerts": latest.alerts.count() if latest else 0,
            }
        )
    return rows


def monitor_get(*, slug: str) -> Monitor:
    """A monitor that was not deleted (a deleted one's runs are read by `compare` only)."""
    return get_object_or_404(Monitor.objects.select_related("testset"), slug=slug, archived_at=None)


def schedule_facts(*, monitor: Monitor) -> dict:
    """What the page says of the schedule: paused, the next three due times, or the error
    that stopped it."""
    times, problem = [], ""
    if monitor.schedule:
        try:
            times = fire_times(monitor.schedule)
        except ScheduleError as exc:
            problem = str(exc)
    return {
        "next_runs": [] if monitor.paused else times,
        "problem": problem,
        "paused": monitor.paused,
    }


def run_get(*, monitor: Monitor, number: int) -> MonitorRun:
    return get_object_or_404(
        MonitorRun.objects.select_related("campaign__testset", "monitor"),
        monitor=monitor,
        number=number,
    )


def alert_log(*, monitor: Monitor, limit: int = 100) -> list[dict]:
    alerts = (
        MonitorAlert.objects.filter(run__monitor=monitor)
        .select_related("run")
        .prefetch_related("deliveries")
        .order_by("-created_at", "-pk")[:limit]
    )
    return [
        {
            "alert": a,
            "deliveries": [
                {
                    "channel": d.channel,
                    "status": d.status,
                    "code": d.response_code,
                    "attempts": d.attempts,
                    "resends": d.resends,
                    "delivery": str(d.delivery_id),
                    "error": d.error,
                    "next_attempt_at": d.next_attempt_at if d.status == "pending" else None,
                }
                for d in a.deliveries.all()
            ],
            "resendable": any(d.status == "failed" for d in a.deliveries.all()),
        }
        for a in alerts
    ]


def _wilson(rate: float, n: int) -> tuple[float, float]:
    if n <= 0:
        return rate, rate
    z = 1.959964
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def trend_charts(*, monitor: Monitor) -> list[dict]:
    """[{metric, svg parts}] for the finished runs, in run order."""
    runs = list(monitor.runs.filter(status=MonitorRun.Status.DONE).order_by("number"))
    if not runs:
        return []
    names = sorted({name for r in runs for name in r.metrics})
    judged = sorted(
        {m for r in runs for v in r.metrics.values() for m in v if m.startswith("judge.")}
    )
    note = judge_note(monitor)
    charts = []
    for metric in (*CHART_METRICS, *judged):
        series = []
        for c, name in enumerate(names):
            points = []
            for r in runs:
                values = r.metrics.get(name) or {}
                value = values.get(metric)
                if value is None:
                    continue
                band = None
                if metric in ("check_pass_rate", "error_rate", "pass_at_1"):
                    n = values.get("n_samples" if metric != "pass_at_1" else "n_tasks") or 0
                    band = _wilson(value, n)
                points.append((r.number, value, band))
            series.append({"name": name, "colour": COLOURS[c % len(COLOURS)], "points": points})
        layout = _layout(series, [r.number for r in runs], metric)
        charts.append({"metric": metric, "note": note, **layout})
    return charts


def _layout(series: list[dict], numbers: list[int], metric: str) -> dict:
    values = [v for s in series for _, v, _ in s["points"]]
    values += [b for s in series for *_, band in s["points"] if band for b in band]
    if metric.endswith("rate") or metric.startswith("pass_"):
        lo, hi = 0.0, 1.0
    else:
        lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
        lo = 0.0 if lo >= 0 else lo
    hi = hi if hi > lo else lo + 1
    first, last = numbers[0], max(numbers[-1], numbers[0] + 1)

    def x(n: int) -> float:
        return round(PAD + (W - 2 * PAD) * (n - first) / (last - first), 1)

    def y(v: float) -> float:
        return round(H - PAD - (H - 2 * PAD) * (v - lo) / (hi - lo), 1)

    lines = []
    for s in series:
        pts = " ".join(f"{x(n)},{y(v)}" for n, v, _ in s["points"])
        upper = [(x(n), y(b[1])) for n, _, b in s["points"] if b]
        lower = [(x(n), y(b[0])) for n, _, b in s["points"] if b]
        band = " ".join(f"{a},{b}" for a, b in upper + lower[::-1]) if len(upper) > 1 else ""
        dots = [
            {"x": x(n), "y": y(v), "title": f"{s['name']} run {n}: {metric_value(v, metric)}"}
            for n, v, _ in s["points"]
        ]
        lines.append({**s, "polyline": pts, "band": band, "dots": dots})
    return {
        "lines": lines,
        "width": W,
        "height": H,
        "x_labels": [{"x": x(n), "label": f"#{n}"} for n in numbers],
        "y_top": metric_value(hi, metric),
        "y_bottom": metric_value(lo, metric),
        "pad": PAD,
        "bottom": H - PAD,
        "right": W - PAD,
    }


def task_side_by_side(*, run: MonitorRun, task_id: str) -> dict:
    """The task and, per contender, the baseline's and the run's answers (every sample), each
    with its checks by name (passed or failed, and why) and its transcript's turns, steps and
    tool calls, as plain data for the side-by-side page."""
    baseline = run.monitor.runs.filter(number=run.baseline_number).first()
    task = get_object_or_404(run.campaign.testset.tasks, external_id=task_id)

    def outputs(r: MonitorRun | None) -> dict:
        if r is None:
            return {}
        out: dict[str, list] = {}
        rows = (
            Generation.objects.filter(campaign_id=r.campaign_id, task=task, single_turn=False)
            .select_related("contender")
            .order_by("contender__name", "sample_index")
        )
        for g in rows:
            out.setdefault(g.contender.name, []).append(_answer(g))
        return out

    base, now = outputs(baseline), outputs(run)
    return {
        "task": task,
        "task_messages": _messages(task.messages),
        "task_checks": json.dumps(task.checks, indent=2, ensure_ascii=False) if task.checks else "",
        "baseline": baseline,
        "rows": [
            {"contender": name, "baseline": base.get(name, []), "run": now.get(name, [])}
            for name in sorted(set(base) | set(now))
        ],
    }


def _answer(g: Generation) -> dict:
    checks = [
        {
            "name": name,
            "passed": bool((result or {}).get("passed")),
            "detail": (result or {}).get("detail", ""),
        }
        for name, result in sorted((g.check_results or {}).items())
    ]
    return {
        "sample": g.sample_index,
        "status": g.status,
        "error": g.error if g.status != "done" else "",
        "output": g.output,
        "served_model": g.served_model,
        "latency_ms": g.latency_ms,
        "passed": g.status == "done" and g.checks_passed is not False,
        "checks": checks,
        "failed_checks": [c["name"] for c in checks if not c["passed"]],
        "turns": _turns(g.transcript),
    }


def _turns(transcript: list[dict] | None) -> list[dict]:
    out = []
    for number, turn in enumerate(transcripts.turns(transcript), start=1):
        steps = []
        for step in transcripts.steps([turn]):
            calls = [
                {
                    "name": call.get("name", ""),
                    "arguments": _json(call.get("arguments"), call.get("raw", "")),
                    "result": _result(call.get("result")),
                    "invalid": transcripts.is_invalid(call),
                }
                for call in transcripts.calls([{**turn, "turn": number, "steps": [step]}])
            ]
            steps.append({"text": step.get("text") or "", "calls": calls})
        out.append(
            {
                "number": number,
                "user": turn.get("user"),
                "steps": steps,
                "answer": turn.get("answer") or "",
            }
        )
    return out if any(t["steps"] or t["user"] for t in out) else []


def _json(value: Any, raw: str = "") -> str:
    if value is None:
        return raw or ""
    return json.dumps(value, indent=2, ensure_ascii=False)


def _result(result: dict | None) -> str:
    if not result:
        return "(no result)"
    if result.get("error"):
        return f"error: {result['error']}"
    if result.get("unmocked"):
        return "(no mock for this call)"
    return _json(result.get("result"))


def _messages(messages: list | None) -> list[dict]:
    return [
        {"role": m.get("role", ""), "content": m.get("content") or ""}
        for m in (messages or [])
        if isinstance(m, dict)
    ]


def threshold_lines(*, monitor: Monitor) -> list[dict]:
    """Each threshold in words: "may drop by at most 5 points", "may rise by at most 25%"."""
    lines = []
    for t in monitor.thresholds:
        metric = t["metric"]
        if "on_change" in t:
            text = "alerts on any change"
        elif "max" in t:
            text = f"at most {t['max']}"
        else:
            rule = "max_drop" if "max_drop" in t else "max_rise"
            verb = "drop" if rule == "max_drop" else "rise"
            limit = t[rule]
            amount = f"{limit:g} (absolute)" if is_rate(metric) else f"{limit * 100:g}%"
            text = f"may {verb} by at most {amount}"
        lines.append({"metric": metric, "text": text, "confidence": t.get("confidence")})
    return lines


KEY_METRICS = ("check_pass_rate", "pass_at_1", "error_rate", "latency_ms.p95", "cost_per_task")


def run_page(*, run: MonitorRun) -> dict:
    """The run page's comparison as rows (the key metrics first), its alerts with their
    limits, and for a first run its own key metrics."""
    comparison = run.comparison or {}
    contenders = []
    for name, entry in sorted((comparison.get("contenders") or {}).items()):
        metrics = entry.get("metrics") or {}
        order = [m for m in KEY_METRICS if m in metrics] + sorted(
            m for m in metrics if m not in KEY_METRICS
        )
        contenders.append(
            {
                "name": name,
                "entry": entry,
                "metrics": [{"name": m, "values": metrics[m]} for m in order],
            }
        )
    alerts = [{**a, "rule_text": _rule_text(a)} for a in comparison.get("alerts") or []]
    first = [
        {"name": name, "values": [(k, values.get(k)) for k in KEY_METRICS]}
        for name, values in sorted((run.metrics or {}).items())
    ]
    return {
        "contenders": contenders,
        "alerts": alerts,
        "judging": run.judging or {},
        "key_metrics": KEY_METRICS,
        "first_metrics": first if not contenders else [],
    }


def _rule_text(alert: dict) -> str:
    rule, threshold = alert.get("rule", ""), alert.get("threshold") or {}
    if rule == "on_change":
        return "on change"
    confidence = f", {threshold['confidence']} confidence" if "confidence" in threshold else ""
    return f"{rule} {threshold.get(rule)}{confidence}"
