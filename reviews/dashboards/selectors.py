"""Lead dashboards: screen-shaped reads of the campaign report.

Every figure comes from `reviews.report.campaign.campaign_report`; this module only arranges it into
tables (shown as HTML and downloadable as CSV from the same rows) and chart geometry (drawn as
inline SVG by the templates). Nothing statistical is computed here. Table, Column and the
interval chart live in ``dashboard_tables``; the agreement, stability and cost pages in
``dashboard_pages``; the stage-2 pieces (Pareto chart, rates, separation) in ``dashboard_extras``;
the tool use and conversation pages (and the turn-curve chart) in ``dashboard_agentic``.

The report is cached under a fingerprint of everything it reads (reviews, item states,
arbitrations, generations, contenders' prices, campaign settings), so a dashboard page costs a
few aggregate queries unless the data changed.
"""

from __future__ import annotations

from reviews.dashboards.agentic import conversation_page, tools_page
from reviews.dashboards.extras import (
    battle_rows,
    flip_battles,
    gate_text,
    length_table,
    separation_table,
    slices_table,
)
from reviews.dashboards.pages import agreement_section, cost_section, stability_section
from reviews.dashboards.summary import SUMMARIES, head_to_head_summary, interval_text
from reviews.dashboards.tables import Column, IntervalChart, Table, interval_chart

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
    ("tools", "Tool use"),
    ("conversation", "Conversation"),
]
PAGE_TITLES = dict(PAGES)
# Pages shown only when the campaign has such tasks: the report section they read is null
# otherwise (a campaign without tool tasks has no "tools").
SECTION_PAGES = {"tools": "tools", "conversation": "conversation"}


def pages_for(report: dict) -> list[tuple[str, str]]:
    """The dashboard tabs of this campaign's report."""
    return [
        (key, title)
        for key, title in PAGES
        if key not in SECTION_PAGES or report.get(SECTION_PAGES[key]) is not None
    ]


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
                ["open (reviews still missing: not started or in review)", p["open"]],
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
    return {
        "tables": tables,
        "progress": p,
        "disputes": report["disputes"],
        # " (95% interval ...)" without its parentheses: the card has a line of its own.
        "dispute_interval": interval_text(
            report["disputes"].get("ci95"), "pct", report["disputes"].get("ci_reason")
        )[2:-1],
        "chart": rating_chart(report, ranked(report)),
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
    chart = interval_chart(
        [
            (name, r.get("mean_offset"), r.get("mean_offset_ci95") or r.get("offset_ci_reason"))
            for name, r in sorted(report["reviewers"].items())
        ],
        title="Mean offset from the final score",
        marks=[(0.0, "0")],
        fmt="{:+.2f}",
    )
    return {
        "chart": chart,
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
        ],
    }


def ranked(report: dict) -> list[dict]:
    """The leaderboard's rows in reading order."""
    # Contenders whose intervals overlap share a rank, so a higher rating can carry a lower
    # rank; reading down the table should never go 1, 2, 1: by rank, then rating.
    # A rank outside the contender's rank interval is not shown (null): such a row sorts by the
    # low end of its rank interval instead, not to the bottom.
    return sorted(
        report["leaderboard"],
        key=lambda r: (
            r["rating"] is None,
            r["rank"] or (r.get("rank_ci95") or [len(report["leaderboard"])])[0],
            -(r["rating"] or 0),
        ),
    )


def rating_chart(report: dict, lb: list[dict]) -> IntervalChart | None:
    """Each contender's rating with its interval (or why it has none), against 1000."""
    why = (report["rating"].get("ci_reason") or "").rpartition(": ")[2] or None
    return interval_chart(
        [(r["contender"], r["rating"], r["ci95"] or r.get("rating_ci_reason") or why) for r in lb],
        title="Rating",
        marks=[(1000.0, "1000")],
    )


def _leaderboard(report: dict) -> dict:
    lb = ranked(report)
    tables = [_leaderboard_table(report, lb), _dimension_means_table(lb)]
    rating = report["rating"]
    chart = rating_chart(report, lb)
    quality_chart = interval_chart(
        [
            (r["contender"], r["quality"], r.get("quality_ci95") or r.get("quality_reason"))
            for r in lb
        ],
        title="Quality (0-1)",
        domain=(0.0, 1.0),
        fmt="{:.2f}",
    )
    tables.append(separation_table(report))
    tables.append(length_table(report))
    return {"tables": tables, "chart": chart, "quality_chart": quality_chart, "rating": rating}


