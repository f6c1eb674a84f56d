"""Dashboard pieces for the stage-2 report figures: the cost-quality chart with its Pareto
front, per-contender check and flag rates, the 'how many more items' table, the paired win
rate of a head-to-head. Plain data for templates; every figure comes from the report."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from reviews.dashboards.tables import Column, Table, nice_ticks


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
    both. A contender with a quality but no cost data sits on the quality axis, marked "cost
    unknown" (it is on no front). None when fewer than two contenders have both figures."""
    rows = [
        r
        for r in report["leaderboard"]
        if r.get("quality") is not None and r.get("cost_per_task") is not None
    ]
    unknown = [
        r
        for r in report["leaderboard"]
        if r.get("quality") is not None and r.get("cost_per_task") is None
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
    points += [
        {
            "label": r["contender"],
            "x": left,
            "y": y(r["quality"]),
            "tx": left + 8,
            "ty": y(r["quality"]) + 4,
            "front": False,
            "unknown_cost": True,
            "text": f"quality {r['quality']:.3f}, cost unknown (no cost data)",
        }
        for r in unknown
    ]
    front = sorted((p for p in points if p["front"]), key=lambda p: p["x"])
    return ScatterChart(
        width=width,
        height=height + 10,
        points=points,
        front=" ".join(f"{p['x']},{p['y']}" for p in front),
        x_ticks=[{"x": x(t), "label": f"{t:.3g}"} for t in nice_ticks(c_lo, c_hi)],
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
        [
            "p-value of the win rate against 0.5 (paired bootstrap, as the interval)",
            bt.get("p_value"),
        ],
        ["sign test p-value on the test cases won / lost (exact)", bt.get("sign_test_p")],
        ["Holm-adjusted p (all pairs)", pair.get("battles_p_holm")],
        ["Holm-adjusted p of the quality difference", pair.get("p_holm")],
        *([["small sample", "fewer than 30 test cases"]] if bt.get("small_sample") else []),
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


def gate_text(row: dict) -> str:
    """'pass', or 'fails min_quality, max_flag_rate.unsafe' (a leaderboard cell)."""
    if row.get("gates_pass") is None:
        return ""
    return "pass" if row["gates_pass"] else "fails " + ", ".join(row.get("gates_failed") or [])


def gates_table(report: dict) -> Table:
    """Every gate a contender failed: its value and interval, the limit, and whether the
    whole interval is past it."""
    gates = report.get("gates") or {}
    names = [r["contender"] for r in report["leaderboard"]]
    rows = [
        [name, f["gate"], f["value"], f["ci95"], f["limit"], "yes" if f["certain"] else "no"]
        for name in names
        for f in (gates.get(name) or {}).get("failed", [])
    ]
    meta = (report.get("decision") or {}).get("gates") or {}
    limits = ", ".join(f"{g} {v:g}" for g, v in (meta.get("limits") or {}).items()) or "none"
    note = f"Gates ({meta.get('source', 'campaign')}): {limits}. "
    if meta.get("note"):
        note += meta["note"][0].upper() + meta["note"][1:] + ". "
    note += (
        "A gate fails when the figure is past its limit; certain: its whole 95% interval is "
        "past it. A figure the contender lacks fails its gate (nothing vouches for it)."
    )
    passing = [n for n in names if (gates.get(n) or {}).get("pass")]
    return Table(
        "gates",
        "Gates (go / no-go)",
        [
            Column("contender", "name"),
            Column("gate"),
            Column("value", "num"),
            Column("value", "ci"),
            Column("limit", "num"),
            Column("certain"),
        ],
        rows,
        note=note,
        empty=f"Every contender passes every gate ({', '.join(passing) or 'none'}).",
    )


def slices_table(report: dict) -> Table:
    """Quality and pass@1 per metadata slice (the campaign's slice_by keys) and contender."""
    rows = []
    for key, groups in (report.get("slices") or {}).items():
        for value, per in groups.items():
            for name, cell in per.items():
                q, p = cell.get("quality") or {}, cell.get("pass_at_1") or {}
                rows.append(
                    [
                        key,
                        value,
                        name,
                        q.get("mean"),
                        q.get("ci95") or q.get("reason"),
                        p.get("mean"),
                        p.get("ci95") or p.get("reason"),
                        p.get("basis") or "",
                        cell.get("n_tasks"),
                    ]
                )
    return Table(
        "slices",
        "Slices by task metadata",
        [
            Column("key"),
            Column("value"),
            Column("contender", "name"),
            Column("quality", "num"),
            Column("quality", "ci"),
            Column("pass@1", "pct"),
            Column("pass@1", "ci"),
            Column("pass basis"),
            Column("tasks", "int"),
        ],
        rows,
        empty="No slices: name task metadata keys in the campaign definition's slice_by "
        '(e.g. ["position", "doc_length_bucket"]) to see every figure per value.',
        note="Each value of a metadata key (position in a long document, length bucket, ...) "
        "with its own 95% intervals from the same bootstrap over test cases; a task without "
        "the key is in none of its slices.",
    )


def length_table(report: dict) -> Table:
    """Output length per contender, and the length-controlled rating beside the raw one."""
    length = report.get("length") or {}
    rows = [
        [
            name,
            (c.get("chars") or {}).get("mean"),
            (c.get("chars") or {}).get("p50"),
            (c.get("chars") or {}).get("p95"),
            c.get("rating"),
            c.get("rating_controlled"),
            c.get("rating_controlled_ci95"),
        ]
        for name, c in (length.get("contenders") or {}).items()
    ]
    coefficient = length.get("coefficient") or {}
    ci = coefficient.get("ci95")
    told = (
        f"Length coefficient {coefficient['value']:.3f}"
        + (f" (95% interval {ci[0]:.3f} to {ci[1]:.3f})" if ci else "")
        + ": above 0, the longer answer wins more often at equal strength. "
        if coefficient.get("value") is not None
        else f"No length-controlled rating: {length.get('reason') or 'no data'}. "
    )
    return Table(
        "length",
        "Output length and the length-controlled rating",
        [
            Column("contender", "name"),
            Column("mean characters", "num"),
            Column("median characters", "num"),
            Column("p95 characters", "num"),
            Column("rating", "num"),
            Column("rating, length held equal", "num"),
            Column("rating, length held equal", "ci"),
        ],
        rows,
        note=told
        + "The controlled rating adds the two answers' normalized length difference to the "
        "Bradley-Terry model (as Chatbot Arena's style control does).",
    )
