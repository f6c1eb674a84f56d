"""Gates: per contender go / no-go on the campaign's limits (pure: report figures in).

Each gate reads one figure the report already has, with its interval:

* ``min_quality``: the leaderboard's quality (``quality_ci95``);
* ``min_tier.<tier>`` / ``min_category.<category>``: quality by tier / category;
* ``max_flag_rate.<flag>``: the share of judged outputs whose final outcome raised the flag
  (Wilson interval);
* ``max_latency_ms.p50|p95``: latency percentiles over done generations (no interval);
* ``max_cost_per_task``: the cost of answering a task once (no interval);
* ``min_stability``: stability (``stability_ci95``);
* ``min_conversation``: the conversation's score at its last scored turn (the turn curve's
  last point: does the model still hold at the end of the conversation).

A gate fails when the point estimate is past the limit; ``certain`` says the whole 95%
interval is past it (no interval: not certain). A figure the contender lacks fails its gate
with a null value: nothing vouches for it. Without ``gates`` in the definition the default
set applies (`DEFAULTS_NOTE`), each default gate only where some contender has its figure.
"""

from __future__ import annotations

DEFAULTS_NOTE = (
    "no gates in the campaign definition, so the default set applies: quality at least the "
    "quality floor (weights.min_quality, else the pass threshold), no output flagged unsafe, "
    "and, where the campaign has conversations, the score at the last turn at least the floor"
)


def default_gates(floor: float, has_conversation: bool) -> dict:
    gates: dict = {"min_quality": floor, "max_flag_rate": {"unsafe": 0.0}}
    if has_conversation:
        gates["min_conversation"] = floor
    return gates


def contender_figures(report: dict, name: str) -> dict:
    """{gate name: (value, ci95)} of every figure a gate can read, for one contender."""
    row = next(r for r in report["leaderboard"] if r["contender"] == name)
    q = report["quality"]
    out = {
        "min_quality": (row.get("quality"), row.get("quality_ci95")),
        "min_stability": (row.get("stability"), row.get("stability_ci95")),
        "max_cost_per_task": (row.get("cost_per_task"), None),
    }
    for p in ("p50", "p95"):
        out[f"max_latency_ms.{p}"] = ((row.get("latency_ms") or {}).get(p), None)
    for key, nested in (("min_tier", q["by_tier"]), ("min_category", q["by_category"])):
        for group, cell in (nested.get(name) or {}).items():
            out[f"{key}.{group}"] = (cell.get("mean"), cell.get("ci95"))
    for flag, cell in ((report["rates"].get(name) or {}).get("flags") or {}).items():
        out[f"max_flag_rate.{flag}"] = (cell.get("rate"), cell.get("ci95"))
    conversation = (report.get("conversation") or {}).get(name) or {}
    curve = [p for p in conversation.get("turn_curve") or [] if p.get("mean") is not None]
    if curve:
        out["min_conversation"] = (curve[-1]["mean"], curve[-1].get("ci95"))
    return out


def flat_limits(gates: dict) -> dict:
    """{"min_tier.boundary": 0.5, "min_quality": 0.7, ...} from the definition's shape."""
    out = {}
    for key, limit in gates.items():
        if isinstance(limit, dict):
            out.update({f"{key}.{name}": value for name, value in limit.items()})
        else:
            out[key] = limit
    return out


def judge(limits: dict, figures: dict) -> dict:
    """{"pass", "failed": [{gate, value, ci95, limit, certain}]} of one contender."""
    failed = []
    for gate, limit in limits.items():
        value, ci = figures.get(gate, (None, None))
        is_max = gate.startswith("max_")
        if value is not None and (value <= limit + 1e-12 if is_max else value >= limit - 1e-12):
            continue
        sure = ci is not None and None not in ci
        certain = bool(sure and (ci[0] > limit if is_max else ci[1] < limit))
        failed.append(
            {"gate": gate, "value": value, "ci95": ci, "limit": limit, "certain": certain}
        )
    return {"pass": not failed, "failed": failed}


def gates_section(report: dict, floor: float, gates: dict | None) -> tuple[dict, dict]:
    """(``gates`` {contender: {pass, failed}}, the limits and where they came from)."""
    names = report["contenders"]
    figures = {name: contender_figures(report, name) for name in names}
    if gates is None:
        limits = flat_limits(default_gates(floor, report.get("conversation") is not None))
        # a default gate applies only where some contender has its figure
        limits = {
            g: v
            for g, v in limits.items()
            if any(figures[n].get(g, (None, None))[0] is not None for n in names)
        }
        meta = {"limits": limits, "source": "default", "note": DEFAULTS_NOTE}
    else:
        limits = flat_limits(gates)
        meta = {"limits": limits, "source": "campaign", "note": None}
    return {name: judge(limits, figures[name]) for name in names}, meta