def _leaderboard_table(report: dict, lb: list[dict]) -> Table:
    """The leaderboard itself: one row per contender, in `lb`'s order."""
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
        Column("gates"),
    ]
    rows = [
        [
            r["rank"],
            r["contender"],
            r["rating"],
            r.get("rating_bound") or "",
            r["ci95"]
            or r.get("rating_ci_reason")
            or (report["rating"].get("ci_reason") or "").rpartition(": ")[2]
            or None,
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
            gate_text(r),
        ]
        for r in lb
    ]
    return Table(
        "leaderboard",
        "Leaderboard",
        columns,
        rows,
        note="Bradley-Terry on final (adjudicated) outcomes, Elo scale centred on 1000; 95% "
        "intervals from one bootstrap over test cases (none below 10 test cases). Rank rule: "
        "rank = 1 + the number of contenders whose interval lies entirely above, so "
        "overlapping intervals share a rank; the rank interval and P(best) come from the "
        "resamples. A contender that never lost (never won) has only a bound. "
        "Gates: the campaign's go / no-go limits (the cost page lists each failure); a "
        "contender that fails one is not ranked on decision score. "
        "Ordered by rank, then rating.",
    )


def _dimension_means_table(lb: list[dict]) -> Table:
    """Mean final score per rubric dimension (the first contender's dimensions), per contender."""
    dims = [d for r in lb[:1] for d in r["scores"]]
    score_rows = [
        [r["contender"], *[(r["scores"].get(d) or {}).get("mean") for d in dims]] for r in lb
    ]
    return Table(
        "dimension-means",
        "Mean final score per dimension",
        [Column("contender", "name")] + [Column(d, "num") for d in dims],
        score_rows,
    )


NO_OUTCOME = "No item has a final outcome yet (agreed, or resolved by an arbiter)."
SMALL_SAMPLE_NOTE = (
    "fewer than 30 test cases: no interval below 10, and from 10 to 29 intervals may "
    "under-cover (hold the truth less than 95% of the time)"
)


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
            slices_table(report),
        ]
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
        [("position A wins", b.get("first_position_win_rate"), b.get("ci95") or b.get("reason"))],
        title="Position A win rate",
        interval="Wilson 95% interval",
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
                    [
                        "p-value of the difference (paired bootstrap, as the interval)",
                        pair["p_value"],
                    ],
                    [
                        f"sign test p-value on the tasks {b} won / lost (exact)",
                        pair.get("sign_test_p"),
                    ],
                    *([["interval", pair["ci_reason"]]] if pair.get("ci_reason") else []),
                    *([["small sample", SMALL_SAMPLE_NOTE]] if pair.get("small_sample") else []),
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
    chart = None
    if pair and pair.get("mean_diff") is not None:
        chart = interval_chart(
            [(f"{b} - {a}", pair["mean_diff"], pair.get("ci95") or pair.get("ci_reason"))],
            title="Mean quality difference",
            marks=[(0.0, "0")],
            fmt="{:+.2f}",
        )
    return {
        "tables": tables,
        "chart": chart,
        "summary": head_to_head_summary(pair),
        "pair": pair,
        "a": a,
        "b": b,
        "contenders": contenders,
        "problem": problem,
    }


def dashboard_page(report: dict, page: str, *, a: str | None = None, b: str | None = None) -> dict:
    builders = {
        "overview": _overview,
        "agreement": agreement_section,
        "reviewers": _reviewers,
        "leaderboard": _leaderboard,
        "capability": _capability,
        "stability": stability_section,
        "cost": cost_section,
        "bias": _bias,
        "tools": tools_page,
        "conversation": conversation_page,
    }
    if page == "head-to-head":
        data = _head_to_head(report, a, b)
    else:
        data = {**builders[page](report), "summary": SUMMARIES[page](report)}
    return {**data, "warnings": page_warnings(report["warnings"], page)}


# Which pages a report warning concerns, by its topic (the text before the first colon). The
# overview shows every warning; a warning of another topic shows on every page.
WARNING_PAGES = {
    "stability": {"stability", "leaderboard", "cost"},
    "ratings": {"leaderboard", "head-to-head"},
    "cost": {"cost", "leaderboard"},
    "decision score": {"cost", "leaderboard"},
    "gates": {"cost", "leaderboard"},
    # Agreement and position bias read the raw reviews: they need no final outcome.
    "final outcomes": {"leaderboard", "capability", "head-to-head", "reviewers", "cost"},
    "conversation": {"conversation"},
    "tools": {"tools"},
}


def page_warnings(warnings: list[str], page: str) -> list[str]:
    return [
        w
        for w in warnings
        if page == "overview" or page in WARNING_PAGES.get(w.split(":", 1)[0], {page})
    ]
