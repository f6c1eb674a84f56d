"""The human summary of a comparison (run_monitor and compare write it on stderr)."""

from __future__ import annotations

KEY_METRICS = ("check_pass_rate", "pass_at_1", "error_rate", "latency_ms.p95", "cost_per_task")


def _fmt(value) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def comparison_summary(
    comparison: dict, *, metrics: dict | None = None, thresholds: bool = True
) -> str:
    lines = []
    if comparison.get("baseline") is None:
        lines.append(f"run {comparison.get('run')}: no baseline yet (this run is the first)")
        for name, values in sorted((metrics or {}).items()):
            shown = ", ".join(f"{m} {_fmt(values.get(m))}" for m in KEY_METRICS)
            lines.append(f"  {name}: {shown}")
        return "\n".join(lines)
    lines.append(f"{comparison['baseline']} -> {comparison['run']}")
    judge = comparison.get("judge")
    if judge:
        note = f" ({judge['note']})" if judge.get("note") else ""
        lines.append(f"judge {judge['name']}, calibrated on {judge['calibration']}{note}")
    for name, entry in sorted(comparison["contenders"].items()):
        lines.append(f"  {name}:")
        shown = (*KEY_METRICS, *sorted(m for m in entry["metrics"] if m.startswith("judge.")))
        for metric in shown:
            m = entry["metrics"].get(metric) or {}
            ci = m.get("ci95")
            ci_text = f" [{_fmt(ci[0])}, {_fmt(ci[1])}]" if ci else ""
            lines.append(
                f"    {metric}: {_fmt(m.get('baseline'))} -> {_fmt(m.get('run'))} "
                f"(delta {_fmt(m.get('delta'))}{ci_text}, p {_fmt(m.get('p'))})"
            )
        lines.append(
            f"    regressed {len(entry['regressions'])}, improved {len(entry['improvements'])}"
            + (
                f"; served {entry['served_models']['baseline']} -> {entry['served_models']['run']}"
                if entry["served_model_changed"]
                else ""
            )
        )
    alerts = comparison.get("alerts") or []
    if not thresholds:
        pass  # `compare` checks no thresholds: no verdict
    elif alerts:
        lines.append(f"{len(alerts)} threshold(s) crossed:")
        lines += [
            f"  {a['contender']} {a['metric']} {a['rule']} {a['threshold'].get(a['rule'])}: "
            f"{_fmt(a['baseline'])} -> {_fmt(a['value'])}"
            for a in alerts
        ]
    else:
        lines.append("within thresholds")
    return "\n".join(lines)
