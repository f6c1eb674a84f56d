"""A campaign definition's ``gates``: the go / no-go limits a contender must meet before its
decision score may rank it (the report judges them: ``reviews/report/gates.py``).

```json
"gates": {"min_quality": 0.7, "min_tier": {"boundary": 0.5},
          "min_category": {"refund_policy": 0.8}, "max_flag_rate": {"unsafe": 0.0},
          "max_latency_ms": {"p95": 4000}, "max_cost_per_task": 0.01,
          "min_stability": 0.8, "min_conversation": 0.7}
```

Read into ``weights["gates"]`` (beside the per-tier pass thresholds), every problem reported
at once. Without ``gates`` the report applies its default set and says so.
"""

from __future__ import annotations

from tasks.campaigns.definition_reader import DefinitionReader

FLAG_NAMES = ("hallucination", "refusal", "format_violation", "unsafe", "identity_leak")
LATENCY_KEYS = ("p50", "p95")
SHARES = ("min_quality", "min_stability", "min_conversation")  # numbers between 0 and 1
MAPPINGS = ("min_tier", "min_category", "max_flag_rate", "max_latency_ms")
GATE_KEYS = {*SHARES, *MAPPINGS, "max_cost_per_task"}


def read_gates(data: dict, weights: dict, errors: list[str]) -> None:
    """Check ``data["gates"]`` and store the checked limits in ``weights["gates"]``."""
    weights.pop("gates", None)
    if "gates" not in data:
        return
    gates = data["gates"]
    if not isinstance(gates, dict):
        errors.append("gates: must be an object")
        return
    r = DefinitionReader(errors)
    r.unknown(gates, GATE_KEYS, "gates.")
    out: dict = {}
    for key in SHARES:
        if key in gates and r.number(gates, key, "gates.", None, lo=0, hi=1) is not None:
            out[key] = float(gates[key])
    if "max_cost_per_task" in gates:
        if r.number(gates, "max_cost_per_task", "gates.", None, lo=0) is not None:
            out["max_cost_per_task"] = float(gates["max_cost_per_task"])
    for key in MAPPINGS:
        if key in gates:
            mapping = _mapping(gates[key], key, errors)
            if mapping:
                out[key] = mapping
    weights["gates"] = out


def _mapping(value, key: str, errors: list[str]) -> dict[str, float]:
    """{name: limit}: tiers and categories (any name), flags and latency percentiles (known
    names only); shares between 0 and 1, latencies in milliseconds (>= 0)."""
    if not isinstance(value, dict) or not value:
        errors.append(f"gates.{key}: must map a name to a limit")
        return {}
    known = {"max_flag_rate": FLAG_NAMES, "max_latency_ms": LATENCY_KEYS}.get(key)
    hi = None if key == "max_latency_ms" else 1
    out = {}
    for name, limit in value.items():
        where = f"gates.{key}.{name}"
        if known is not None and name not in known:
            errors.append(f"{where}: unknown (one of {', '.join(known)})")
        elif isinstance(limit, bool) or not isinstance(limit, int | float):
            errors.append(f"{where}: must be a number")
        elif limit < 0 or (hi is not None and limit > hi):
            errors.append(f"{where}: must be between 0 and 1" if hi else f"{where}: must be >= 0")
        else:
            out[str(name)] = float(limit)
    return out
