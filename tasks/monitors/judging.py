"""Grading a monitor with a judge: the definition's `judge`, `calibration` and
`allow_uncalibrated`, checked against the judge's calibration on that campaign.

A judge may grade a monitor only where people have shown it agrees with them: each judge
metric the monitor uses needs the verdict `calibrated` on the named campaign (its rubric is the
one the judge scores with), unless `allow_uncalibrated` says otherwise on purpose, which every
chart, alert and comparison then repeats. The verdicts are the review side's
(tasks/review_side.py): tasks never imports reviews.
"""

from __future__ import annotations

from tasks import review_side
from tasks.models import Campaign, Judge
from tasks.monitors.metrics import PREFERENCE

UNCALIBRATED = "judge not calibrated"


def judge_metric_dimension(metric: str) -> str | None:
    """`judge.tone` -> "tone"; None for the preference and for any other metric."""
    if metric.startswith("judge.") and metric != PREFERENCE:
        return metric.split(".", 1)[1]
    return None


def judge_definition(data: dict, metrics: list[str], errors: list[str]) -> dict:
    """The definition's judge fields, validated: {"judge", "calibration",
    "allow_uncalibrated"} (None, None, False without a judge). `metrics`: the metrics the
    thresholds name. Problems are appended to `errors`, each naming its field."""
    none = {"judge": None, "calibration": None, "allow_uncalibrated": False}
    judge_metrics = [m for m in metrics if m.startswith("judge.")]
    allow = data.get("allow_uncalibrated", False)
    if not isinstance(allow, bool):
        errors.append("allow_uncalibrated: must be true or false")
        return none
    name, slug = data.get("judge"), data.get("calibration")
    if name is None:
        if slug is not None or allow:
            errors.append("judge: required with calibration and allow_uncalibrated")
        for metric in judge_metrics:
            errors.append(f'thresholds: {metric} needs a judge ("judge" and "calibration")')
        return none
    judge = Judge.objects.filter(name=name).first() if isinstance(name, str) else None
    if judge is None:
        errors.append(f"judge: no judge named {name!r}")
    campaign = None
    if not isinstance(slug, str) or not slug:
        errors.append(
            "calibration: required with a judge (the slug of the campaign whose reviewers the "
            "judge was calibrated against)"
        )
    else:
        campaign = Campaign.objects.exclude(kind=Campaign.Kind.MONITOR_RUN).filter(slug=slug)
        campaign = campaign.first()
        if campaign is None:
            errors.append(f"calibration: no campaign {slug!r}")
    if judge is None or campaign is None:
        return none
    verdicts = review_side.judge_verdicts(judge=judge, campaign=campaign)
    errors += calibration_problems(
        verdicts, judge_metrics, allow=allow, names=(judge.name, campaign.slug)
    )
    return {"judge": judge, "calibration": campaign, "allow_uncalibrated": allow}


def calibration_problems(
    verdicts: dict, judge_metrics: list[str], *, allow: bool, names: tuple[str, str]
) -> list[str]:
    """Why the judge may not grade these metrics (pure). Without a judge metric the monitor
    reports every rubric dimension, so each must be calibrated."""
    judge, campaign = names
    dims = [d for m in judge_metrics if (d := judge_metric_dimension(m)) is not None]
    problems = [
        f"thresholds: {campaign}'s rubric has no dimension {d!r} (it has "
        f"{', '.join(verdicts['rubric']) or 'none'})"
        for d in dims
        if d not in verdicts["rubric"]
    ]
    if PREFERENCE in judge_metrics and verdicts["preference"] is None:
        problems.append(
            f"thresholds: {PREFERENCE} needs a calibration campaign that asks reviewers for a "
            f"preference; {campaign} asks none (its mode is rubric)"
        )
    if problems or allow:
        return problems
    wanted = [d for d in dims if d in verdicts["rubric"]]
    if not dims:
        wanted = list(verdicts["rubric"])
    for dim in dict.fromkeys(wanted):
        found = verdicts["dimensions"].get(dim) or {}
        if found.get("verdict") != "calibrated":
            problems.append(_refusal(judge, campaign, dim, found))
    preference = verdicts["preference"] or {}
    if PREFERENCE in judge_metrics and preference.get("verdict") != "calibrated":
        problems.append(_refusal(judge, campaign, "the preference", preference))
    return problems


def _refusal(judge: str, campaign: str, what: str, found: dict) -> str:
    verdict = found.get("verdict") or "not judged"
    reason = found.get("reason") or "no judgement of the campaign"
    return (
        f"judge: {judge} is not calibrated on {campaign} for {what} ({verdict}: {reason}); "
        'judge the campaign and settle more items, or set "allow_uncalibrated": true to '
        "grade with it anyway (every chart, alert and comparison will say so)"
    )


def wants_preference(monitor) -> bool:
    """Whether the monitor grades judge.preference_win_rate (a threshold names it): only
    then is each run's output judged against the baseline's, which doubles what judging
    costs."""
    return bool(monitor.judge_id) and any(
        t.get("metric") == PREFERENCE for t in monitor.thresholds or []
    )


def judge_note(monitor) -> str:
    """What every chart, alert and comparison of the monitor says of its judge ('' when
    calibrated or without a judge)."""
    return UNCALIBRATED if monitor.judge_id and monitor.allow_uncalibrated else ""


def judge_form_state(*, judge: str, calibration: str, allow: bool) -> dict | None:
    """What the monitor form says of a chosen judge: {"rows": [{"what", "verdict",
    "reason"}] (each rubric dimension of the calibration campaign, then the preference),
    "refusal" (in words, when a verdict is not calibrated and `allow` is not ticked),
    "note", "problem" (no such judge or campaign)}; None when no judge is chosen."""
    if not judge:
        return None
    found = Judge.objects.filter(name=judge).first()
    if found is None:
        return {"problem": f"no judge named {judge!r}"}
    if not calibration:
        return {"problem": "choose the campaign whose reviewers the judge was calibrated against"}
    campaign = Campaign.objects.exclude(kind=Campaign.Kind.MONITOR_RUN).filter(slug=calibration)
    campaign = campaign.first()
    if campaign is None:
        return {"problem": f"no campaign {calibration!r}"}
    verdicts = review_side.judge_verdicts(judge=found, campaign=campaign)
    rows = [
        {"what": key, **_verdict_shown(verdicts["dimensions"].get(key))}
        for key in verdicts["rubric"]
    ]
    if verdicts["preference"] is not None:
        rows.append({"what": "the preference", **_verdict_shown(verdicts["preference"])})
    short = [row["what"] for row in rows if row["verdict"] != "calibrated"]
    refusal = ""
    if short and not allow:
        refusal = (
            f"{judge} is not calibrated on {calibration} for {', '.join(short)}: a monitor "
            "grading those with it is refused. Settle more items of that campaign and judge it "
            "again, or tick allow_uncalibrated to grade with it anyway (every chart, alert and "
            "comparison will say so)."
        )
    return {"rows": rows, "refusal": refusal, "note": UNCALIBRATED if short and allow else ""}


def _verdict_shown(found: dict | None) -> dict:
    found = found or {}
    return {
        "verdict": found.get("verdict") or "not judged",
        "reason": found.get("reason") or "the judge has not judged this campaign",
    }
