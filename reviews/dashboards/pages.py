"""Dashboard pages on agreement, stability and pass rates, and cost and decision.

Each builder turns the campaign report into tables and charts for one page (see
``reviews.dashboards.selectors``); nothing here computes a statistic.
"""

from __future__ import annotations

from reviews.dashboards.extras import gate_text, gates_table, pareto_chart, rates_table
from reviews.dashboards.tables import Column, Table, interval_chart

AGREEMENT_NOTE = (
    "Alpha: agreement beyond what the reviewers' overall use of each score would give by chance "
    "(1 = perfect, 0 = chance). AC1 / AC2 (Gwet): the same idea with a chance term that stays "
    "small when nearly every rating is one value, so it does not collapse where alpha does. "
    "Bands are judged on alpha's 95% interval: reliable only if its low end is >= 0.800, "
    "unreliable if its high end is below 0.667, tentative otherwise; no interval (fewer than "
    "10 test cases), no band."
)


def _no_band(a: dict) -> str:
    return f"no band: {a['ci_reason']}" if a.get("ci_reason") else "no data"


def _agreement_note(a: dict) -> str:
    parts = [a.get("reason") or "", a.get("note") or ""]
    if a.get("small_sample"):
        parts.append(f"small sample ({a.get('n_items')} test cases)")
    return "; ".join(p for p in parts if p)


def agreement_section(report: dict) -> dict:
    rows = [
        _agreement_row(dim, a, a.get("ac1", a.get("ac2"))) for dim, a in report["agreement"].items()
    ]
    pa = report.get("preference_agreement") or {}
    if pa:
        rows.append(_agreement_row("preference", pa, pa.get("ac1")))
    reasons = [a.get("ci_reason") or a.get("reason") for a in report["agreement"].values()]
    if pa:
        reasons.append(pa.get("ci_reason") or pa.get("reason"))
    chart = interval_chart(
        [(r[0], r[2], r[3] or why) for r, why in zip(rows, reasons, strict=True)],
        title="Krippendorff's alpha",
        interval="95% bootstrap interval",
        domain=(min([-0.2] + [x for r in rows if r[3] for x in r[3] if x is not None]), 1.0),
        marks=[(0.667, "0.667"), (0.8, "0.800")],
        fmt="{:.2f}",
    )
    return {"tables": [_agreement_table(rows)], "chart": chart}


def _agreement_row(name: str, a: dict, ac) -> list:
    """One dimension's (or the preference's) agreement figures; `ac`: its AC1 or AC2."""
    return [
        name,
        a.get("level"),
        a.get("alpha"),
        a.get("ci95"),
        a.get("band") or _no_band(a),
        ac,
        a.get("n_units"),
        a.get("n_items"),
        a.get("n_ratings"),
        a.get("exact"),
        a.get("within_one"),
        _agreement_note(a),
    ]


def _agreement_table(rows: list[list]) -> Table:
    """Agreement on the raw reviews: a row per rubric dimension, then the preference's."""
    columns = [
        Column("dimension"),
        Column("level"),
        Column("alpha", "num"),
        Column("alpha", "ci"),
        Column("band"),
        Column("AC1 / AC2", "num"),
        Column("units", "int"),
        Column("test cases", "int"),
        Column("ratings", "int"),
        Column("exact agreement", "pct"),
        Column("within one", "pct"),
        Column("note"),
    ]
    return Table(
        "agreement",
        "Agreement per dimension (raw reviews, before arbitration)",
        columns,
        rows,
        note=AGREEMENT_NOTE,
    )


STABILITY_SOURCES = {"human": "people's scores", "checks": "automatic checks"}


def _thresholds(value) -> str:
    """0.6, or 'base 0.6, advanced 0.8' for per-tier thresholds."""
    if isinstance(value, dict):
        return ", ".join(f"{tier} {v}" for tier, v in value.items())
    return str(value)


def stability_section(report: dict) -> dict:
    chart = interval_chart(
        [
            (
                c,
                s.get("stability"),
                s.get("stability_ci95") or s.get("ci_reason") or s.get("reason"),
            )
            for c, s in report["stability"].items()
        ],
        title="Stability over samples (0-1)",
        domain=(0.0, 1.0),
        fmt="{:.2f}",
    )
    return {
        "chart": chart,
        "tables": [
            _stability_table(report),
            _pass_bases_table(report),
            _flaky_table(report),
            rates_table(report),
        ],
    }


