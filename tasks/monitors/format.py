"""Monitor figures as people read them (pages and the run_monitor summary): rates with three
decimals, times in whole milliseconds, costs with four significant digits, counts as integers,
served models as "name: count" lists, p-values as 0.125 or < 0.001; a delta and its interval
to the precision the interval supports (one digit past the interval's first significant one).
"""

from __future__ import annotations

import math

from tasks.monitors.metrics import COUNT_METRICS, is_rate

DASH = "–"


def metric_value(value, metric: str) -> str:
    """One value of `metric` (a baseline, a run, a threshold's value)."""
    if value is None:
        return DASH
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in sorted(value.items())) or DASH
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) or DASH
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if metric in COUNT_METRICS or metric.startswith("answer_chars"):
        return f"{value:,.0f}"
    if metric.endswith(("ms.p50", "ms.p95")) or metric.endswith("_ms"):
        return f"{value:,.0f} ms"
    if is_rate(metric):
        return f"{value:.3f}"
    return _significant(value, 4)


def delta_value(value, metric: str, ci: list | None = None) -> str:
    """A difference run - baseline, signed: to the interval's precision when one is given."""
    if value is None:
        return DASH
    if value == 0:
        return "0"
    digits = _ci_digits(ci)
    if digits is not None:
        return f"{value:+.{digits}f}" + _unit(metric)
    if metric in COUNT_METRICS:
        return f"{value:+.0f}"
    return ("−" if value < 0 else "+") + metric_value(abs(value), metric)


def interval(ci: list | None, metric: str) -> str:
    """A 95% interval of a difference, both bounds to the precision its width supports."""
    digits = _ci_digits(ci)
    if not ci or None in ci:
        return DASH
    if digits is None:  # a zero-width interval: as the values themselves
        return f"[{metric_value(ci[0], metric)}, {metric_value(ci[1], metric)}]"
    return f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]{_unit(metric)}"


def _ci_digits(ci: list | None) -> int | None:
    """Decimals that show an interval's width to two significant digits (at most 6)."""
    if not ci or None in ci or ci[1] == ci[0]:
        return None
    return max(0, min(6, 1 - math.floor(math.log10(abs(ci[1] - ci[0])))))


def _unit(metric: str) -> str:
    return " ms" if "_ms" in metric else ""


def p_value(p) -> str:
    if p is None:
        return DASH
    if p < 0.001:
        return "< 0.001"
    return f"{p:.3f}"


def _significant(value: float, digits: int) -> str:
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:,.{decimals}f}"
