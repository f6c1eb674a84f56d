"""Lead dashboards: screen-shaped reads of the campaign report.

Every figure comes from `reviews.report.campaign_report`; this module only arranges it into
tables (shown as HTML and downloadable as CSV from the same rows) and chart geometry (drawn as
inline SVG by the templates). Nothing statistical is computed here.

The report is cached under a fingerprint of everything it reads (reviews, item states,
arbitrations, generations, contenders' prices, campaign settings), so a dashboard page costs a
few aggregate queries unless the data changed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from django.core.cache import cache
from django.db.models import Count, Max, Sum

from tasks.models import Campaign, Generation

from .models import Arbitration, Review, ReviewItem

PAGES = [
    ("overview", "Overview"),
    ("agreement", "Agreement"),
    ("reviewers", "Reviewers"),
    ("leaderboard", "Leaderboard"),
    ("capability", "Capability profile"),
    ("stability", "Stability"),
    ("cost", "Cost & decision"),
    ("bias", "Position bias"),
    ("head-to-head", "Head-to-head"),
]
PAGE_TITLES = dict(PAGES)
REPORT_CACHE_SECONDS = 3600


# --------------------------------------------------------------------------------------------
# The report, cached by a fingerprint of its inputs


def report_fingerprint(campaign: Campaign) -> str:
    # Reviews are never edited, only added (or removed with a reviewer): count, max and sum
    # of ids change whenever the set does.
    reviews = Review.objects.filter(item__campaign=campaign).aggregate(
        n=Count("id"), last=Max("id"), total=Sum("id")
    )
    items = list(
        ReviewItem.objects.filter(campaign=campaign)
        .values_list("state", "ready")
        .annotate(n=Count("id"))
        .order_by("state", "ready")
    )
    arbitrations = Arbitration.objects.filter(item__campaign=campaign).aggregate(
        n=Count("id"), resolved=Max("resolved_at")
    )
    generations = list(
        Generation.objects.filter(campaign=campaign)
        .values_list("status")
        .annotate(n=Count("id"), last=Max("finished_at"))
        .order_by("status")
    )
    contenders = list(
        campaign.contenders.order_by("id").values_list(
            "id", "name", "price_in_per_mtok", "price_out_per_mtok"
        )
    )
    settings = [
        campaign.slug,
        campaign.name,
        campaign.mode,
        campaign.rubric,
        campaign.weights,
        campaign.pass_threshold,
        campaign.samples_per_task,
        campaign.reviewed_samples,
        campaign.overlap,
    ]
    raw = json.dumps(
        [reviews, items, arbitrations, generations, contenders, settings],
        default=str,
        sort_keys=True,
    )
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def campaign_report_cached(campaign: Campaign) -> dict:
    key = f"evalsite:report:{campaign.pk}:{report_fingerprint(campaign)}"
    report = cache.get(key)
    if report is None:
        # Imported here: pandas/numpy stay out of every process's start-up (URLconf import).
        from .report import campaign_report

        report = campaign_report(campaign=campaign)
        cache.set(key, report, REPORT_CACHE_SECONDS)
    return report


# --------------------------------------------------------------------------------------------
# Tables


@dataclass
class Column:
    label: str
    kind: str = "text"  # text | name (kept on one line) | int | num | pct | ci | ms | s | money | heat  # | task (a task id, linked to its item page)


@dataclass
class Table:
    key: str
    title: str
    columns: list[Column]
    rows: list[list]
    note: str = ""
    empty: str = "No data yet."  # what an empty table says instead
    html_rows: list[list[dict]] = field(default_factory=list)

    def __post_init__(self):
        self.html_rows = [
            [
                {
                    "text": display(v, c.kind),
                    "num": c.kind not in ("text", "name", "task"),
                    "task": v if c.kind == "task" else "",
                    "name": c.kind == "name",
                    "heat": heat_class(v) if c.kind == "heat" else "",
                }
                for v, c in zip(row, self.columns, strict=True)
            ]
            for row in self.rows
        ]

    def csv_header(self) -> list[str]:
        header = []
        for c in self.columns:
            header += (
                [f"{c.label} ci95 low", f"{c.label} ci95 high"] if c.kind == "ci" else [c.label]
            )
        return header

    def csv_rows(self) -> list[list]:
        out = []
        for row in self.rows:
            cells = []
            for v, c in zip(row, self.columns, strict=True):
                if c.kind == "ci":
                    cells += (
                        list(v) if isinstance(v, list | tuple) and len(v) == 2 else [None, None]
                    )
                elif c.kind == "heat" and isinstance(v, dict):
                    cells.append(v.get("mean"))
                else:
                    cells.append(v)
            out.append(cells)
        return out


def display(value, kind: str) -> str:
    if kind == "heat" and isinstance(value, dict):
        mean = value.get("mean")
        return "–" if mean is None else f"{mean:.2f} (n={value.get('n_tasks', 0)})"
    if value is None:
        return "–"
    if kind == "ci":
        if isinstance(value, str):  # why there is no interval: "too few items (n=7)"
            return value
        if not isinstance(value, list | tuple) or len(value) != 2 or value == [None, None]:
            return "–"
        if value[1] is None:  # an undefeated contender: only the lower side is known
            return f"≥ {display(value[0], 'num')}"
        if value[0] is None:
            return f"≤ {display(value[1], 'num')}"
        return f"{display(value[0], 'num')} – {display(value[1], 'num')}"
    if kind == "int":
        return f"{value:,}"
    if kind == "num" and isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if kind == "num" and isinstance(value, int | float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:,.1f}"
    if kind == "pct" and isinstance(value, int | float):
        return f"{100 * value:.1f}%"
    if kind == "ms" and isinstance(value, int | float):
        return f"{value:,.0f} ms"
    if kind == "s" and isinstance(value, int | float):
        return f"{value:,.1f} s"
    if kind == "money" and isinstance(value, int | float):
        return f"{value:.6f}".rstrip("0").rstrip(".") if value else "0"
    return str(value)


def heat_class(cell) -> str:
    """heat-0 .. heat-9 by the 0..1 quality; CSS colours them (no inline styles under CSP)."""
    mean = cell.get("mean") if isinstance(cell, dict) else None
    if mean is None:
        return "heat-none"
    return f"heat-{min(9, max(0, int(mean * 10)))}"


# --------------------------------------------------------------------------------------------
# Charts: geometry only; templates draw it


@dataclass
class IntervalChart:
    """Horizontal interval plot: one row per label with a point and its 95% interval."""

    width: int
    height: int
    left: int
    rows: list[dict]
    ticks: list[dict]
    marks: list[dict]
    title: str


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / n
    magnitude = 10 ** int(f"{raw:e}".split("e")[1])
    step = min((m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw), default=raw)
    first = (lo // step) * step
    ticks, t = [], first
    while t <= hi + 1e-9:
        if t >= lo - 1e-9:
            ticks.append(round(t, 10))
        t += step
    return ticks


def interval_chart(
    points: list[tuple[str, float | None, list | None]],
    *,
    title: str,
    domain: tuple[float, float] | None = None,
    marks: list[tuple[float, str]] | None = None,
    fmt: str = "{:.0f}",
) -> IntervalChart | None:
    """points: (label, value, [low, high]); None values are listed as 'no data'."""
    known = [(v, ci) for _, v, ci in points if v is not None]
    if not known:
        return None
    values = [v for v, _ in known] + [x for _, ci in known if ci for x in ci]
    lo, hi = domain or (min(values), max(values))
    if domain is None:
        pad = (hi - lo) * 0.08 or max(abs(hi) * 0.05, 1.0)
        lo, hi = lo - pad, hi + pad
    for value, _ in marks or []:
        lo, hi = min(lo, value), max(hi, value)
    width, left, right, row_h, top = 720, 190, 30, 30, 16
    plot = width - left - right

    def x(v: float) -> float:
        return (
            round(left + (min(max(v, lo), hi) - lo) / (hi - lo) * plot, 1)
            if hi > lo
            else left + plot / 2
        )

    rows = []
    for i, (label, value, ci) in enumerate(points):
        y = top + i * row_h + row_h / 2
        row = {
            "label": label,
            "y": y,
            "ty": y + 4,
            "value": value,
            "x": None,
            "x_lo": None,
            "x_hi": None,
            "text": "no data" if value is None else fmt.format(value),
        }
        if value is not None:
            row["x"] = x(value)
            if ci and len(ci) == 2 and ci[0] is not None and ci[1] is not None:
                row["x_lo"], row["x_hi"] = x(ci[0]), x(ci[1])
                row["text"] += f"  [{fmt.format(ci[0])}, {fmt.format(ci[1])}]"
            elif ci and len(ci) == 2 and (ci[0] is not None or ci[1] is not None):
                # an undefeated (winless) contender: only one side of its interval is known
                row["x_lo"] = x(ci[0]) if ci[0] is not None else left
                row["x_hi"] = x(ci[1]) if ci[1] is not None else left + plot
                row["text"] += (
                    f"  [>= {fmt.format(ci[0])}]"
                    if ci[0] is not None
                    else f"  [<= {fmt.format(ci[1])}]"
                )
        rows.append(row)
    height = top + len(points) * row_h + 28
    axis_y = top + len(points) * row_h + 4
    ticks = [
        {"x": x(t), "label": fmt.format(t), "y": axis_y + 16, "y0": top, "y1": axis_y}
        for t in _nice_ticks(lo, hi)
    ]
    drawn_marks = [
        {"x": x(v), "label": label, "y0": top - 6, "y1": axis_y} for v, label in marks or []
    ]
    return IntervalChart(
        width=width,
        height=height,
        left=left,
        rows=rows,
        ticks=ticks,
        marks=drawn_marks,
        title=title,
    )


# --------------------------------------------------------------------------------------------
# Pages


def _overview(report: dict) -> dict:
    p = report["progress"]
    reasons = report["disputes"]["reasons"]
    tables = [
        Table(
            "progress",
            "Progress",
            [Column("figure"), Column("value", "num")],
            [
                ["review items", p["items"]],
                ["ready for review", p["ready"]],
                ["reviews done", p["reviews_done"]],
                ["reviews needed (ready items x overlap)", p["reviews_needed"]],
                ["items fully reviewed (all k reviews in)", p["settled"]],
                ["items with a final outcome (agreed or resolved)", p["agreed"] + p["resolved"]],
                ["agreed", p["agreed"]],
                ["disputed (waiting for an arbiter)", p["disputed"]],
                ["resolved by arbitration", p["resolved"]],
                ["open (still in review)", p["open"]],
                ["dispute rate (disputed or resolved / fully reviewed)", p["dispute_rate"]],
                *[
                    [f"dispute rate 95% interval, {end}", v]
                    for end, v in zip(
                        ("low", "high"),
                        report["disputes"].get("ci95") or (None, None),
                        strict=True,
                    )
                ],
                ["test cases with a fully reviewed item", report["disputes"].get("n_cases")],
            ],
        ),
        Table(
            "dispute-reasons",
            "Dispute reasons (items per disputed part)",
            [Column("part"), Column("items", "int"), Column("share of disputed items", "pct")],
            [
                [
                    part,
                    n,
                    n / report["disputes"]["disputed_items"]
                    if report["disputes"]["disputed_items"]
                    else None,
                ]
                for part, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))
            ],
            empty="No disputed item so far.",
        ),
    ]
    return {"tables": tables, "progress": p, "disputes": report["disputes"]}


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


def _agreement(report: dict) -> dict:
    rows = []
    for dim, a in report["agreement"].items():
        rows.append(
            [
                dim,
                a.get("level"),
                a.get("alpha"),
                a.get("ci95"),
                a.get("band") or _no_band(a),
                a.get("ac1", a.get("ac2")),
                a.get("n_units"),
                a.get("n_items"),
                a.get("n_ratings"),
                a.get("exact"),
                a.get("within_one"),
                _agreement_note(a),
            ]
        )
    pa = report.get("preference_agreement") or {}
    if pa:
        rows.append(
            [
                "preference",
                pa.get("level"),
                pa.get("alpha"),
                pa.get("ci95"),
                pa.get("band") or _no_band(pa),
                pa.get("ac1"),
                pa.get("n_units"),
                pa.get("n_items"),
                pa.get("n_ratings"),
                pa.get("exact"),
                pa.get("within_one"),
                _agreement_note(pa),
            ]
        )
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
    chart = interval_chart(
        [(r[0], r[2], r[3]) for r in rows],
        title="Krippendorff's alpha with 95% bootstrap interval",
        domain=(min([-0.2] + [x for r in rows if r[3] for x in r[3] if x is not None]), 1.0),
        marks=[(0.667, "0.667"), (0.8, "0.800")],
        fmt="{:.2f}",
    )
    return {
        "tables": [
            Table(
                "agreement",
                "Agreement per dimension (raw reviews, before arbitration)",
                columns,
                rows,
                note=AGREEMENT_NOTE,
            )
        ],
        "chart": chart,
    }


def _reviewers(report: dict) -> dict:
    columns = [
        Column("reviewer", "name"),
        Column("reviews", "int"),
        Column("median time per item", "s"),
        Column("mean offset from final", "num"),
        Column("mean offset", "ci"),
        Column("test cases", "int"),
        Column("mean |offset|", "num"),
        Column("exact agreement with others", "pct"),
        Column("within one of others", "pct"),
        Column("scores compared", "int"),
    ]
    rows = [
        [
            name,
            r.get("reviews"),
            r.get("median_seconds"),
            r.get("mean_offset"),
            r.get("mean_offset_ci95"),
            r.get("offset_n_cases"),
            r.get("mean_abs_offset"),
            r.get("agreement_exact"),
            r.get("agreement_within_one"),
            r.get("n_compared"),
        ]
        for name, r in sorted(report["reviewers"].items())
    ]
    return {
        "tables": [
            Table(
                "reviewers",
                "Reviewers",
                columns,
                rows,
                empty="No review yet.",
                note="Offset: the reviewer's score minus the item's final score, on the rubric "
                "scale; 95% interval over test cases (none below 10).",
            )
        ]
    }


def _leaderboard(report: dict) -> dict:
    # Contenders whose intervals overlap share a rank, so a higher rating can carry a lower
    # rank; reading down the table should never go 1, 2, 1: by rank, then rating.
    lb = sorted(
        report["leaderboard"],
        key=lambda r: (r["rank"] is None, r["rank"] or 0, -(r["rating"] or 0)),
    )
    columns = [
        Column("rank", "int"),
        Column("contender", "name"),
        Column("rating", "num"),
        Column("rating bound"),
        Column("rating", "ci"),
        Column("rank interval"),
        Column("P(best)", "pct"),
        Column("wins", "int"),
        Column("losses", "int"),
        Column("ties", "int"),
        Column("quality", "num"),
        Column("quality", "ci"),
        Column("test cases", "int"),
        Column("stability", "num"),
        Column("pass@1", "pct"),
        Column("pass basis"),
        Column("cost per task (one answer)", "money"),
        Column("decision score", "num"),
    ]
    rows = [
        [
            r["rank"],
            r["contender"],
            r["rating"],
            r.get("rating_bound") or "",
            r["ci95"] or (report["rating"].get("ci_reason") or "").rpartition(": ")[2] or None,
            "–".join(map(str, r["rank_ci95"])) if r.get("rank_ci95") else "",
            r.get("p_best"),
            r["wins"],
            r["losses"],
            r["ties"],
            r["quality"],
            r.get("quality_ci95") or r.get("quality_reason"),
            r.get("quality_n"),
            r["stability"],
            r["pass_at_1"],
            r.get("pass_basis") or "",
            r["cost_per_task"],
            r["decision_score"],
        ]
        for r in lb
    ]
    dims = [d for r in lb[:1] for d in r["scores"]]
    score_rows = [
        [r["contender"], *[(r["scores"].get(d) or {}).get("mean") for d in dims]] for r in lb
    ]
    tables = [
        Table(
            "leaderboard",
            "Leaderboard",
            columns,
            rows,
            note="Bradley-Terry on final (adjudicated) outcomes, Elo scale centred on 1000; 95% "
            "intervals from one bootstrap over test cases (none below 10 test cases). Rank rule: "
            "rank = 1 + the number of contenders whose interval lies entirely above, so "
            "overlapping intervals share a rank; the rank interval and P(best) come from the "
            "resamples. A contender that never lost (never won) has only a bound. "
            "Ordered by rank, then rating.",
        ),
        Table(
            "dimension-means",
            "Mean final score per dimension",
            [Column("contender", "name")] + [Column(d, "num") for d in dims],
            score_rows,
        ),
    ]
    rating = report["rating"]
    chart = interval_chart(
        [(r["contender"], r["rating"], r["ci95"]) for r in lb],
        title="Rating with 95% interval",
        marks=[(1000.0, "1000")],
    )
    quality_chart = interval_chart(
        [(r["contender"], r["quality"], r.get("quality_ci95")) for r in lb],
        title="Quality (0-1) with 95% interval",
        domain=(0.0, 1.0),
        fmt="{:.2f}",
    )
    from .dashboard_extras import separation_table

    tables.append(separation_table(report))
    return {"tables": tables, "chart": chart, "quality_chart": quality_chart, "rating": rating}


NO_OUTCOME = "No item has a final outcome yet (agreed, or resolved by an arbiter)."


def _heat_table(key: str, title: str, nested: dict, contenders: list[str]) -> Table:
    groups = sorted({g for per in nested.values() for g in per})
    rows = [[g, *[nested.get(c, {}).get(g) for c in contenders]] for g in groups]
    return Table(
        key,
        title,
        [Column(key.split("-")[0])] + [Column(c, "heat") for c in contenders],
        rows,
        empty=NO_OUTCOME,
        note="Mean final quality (0-1) per task; n = tasks. Darker = better.",
    )


def _capability(report: dict) -> dict:
    contenders = [r["contender"] for r in report["leaderboard"]]
    q = report["quality"]
    detail_rows = []
    for kind, nested in (
        ("category", q["by_category"]),
        ("tier", q["by_tier"]),
        ("case type", q.get("by_case_type", {})),
    ):
        for c in contenders:
            for group, cell in sorted(nested.get(c, {}).items()):
                detail_rows.append(
                    [kind, group, c, cell.get("mean"), cell.get("ci95"), cell.get("n_tasks")]
                )
    weights = [[cat, w] for cat, w in q.get("weights", {}).items()]
    return {
        "tables": [
            _heat_table("category-profile", "Category x contender", q["by_category"], contenders),
            _heat_table("tier-profile", "Tier x contender", q["by_tier"], contenders),
            _heat_table(
                "case-type-profile", "Case type x contender", q.get("by_case_type", {}), contenders
            ),
            Table(
                "capability-detail",
                "Quality by category and tier, with intervals",
                [
                    Column("by"),
                    Column("group"),
                    Column("contender", "name"),
                    Column("quality", "num"),
                    Column("quality", "ci"),
                    Column("tasks", "int"),
                ],
                detail_rows,
                empty=NO_OUTCOME,
            ),
            Table(
                "category-weights",
                "Category weights in the overall quality",
                [Column("category"), Column("weight", "num")],
                weights,
            ),
        ]
    }


STABILITY_SOURCES = {"human": "people's scores", "checks": "automatic checks"}


def _stability(report: dict) -> dict:
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
            s.get("stability_ci95") or s.get("ci_reason"),
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
    basis_rows = [
        [
            c,
            basis,
            (p.get(basis) or {}).get("pass_at_1"),
            (p.get(basis) or {}).get("ci95"),
            ", ".join(
                f"@{pt['k']} {100 * pt['pass_at_k']:.1f}%"
                for pt in (p.get(basis) or {}).get("curve", [])
            ),
            (p.get(basis) or {}).get("n_samples"),
            (p.get(basis) or {}).get("n_tasks"),
            p.get("pending"),
        ]
        for c, p in (report.get("passes") or {}).items()
        for basis in ("human", "checks", "combined")
    ]
    return {
        "tables": [
            Table(
                "stability",
                "Stability over samples and pass@k",
                columns,
                rows,
                note="Stability = 1 - SD / 0.5, where SD is the spread of a task's sample scores "
                "(0-1 scale; 0.5 is the largest possible), averaged over tasks. A sample passes when its automatic checks pass and its final quality reaches "
                f"the pass threshold ({report['settings']['pass_threshold']}). pass@k: the chance "
                "that at least one of k samples of a task passes; pass^k: that all k pass.",
            ),
            Table(
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
                "dispute is pending: neither pass nor fail, and out of the denominators.",
            ),
            _rates_table(report),
        ]
    }


def _rates_table(report: dict) -> Table:
    from .dashboard_extras import rates_table

    return rates_table(report)


def _cost(report: dict) -> dict:
    lb = report["leaderboard"]
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
    from .dashboard_extras import pareto_chart

    decision = report["decision"]
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
            "yes" if r.get("pareto") else "",
        ]
        for r in lb
    ]
    # Below the quality floor is not ranked on decision: listed after the others.
    decision_rows.sort(key=lambda row: (bool(row[7]), row[4] is None, -(row[4] or 0), row[0]))
    return {
        "decision": decision,
        "pareto_chart": pareto_chart(report),
        "tables": [
            Table("cost-latency", "Cost and latency", cost_columns, cost_rows),
            Table(
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
                    Column("cost-quality Pareto front"),
                ],
                decision_rows,
                note=f"decision = {decision['formula']}; 95% interval from the same bootstrap "
                "over test cases. A contender whose quality is below the floor is not ranked on "
                "decision. On the Pareto front: no other contender is both better and cheaper."
                + (f" {decision['cost_reason']}." if decision.get("cost_reason") else ""),
            ),
            Table(
                "decision-weights",
                "Weights",
                [Column("weight"), Column("value", "num")],
                [["w_quality", decision["w_quality"]], ["w_stability", decision["w_stability"]]],
            ),
        ],
    }


def _interval_rows(ci: list | None) -> list[list]:
    """A 95% interval in a figure / value table: its two ends as numbers (so the CSV has
    numbers, not a "low – high" text cell)."""
    low, high = ci if ci else (None, None)
    return [["95% interval, low", low], ["95% interval, high", high]]


def _bias(report: dict) -> dict:
    b = report["position_bias"]
    rows = [
        ["first-position win rate", b.get("first_position_win_rate")],
        ["n (decisive judgements)", b.get("n")],
        ["expected by chance", b.get("expected")],
        ["p-value (binomial, two-sided)", b.get("p_value")],
        ["source", b.get("source")],
    ]
    if b.get("reason"):
        rows.append(["note", b["reason"]])
    chart = interval_chart(
        [("position A wins", b.get("first_position_win_rate"), b.get("ci95"))],
        title="Position A win rate with Wilson 95% interval",
        domain=(0.0, 1.0),
        marks=[(b["expected"], "chance")] if b.get("expected") is not None else None,
        fmt="{:.2f}",
    )
    rows[1:1] = _interval_rows(b.get("ci95"))
    return {
        "tables": [
            Table(
                "position-bias",
                "Position bias",
                [Column("figure"), Column("value", "num")],
                rows,
                note="How often the output shown first (A) won, against chance (1 / outputs "
                "shown). Source: preferences (the reviewer's pick) or scores (the output they "
                "scored strictly best, in rubric-only campaigns). A p-value below 0.05 says "
                "reviewers favour or avoid position A; the order is counterbalanced, so this "
                "adds noise rather than favouring a contender.",
            )
        ],
        "chart": chart,
        "bias": b,
    }


def head_to_head_pair(report: dict, a: str, b: str) -> dict | None:
    """The report's comparison of b against a (the report holds each pair once; flip if needed)."""
    from .dashboard_extras import flip_battles

    for entry in report["head_to_head"]:
        if entry["a"] == a and entry["b"] == b:
            return entry
        if entry["a"] == b and entry["b"] == a:
            ci = entry.get("ci95")
            return {
                **entry,
                "a": a,
                "b": b,
                "mean_diff": None if entry["mean_diff"] is None else -entry["mean_diff"],
                "ci95": [-ci[1], -ci[0]] if ci else None,
                "wins": entry["losses"],
                "losses": entry["wins"],
                "battles": flip_battles(entry.get("battles")),
                "regressions": [
                    {"task": r["task"], "diff": -r["diff"]} for r in entry["improvements"]
                ],
                "improvements": [
                    {"task": r["task"], "diff": -r["diff"]} for r in entry["regressions"]
                ],
            }
    return None