def _flaky_table(report: dict) -> Table:
    """Per contender, the tasks whose samples disagree (some pass, some fail)."""
    flaky = report.get("flaky_tasks") or {}
    rows = [[name, len(tasks), ", ".join(tasks)] for name, tasks in flaky.items() if tasks]
    return Table(
        "flaky-tasks",
        "Flaky tasks (samples disagree)",
        [Column("contender", "name"), Column("tasks", "int"), Column("task ids")],
        rows,
        empty="No task has samples that disagree (or no task has two settled samples).",
        note="A task is flaky when some of its samples pass and others fail, on the "
        "contender's pass basis: the answer depends on the draw.",
    )


def _stability_table(report: dict) -> Table:
    """Stability over samples and the pass rates, one row per contender."""
    columns = [
        Column("contender", "name"),
        Column("stability", "num"),
        Column("stability", "ci"),
        Column("within-task SD", "num"),
        Column("measured on"),
        Column("tasks with 2+ samples measured", "int"),
        Column("pass@1", "pct"),
        Column("pass@k", "pct"),
        Column("pass^k", "pct"),
        Column("k", "int"),
        Column("pass basis"),
        Column("pending", "int"),
    ]
    rows = [
        [
            c,
            s.get("stability"),
            s.get("stability_ci95") or s.get("ci_reason") or s.get("reason"),
            s.get("sampling_sd"),
            STABILITY_SOURCES.get(s.get("source"), ""),
            s.get("n_tasks"),
            s.get("pass_at_1"),
            s.get("pass_at_k"),
            s.get("pass_hat_k"),
            s.get("k"),
            s.get("pass_basis") or "",
            s.get("pending"),
        ]
        for c, s in report["stability"].items()
    ]
    return Table(
        "stability",
        "Stability over samples and pass@k",
        columns,
        rows,
        note="Stability = 1 - SD / 0.5, where SD is the spread of a task's sample scores "
        "(0-1 scale; 0.5 is the largest possible), averaged over tasks. A sample passes when its automatic checks pass and its final quality reaches "
        f"the pass threshold ({_thresholds(report['settings']['pass_threshold'])}). "
        "pass@k: the chance "
        "that at least one of k samples of a task passes; pass^k: that all k pass.",
    )


def _curve_point(pt: dict) -> str:
    """'@2 80.0%', or its bounds '@2 60.0-90.0%' while samples are pending."""
    low, high = pt["low"]["pass_at_k"], pt["high"]["pass_at_k"]
    if pt.get("pass_at_k") is not None and low == high:
        return f"@{pt['k']} {100 * pt['pass_at_k']:.1f}%"
    return f"@{pt['k']} {100 * low:.1f}-{100 * high:.1f}%"


def _pass_bases_table(report: dict) -> Table:
    """Pass@1 and the pass@k curve per contender and basis (human, checks, combined)."""
    basis_rows = [
        [
            c,
            basis,
            (p.get(basis) or {}).get("pass_at_1"),
            (p.get(basis) or {}).get("ci95"),
            ", ".join(_curve_point(pt) for pt in (p.get(basis) or {}).get("curve", [])),
            (p.get(basis) or {}).get("n_samples"),
            (p.get(basis) or {}).get("n_tasks"),
            p.get("pending"),
        ]
        for c, p in (report.get("passes") or {}).items()
        for basis in ("human", "checks", "combined")
    ]
    return Table(
        "pass-bases",
        "Pass rates per basis, and the pass@k curve",
        [
            Column("contender", "name"),
            Column("basis"),
            Column("pass@1", "pct"),
            Column("pass@1", "ci"),
            Column("pass@k curve"),
            Column("samples", "int"),
            Column("tasks", "int"),
            Column("pending", "int"),
        ],
        basis_rows,
        note="human: final quality reaches the pass threshold; checks: every automatic "
        "check passes; combined: both, where both exist. A sample in an unresolved "
        "dispute is pending: neither pass nor fail. Every task stays in every k's "
        "denominator, so while samples are pending the curve shows bounds (low-high): every "
        "pending sample failing, and every one passing.",
    )


def cost_section(report: dict) -> dict:
    lb = report["leaderboard"]
    decision = report["decision"]
    return {
        "decision": decision,
        "pareto_chart": pareto_chart(report),
        "tables": [
            _cost_table(lb),
            usage_table(report.get("usage") or {}),
            prices_table(report.get("usage") or {}),
            gates_table(report),
            _decision_table(lb, decision),
            Table(
                "decision-weights",
                "Weights",
                [Column("weight"), Column("value", "num")],
                [["w_quality", decision["w_quality"]], ["w_stability", decision["w_stability"]]],
            ),
        ],
    }


