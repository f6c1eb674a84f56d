"""Dashboard pieces for the stage-2 report figures: the cost-quality chart with its Pareto
front, per-contender check and flag rates, the 'how many more items' table, the paired win
rate of a head-to-head. Plain data for templates; every figure comes from the report."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from .dashboard_tables import Column, Table, _nice_ticks


@dataclass
class ScatterChart:
    width: int
    height: int
    points: list[dict]
    front: str  # SVG polyline points of the Pareto front, cheapest first
    x_ticks: list[dict]
    y_ticks: list[dict]
    title: str
    x_label: str
    y_label: str
    left: int
    bottom: int


def pareto_chart(report: dict) -> ScatterChart | None:
    """Quality (y) against cost per task (x); the front joins the contenders no other beats on
    both. None when fewer than two contenders have both figures."""
    rows = [
        r
        for r in report["leaderboard"]
        if r.get("quality") is not None and r.get("cost_per_task") is not None
    ]
    if len(rows) < 2:
        return None
    width, height, left, right, top, bottom = 720, 320, 70, 150, 20, 270
    currency = report.get("currency") or settings.EVALSITE_CURRENCY
    costs = [r["cost_per_task"] for r in rows]
    c_lo, c_hi = min(costs), max(costs)
    pad = (c_hi - c_lo) * 0.08 or max(c_hi * 0.1, 1e-6)
    c_lo, c_hi = max(0.0, c_lo - pad), c_hi + pad

    def x(c: float) -> float:
        return round(left + (c - c_lo) / (c_hi - c_lo) * (width - left - right), 1)

    def y(q: float) -> float:
        return round(bottom - q * (bottom - top), 1)

    points = [
        {
            "label": r["contender"],
            "x": x(r["cost_per_task"]),
            "y": y(r["quality"]),
            "tx": x(r["cost_per_task"]) + 8,
            "ty": y(r["quality"]) + 4,
            "front": bool(r.get("pareto")),
            "text": f"quality {r['quality']:.3f}, cost {r['cost_per_task']:.6g} {currency}"
            + (" (Pareto front)" if r.get("pareto") else ""),
        }
        for r in rows
    ]
    front = sorted((p for p in points if p["front"]), key=lambda p: p["x"])
    return ScatterChart(
        width=width,
        height=height + 10,
        points=points,
        front=" ".join(f"{p['x']},{p['y']}" for p in front),
        x_ticks=[{"x": x(t), "label": f"{t:.3g}"} for t in _nice_ticks(c_lo, c_hi)],
        y_ticks=[{"y": y(t), "label": f"{t:.2f}"} for t in (0.0, 0.25, 0.5, 0.75, 1.0)],
        title="Quality against cost per task; the line joins the Pareto front",
        x_label=f"cost per task (one answer, {currency})",
        y_label="quality (0-1)",
        left=left,
        bottom=bottom,
    )


def rates_table(report: dict) -> Table:
    """Every check kind's pass rate and every flag's rate per contender, overall, by tier and
    by case type, with Wilson intervals and n."""
    rows = []
    for contender, entry in (report.get("rates") or {}).items():
        scopes = [("all", "", entry)]
        scopes += [("tier", t, e) for t, e in sorted(entry.get("by_tier", {}).items())]
        scopes += [("case type", t, e) for t, e in sorted(entry.get("by_case_type", {}).items())]
        for scope, group, e in scopes:
            for kind, what in (("checks", "check passes"), ("flags", "flag raised")):
                for name, r in sorted((e.get(kind) or {}).items()):
                    if r.get("n"):
                        rows.append(
                            [
                                contender,
                                scope,
                                group,
                                f"{name} ({what})",
                                r["rate"],
                                r["ci95"],
                                r["n"],
                            ]
                        )
    return Table(
        "rates",
        "Check and flag rates",
        [
            Column("contender", "name"),
            Column("scope"),
            Column("group"),
            Column("rate of"),
            Column("rate", "pct"),
            Column("rate", "ci"),
            Column("n", "int"),
        ],
        rows,
        empty="No automatic check has run and no judged output has a final outcome so far.",
        note="Checks: share of done samples whose check of that kind passed (n = samples that "
        "ran it). Flags: share of judged outputs whose final outcome raised it (n = outputs). "
        "Wilson 95% intervals, valid at any n; fewer than 30 is a small sample.",
    )


def separation_table(report: dict) -> Table:
    s = report.get("separation")
    rows = []
    if s:
        rows = [
            ["compared", f"{s['a']} vs {s['b']}"],
            ["test cases (paired)", s["n_tasks"]],
            ["observed mean quality difference", s["observed_diff"]],
            ["minimum detectable difference (80% power, 5% two-sided)", s["mdd"]],
            ["test cases needed at the observed difference", s["n_needed"]],
        ]
    return Table(
        "separation",
        "How many more items? (top two by rating)",
        [Column("figure"), Column("value", "num")],
        rows,
        empty="Needs two rated contenders scored on the same test cases.",
        note="Normal approximation on the paired per-task quality differences d: MDD = "
        "(1.96 + 0.84) x sd(d) / sqrt(n); needed n = ((1.96 + 0.84) x sd(d) / |mean d|)^2.",
    )


def battle_rows(pair: dict) -> list[list]:
    """Rows of b's paired win rate against a from the pairwise outcomes."""
    bt = pair.get("battles") or {}
    if not bt.get("n_tasks"):
        return [["paired win rate (pairwise outcomes)", None]]
    ci = bt.get("ci95") or [None, None]
    return [
        ["test cases with a pairwise outcome", bt["n_tasks"]],
        [f"paired win rate of {pair['b']} (pairwise outcomes)", bt["win_rate"]],
        ["win rate 95% interval, low", ci[0]],
        ["win rate 95% interval, high", ci[1]],
        ["sign test p-value on pairwise outcomes", bt.get("p_value")],
        ["Holm-adjusted p (all pairs)", pair.get("battles_p_holm")],
        ["Holm-adjusted p of the quality sign test", pair.get("p_holm")],
    ]


def flip_battles(battles: dict | None) -> dict | None:
    """The same paired win rate seen from the other contender."""
    if not battles or battles.get("win_rate") is None:
        return battles
    ci = battles.get("ci95")
    return {
        **battles,
        "win_rate": round(1 - battles["win_rate"], 3),
        "ci95": [round(1 - ci[1], 3), round(1 - ci[0], 3)] if ci else None,
        "wins": battles["losses"],
        "losses": battles["wins"],
    }
