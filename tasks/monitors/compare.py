"""Comparisons: a run with its baseline, or any two runs (`slug#4`) or two campaigns on the
same test-set version (contenders matched by name), as one JSON shape:

    {"baseline": n, "run": m, "contenders": {name: {"metrics": {metric: {"baseline", "run",
     "delta", "ci95", "p"}}, "regressions": [...], "improvements": [...],
     "served_models": {"baseline": {...}, "run": {...}}, "served_model_changed": bool}},
     "alerts": [...]}
"""

from __future__ import annotations

from tasks.models import Campaign
from tasks.monitors.definition import MonitorError
from tasks.monitors.judging import judge_note
from tasks.monitors.metrics import N_BOOT, SEED, compare_tables
from tasks.monitors.models import Monitor, MonitorRun
from tasks.monitors.runs import campaign_tables


def compare_tablesets(
    base_tables: dict, run_tables: dict, *, n_boot: int, seed: int, levels: tuple = ()
) -> dict:
    contenders = {}
    for name in sorted(set(base_tables) & set(run_tables)):
        contenders[name] = compare_tables(
            base_tables[name], run_tables[name], n_boot=n_boot, seed=seed, levels=levels
        )
    return contenders


def compare_runs(
    base: MonitorRun,
    run: MonitorRun,
    *,
    run_tables: dict | None = None,
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> dict:
    judge = run.monitor.judge
    if run_tables is None:
        # The preference was judged against the run's graded baseline only: against another
        # run there is none (judge_preferences answers nothing), so it is left out.
        run_tables = campaign_tables(run.campaign, judge=judge, baseline=base.campaign)
    # The confidence levels the monitor's thresholds ask for (their intervals are computed).
    levels = tuple(sorted({t["confidence"] for t in run.monitor.thresholds if "confidence" in t}))
    return {
        "monitor": run.monitor.slug,
        "baseline": base.number,
        "run": run.number,
        "testset": str(run.campaign.testset),
        "contenders": compare_tablesets(
            campaign_tables(base.campaign, judge=judge),
            run_tables,
            n_boot=n_boot,
            seed=seed,
            levels=levels,
        ),
        "bootstrap": {"rounds": n_boot, "seed": seed, "over": "tasks"},
        "alerts": [],
        **_judge_fields(run.monitor),
    }


def _judge_fields(monitor: Monitor) -> dict:
    """The comparison's `judge`: who graded the judge metrics, on which calibration, and the
    note "judge not calibrated" when the monitor let an uncalibrated judge in."""
    if not monitor.judge_id:
        return {}
    return {
        "judge": {
            "name": monitor.judge.name,
            "calibration": monitor.calibration.slug,
            "calibrated": not monitor.allow_uncalibrated,
            "note": judge_note(monitor),
        }
    }


def compare_campaigns(a: Campaign, b: Campaign, *, n_boot: int = N_BOOT, seed: int = SEED) -> dict:
    if a.testset_id != b.testset_id:
        raise MonitorError(
            f"{a.slug} is on {a.testset} and {b.slug} on {b.testset}: "
            "campaigns are compared on the same test set version"
        )
    base_tables, run_tables = campaign_tables(a), campaign_tables(b)
    if not set(base_tables) & set(run_tables):
        raise MonitorError(f"{a.slug} and {b.slug} share no contender name")
    return {
        "baseline": a.slug,
        "run": b.slug,
        "testset": str(a.testset),
        "contenders": compare_tablesets(base_tables, run_tables, n_boot=n_boot, seed=seed),
        "bootstrap": {"rounds": n_boot, "seed": seed, "over": "tasks"},
        "alerts": [],
    }


def resolve(ref: str) -> MonitorRun | Campaign:
    """`slug#4` is run 4 of monitor `slug`; anything else names a campaign."""
    if "#" in ref:
        slug, _, number = ref.rpartition("#")
        monitor = Monitor.objects.filter(slug=slug).first()
        if monitor is None:
            raise MonitorError(f"no monitor {slug!r}")
        if not number.isdigit():
            raise MonitorError(f"{ref!r}: a run is named slug#number")
        run = monitor.runs.select_related("campaign__testset", "monitor").filter(number=int(number))
        found = run.first()
        if found is None:
            raise MonitorError(f"monitor {slug} has no run {number}")
        if found.status != MonitorRun.Status.DONE:
            raise MonitorError(f"run {ref} is still {found.status}")
        return found
    campaign = Campaign.objects.select_related("testset").filter(slug=ref).first()
    if campaign is None:
        raise MonitorError(f"no campaign {ref!r} (a monitor run is named slug#number)")
    return campaign


def compare_refs(a: str, b: str, *, n_boot: int = N_BOOT, seed: int = SEED) -> dict:
    left, right = resolve(a), resolve(b)
    if isinstance(left, MonitorRun) and isinstance(right, MonitorRun):
        if left.campaign.testset_id != right.campaign.testset_id:
            raise MonitorError("the two runs are on different test set versions")
        out = compare_runs(left, right, n_boot=n_boot, seed=seed)
        out["refs"] = [a, b]
        return out
    left_c = left.campaign if isinstance(left, MonitorRun) else left
    right_c = right.campaign if isinstance(right, MonitorRun) else right
    out = compare_campaigns(left_c, right_c, n_boot=n_boot, seed=seed)
    out["baseline"], out["run"], out["refs"] = a, b, [a, b]
    return out