def _head_to_head(report: dict, a: str | None, b: str | None) -> dict:
    """b against a; with neither chosen (the first visit), the first two contenders. A choice
    that cannot be compared says so instead of showing another pair."""
    contenders = report["contenders"]
    problem = None
    if len(contenders) < 2:
        problem = "This campaign has fewer than two contenders: there is nothing to compare."
    elif a is None and b is None:
        a, b = contenders[:2]
    elif not a or not b:
        problem = "Pick both contenders: a baseline and the one compared with it."
    elif a not in contenders or b not in contenders:
        unknown = ", ".join(repr(x) for x in (a, b) if x not in contenders)
        problem = f"No contender named {unknown} in this campaign: pick two from the lists."
    elif a == b:
        problem = f"Baseline and compared are both {a}: pick two different contenders."
    from .dashboard_extras import battle_rows

    pair = head_to_head_pair(report, a, b) if problem is None else None
    tables = []
    if pair:
        tables = [
            Table(
                "head-to-head",
                f"{b} against {a}",
                [Column("figure"), Column("value", "num")],
                [
                    ["tasks compared", pair["n_tasks"]],
                    [f"mean quality difference ({b} - {a})", pair["mean_diff"]],
                    *_interval_rows(pair.get("ci95")),
                    [f"tasks where {b} is better", pair["wins"]],
                    [f"tasks where {b} is worse", pair["losses"]],
                    ["tied tasks", pair["ties"]],
                    ["sign test p-value (exact, two-sided)", pair["p_value"]],
                    *([["note", pair["reason"]]] if pair.get("reason") else []),
                    *battle_rows(pair),
                ],
            ),
            Table(
                "regressions",
                f"Tasks where {b} regressed",
                [Column("task", "task"), Column("quality difference", "num")],
                [[r["task"], r["diff"]] for r in pair["regressions"]],
                empty=f"No task where {b} scored lower than {a}.",
            ),
            Table(
                "improvements",
                f"Tasks where {b} improved",
                [Column("task", "task"), Column("quality difference", "num")],
                [[r["task"], r["diff"]] for r in pair["improvements"]],
                empty=f"No task where {b} scored higher than {a}.",
            ),
        ]
    return {
        "tables": tables,
        "pair": pair,
        "a": a,
        "b": b,
        "contenders": contenders,
        "problem": problem,
    }


def dashboard_page(report: dict, page: str, *, a: str | None = None, b: str | None = None) -> dict:
    builders = {
        "overview": _overview,
        "agreement": _agreement,
        "reviewers": _reviewers,
        "leaderboard": _leaderboard,
        "capability": _capability,
        "stability": _stability,
        "cost": _cost,
        "bias": _bias,
    }
    data = _head_to_head(report, a, b) if page == "head-to-head" else builders[page](report)
    return {**data, "warnings": page_warnings(report["warnings"], page)}


# Which pages a report warning concerns, by its topic (the text before the first colon). The
# overview shows every warning; a warning of another topic shows on every page.
WARNING_PAGES = {
    "stability": {"stability", "leaderboard", "cost"},
    "ratings": {"leaderboard", "head-to-head"},
    "cost": {"cost", "leaderboard"},
    "decision score": {"cost", "leaderboard"},
    # Agreement and position bias read the raw reviews: they need no final outcome.
    "final outcomes": {"leaderboard", "capability", "head-to-head", "reviewers", "cost"},
}


def page_warnings(warnings: list[str], page: str) -> list[str]:
    return [
        w
        for w in warnings
        if page == "overview" or page in WARNING_PAGES.get(w.split(":", 1)[0], {page})
    ]
