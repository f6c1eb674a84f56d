"""The monitor form (create and edit pages): POST fields <-> a monitor definition.

Parsing only: the definition then goes through the same validation as a file or the API
(`monitor_definition_validate`), so the page reports the same problems in the same words.
Thresholds are rows `t-<i>-metric`, `t-<i>-rule`, `t-<i>-value`, `t-<i>-confidence`; a row
without a metric is an empty row (the page offers a few, so no script is needed to add one).
"""

from __future__ import annotations

from tasks.models import Campaign, Contender, Judge, Provider, TestSet
from tasks.monitors.metrics import PREFERENCE, metric_choices

RULES = (
    ("max_drop", "may drop by at most"),
    ("max_rise", "may rise by at most"),
    ("max", "at most (count)"),
    ("on_change", "alert on any change"),
)
BLANK_ROWS = 3


def _number(text: str):
    text = (text or "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        return text  # the validation names it ("must be a number >= 0")
    return int(value) if value.is_integer() and "." not in text else value


def form_definition(post, *, slug: str | None = None) -> dict:
    """The definition a submitted form describes (`slug`: the monitor an edit changes)."""
    data = {
        "name": post.get("name", "").strip(),
        "contenders": post.getlist("contenders"),
        "samples_per_task": _number(post.get("samples_per_task", "1")) or 1,
        "schedule": post.get("schedule", "").strip(),
        "baseline": post.get("baseline", "first").strip() or "first",
        "thresholds": _thresholds(post),
        "alerts": _alerts(post),
        # No judge chosen: null, which an edit reads as "stop grading with a judge".
        "judge": post.get("judge", "").strip() or None,
        "calibration": post.get("calibration", "").strip() or None,
        "allow_uncalibrated": post.get("allow_uncalibrated") == "on",
    }
    if slug is None:
        data["slug"] = post.get("slug", "").strip()
        name, _, version = post.get("testset", "").rpartition("@")
        data["testset"] = name
        data["version"] = _number(version) if version else None
        if data["version"] is None:
            data.pop("version")
    return data


def _thresholds(post) -> list[dict]:
    out = []
    for i in range(int(post.get("threshold_rows", "0") or 0)):
        metric = post.get(f"t-{i}-metric", "").strip()
        if not metric:
            continue
        rule = post.get(f"t-{i}-rule", "max_drop")
        value = True if rule == "on_change" else _number(post.get(f"t-{i}-value", ""))
        row = {"metric": metric, rule: value}
        confidence = _number(post.get(f"t-{i}-confidence", ""))
        if confidence is not None:
            row["confidence"] = confidence
        out.append(row)
    return out


def _alerts(post) -> dict:
    out = {}
    if webhook := post.get("webhook", "").strip():
        out["webhook"] = webhook
    emails = [a.strip() for a in post.get("email", "").replace(";", ",").split(",") if a.strip()]
    if emails:
        out["email"] = emails
    return out


def _judge_metrics(calibration: str | None) -> list[str]:
    """The judge's metrics a threshold may name: one per rubric dimension of the calibration
    campaign (the judge scores with its rubric), and the preference over the baseline."""
    rubric = (
        Campaign.objects.filter(slug=calibration).values_list("rubric", flat=True).first()
        if calibration
        else None
    )
    keys = [d["key"] for d in rubric or [] if isinstance(d, dict) and d.get("key")]
    return [*(f"judge.{key}" for key in keys), PREFERENCE]


def form_context(definition: dict) -> dict:
    """What the form template shows: the choices and the current values (a definition)."""
    rows = []
    for threshold in definition.get("thresholds") or []:
        rule = next((k for k, _ in RULES if k in threshold), "max_drop")
        value = threshold.get(rule)
        rows.append(
            {
                "metric": threshold.get("metric", ""),
                "rule": rule,
                "value": "" if value is True or value is None else value,
                "confidence": threshold.get("confidence", ""),
            }
        )
    rows += [{"metric": "", "rule": "max_drop", "value": "", "confidence": ""}] * BLANK_ROWS
    alerts = definition.get("alerts") or {}
    testset, version = definition.get("testset", ""), definition.get("version")
    return {
        "values": definition,
        "selected_testset": f"{testset}@{version}" if version else testset,
        "threshold_rows": [{"index": i, **row} for i, row in enumerate(rows)],
        "threshold_count": len(rows),
        "webhook": alerts.get("webhook", ""),
        "email": ", ".join(alerts.get("email") or []),
        "metrics": [*metric_choices(), *_judge_metrics(definition.get("calibration"))],
        "judge_choices": list(Judge.objects.order_by("name").values_list("name", flat=True)),
        "calibration_choices": list(
            Campaign.objects.exclude(kind=Campaign.Kind.MONITOR_RUN)
            .order_by("slug")
            .values_list("slug", flat=True)
        ),
        "rules": RULES,
        "contender_choices": list(
            Contender.objects.exclude(provider=Provider.IMPORTED)
            .order_by("name")
            .values_list("name", flat=True)
        ),
        "testsets": [
            {"value": f"{name}@{version}", "label": f"{name} v{version}"}
            for name, version in TestSet.objects.order_by("name", "-version").values_list(
                "name", "version"
            )
        ],
    }