def usage_table(usage: dict) -> Table:
    """Throughput and the reasoning and cached parts of the tokens, one row per contender."""
    columns = [
        Column("contender", "name"),
        Column("output tokens/s p50", "num"),
        Column("output tokens/s p95", "num"),
        Column("reasoning tokens", "int"),
        Column("reasoning cost per task", "money"),
        Column("cached prompt tokens read", "int"),
        Column("cached prompt tokens written", "int"),
    ]
    rows = [
        [
            name,
            (u.get("tokens_per_s") or {}).get("p50"),
            (u.get("tokens_per_s") or {}).get("p95"),
            u.get("reasoning_tokens"),
            u.get("reasoning_cost_per_task"),
            u.get("cache_read_tokens"),
            u.get("cache_write_tokens"),
        ]
        for name, u in usage.items()
    ]
    return Table(
        "usage",
        "Throughput, reasoning and cache",
        columns,
        rows,
        note="Output tokens per second while each answer streamed (reasoning included); "
        "reasoning tokens and cache counts as the providers report them (blank: not reported).",
    )


def prices_table(usage: dict) -> Table:
    """The prices every cost was computed with, and where they came from."""
    columns = [
        Column("contender", "name"),
        Column("source"),
        Column("input", "num"),
        Column("output", "num"),
        Column("cache read", "num"),
        Column("cache write", "num"),
        Column("reasoning", "num"),
        Column("tiers by prompt length"),
    ]
    rows = []
    for name, u in usage.items():
        p = u.get("prices") or {}
        matched = p.get("matched")
        source = p.get("source", "")
        if matched:
            source += f" ({matched['provider']} {matched['model']})"
        tiers = "; ".join(
            f"above {t['above_input_tokens']:,}: "
            + ", ".join(
                f"{k.removesuffix('_per_mtok')} {v:g}"
                for k, v in t.items()
                if k != "above_input_tokens"
            )
            for t in p.get("tiers") or []
        )
        rows.append(
            [
                name,
                source,
                p.get("price_in_per_mtok"),
                p.get("price_out_per_mtok"),
                p.get("cache_read_per_mtok"),
                p.get("cache_write_per_mtok"),
                p.get("reasoning_per_mtok"),
                tiers,
            ]
        )
    return Table(
        "prices",
        "Prices (per million tokens)",
        columns,
        rows,
        note="Blank rates bill as the input rate (cache) or the output rate (reasoning).",
    )


def _cost_table(lb: list[dict]) -> Table:
    """Cost per task and latency percentiles, one row per contender."""
    cost_columns = [
        Column("contender", "name"),
        Column("cost per task (one answer)", "money"),
        Column("normalized cost", "num"),
        Column("latency p50", "ms"),
        Column("latency p95", "ms"),
        Column("TTFT p50", "ms"),
        Column("TTFT p95", "ms"),
    ]
    cost_rows = [
        [
            r["contender"],
            r["cost_per_task"],
            r.get("normalized_cost"),
            (r.get("latency_ms") or {}).get("p50"),
            (r.get("latency_ms") or {}).get("p95"),
            (r.get("ttft_ms") or {}).get("p50"),
            (r.get("ttft_ms") or {}).get("p95"),
        ]
        for r in lb
    ]
    return Table("cost-latency", "Cost and latency", cost_columns, cost_rows)


def _decision_table(lb: list[dict], decision: dict) -> Table:
    """The decision score per contender, best first, those below the quality floor last."""
    decision_rows = [
        [
            r["contender"],
            r["quality"],
            r["stability"],
            r.get("normalized_cost"),
            r["decision_score"],
            r.get("decision_ci95") or r.get("decision_reason"),
            r.get("decision_rank"),
            "below floor" if r.get("below_floor") else "",
            gate_text(r),
            "yes" if r.get("pareto") else "",
        ]
        for r in lb
    ]
    # Below the quality floor or failing a gate is not ranked on decision: listed after.
    decision_rows.sort(
        key=lambda row: (row[6] is None, bool(row[7]), row[4] is None, -(row[4] or 0), row[0])
    )
    return Table(
        "decision",
        "Decision score",
        [
            Column("contender", "name"),
            Column("quality", "num"),
            Column("stability", "num"),
            Column("normalized cost", "num"),
            Column("decision score", "num"),
            Column("decision score", "ci"),
            Column("decision rank", "int"),
            Column(f"quality floor ({decision.get('min_quality')})"),
            Column("gates"),
            Column("cost-quality Pareto front"),
        ],
        decision_rows,
        note=f"decision = {decision['formula']}; 95% interval from the same bootstrap "
        "over test cases. A contender whose quality is below the floor, or that fails a "
        "gate, is not ranked on decision. On the Pareto front: no other contender is both better and cheaper."
        + (f" {decision['cost_reason']}." if decision.get("cost_reason") else ""),
    )
