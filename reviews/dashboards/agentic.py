"""The "tool use" and "conversation" dashboard pages, and the turn-curve chart.

Plain data for templates; every figure comes from the report's ``tools`` and ``conversation``
sections (``reviews.report.agentic``). The pages exist only for a campaign that has such tasks.
"""

from __future__ import annotations

from dataclasses import dataclass

from reviews.dashboards.tables import Column, Table, interval_chart

CALLS_NOTE = (
    "Tool-call accuracy: share of samples whose tool_calls check passed (n = samples that ran "
    "one). Invalid and unmocked: per tool call (n = calls): arguments that are not a valid "
    "object for the tool's schema or an undeclared tool; a call no mock answered. Wilson 95% "
    "intervals, valid at any n; fewer than 30 is a small sample."
)
RECOVERY_NOTE = (
    "Error recovery: among samples where a mocked tool returned an error, the share whose "
    "checks all passed (Wilson 95% interval). Steps: model calls per task (samples averaged), "
    "with the report's bootstrap interval over test cases (none below 10). Completion: from "
    "the first request to the last answer, over samples."
)
NO_TOOL_OUTPUT = "No generation of a tool task is done yet."
BASES = {"human": "people's per-turn scores", "turn_checks": "turn checks"}


def _rate_cells(r: dict | None) -> list:
    r = r or {}
    return [r.get("rate"), r.get("ci95") or r.get("reason"), r.get("n")]


def tools_page(report: dict) -> dict:
    tools = report.get("tools") or {}
    chart = interval_chart(
        [
            (name, acc.get("rate"), acc.get("ci95") or acc.get("reason"))
            for name, t in tools.items()
            for acc in [t.get("tool_call_accuracy") or {}]
        ],
        title="Tool-call accuracy",
        interval="Wilson 95% interval",
        domain=(0.0, 1.0),
        fmt="{:.0%}",
    )
    return {"chart": chart, "tables": [_tool_calls_table(tools), _tool_recovery_table(tools)]}


def _tool_calls_table(tools: dict) -> Table:
    """Per contender: tool-call accuracy, invalid calls and unmocked calls."""
    call_rows = []
    for name, t in tools.items():
        unmocked = t.get("unmocked_call_rate") or {}
        call_rows.append(
            [
                name,
                *_rate_cells(t.get("tool_call_accuracy")),
                *_rate_cells(t.get("invalid_call_rate")),
                unmocked.get("rate"),
                unmocked.get("ci95") or unmocked.get("reason"),
            ]
        )
    return Table(
        "tool-calls",
        "Tool calls",
        [
            Column("contender", "name"),
            Column("tool-call accuracy", "pct"),
            Column("accuracy", "ci"),
            Column("samples", "int"),
            Column("invalid calls", "pct"),
            Column("invalid", "ci"),
            Column("calls", "int"),
            Column("unmocked calls", "pct"),
            Column("unmocked", "ci"),
        ],
        call_rows,
        note=CALLS_NOTE,
        empty=NO_TOOL_OUTPUT,
    )


def _tool_recovery_table(tools: dict) -> Table:
    """Per contender: error recovery, steps per task and completion time."""
    recovery_rows = []
    for name, t in tools.items():
        ms = t.get("completion_ms") or {}
        recovery_rows.append(
            [
                name,
                *_rate_cells(t.get("error_recovery_rate")),
                t.get("mean_steps"),
                t.get("mean_steps_ci95") or t.get("mean_steps_reason"),
                ms.get("p50"),
                ms.get("p95"),
                t.get("n_tasks"),
            ]
        )
    return Table(
        "tool-recovery",
        "Error recovery, steps and completion time",
        [
            Column("contender", "name"),
            Column("error recovery", "pct"),
            Column("recovery", "ci"),
            Column("samples with a mocked error", "int"),
            Column("steps per task", "num"),
            Column("steps", "ci"),
            Column("completion p50", "ms"),
            Column("completion p95", "ms"),
            Column("tool tasks", "int"),
        ],
        recovery_rows,
        note=RECOVERY_NOTE,
        empty=NO_TOOL_OUTPUT,
    )


# --------------------------------------------------------------------------------------------
# The turn curve: one line per contender over the turns, 0..1, with its 95% band


@dataclass
class TurnChart:
    width: int
    height: int
    left: int
    top: int
    bottom: int
    right: int
    lines: list[dict]
    x_ticks: list[dict]
    y_ticks: list[dict]
    title: str
    basis: str


SERIES = 6  # CSS classes series-0 .. series-5 colour the lines (no inline styles under CSP)


def turn_chart(conversation: dict) -> TurnChart | None:
    """None when no contender has a point. Geometry in viewBox units; the SVG is drawn at the
    card's width (width 100%), so the units scale with it."""
    curves = {n: c.get("turn_curve") or [] for n, c in conversation.items()}
    turns = sorted({p["turn"] for pts in curves.values() for p in pts if p["mean"] is not None})
    if not turns:
        return None
    width, height, left, right, top, bottom = 720, 250, 44, 150, 16, 210
    first, last = turns[0], max(turns[-1], turns[0] + 1)

    def x(turn: int) -> float:
        return round(left + (turn - first) / (last - first) * (width - left - right), 1)

    def y(v: float) -> float:
        return round(bottom - min(max(v, 0.0), 1.0) * (bottom - top), 1)

    lines = []
    for i, (name, pts) in enumerate(curves.items()):
        pts = [p for p in pts if p["mean"] is not None]
        if pts:
            lines.append(_turn_line(name, pts, css=f"series-{i % SERIES}", x=x, y=y))
    _spread_labels(lines, top, bottom)
    basis = {c.get("basis") for c in conversation.values()} - {None}
    return TurnChart(
        width=width,
        height=height + 10,
        left=left,
        top=top,
        bottom=bottom,
        right=width - right,
        lines=lines,
        x_ticks=[{"x": x(t), "label": str(t)} for t in range(first, turns[-1] + 1)],
        y_ticks=[{"y": y(v), "label": f"{v:.2f}"} for v in (0.0, 0.25, 0.5, 0.75, 1.0)],
        # The caption promises an interval only where one is drawn (a band or a whisker).
        title="Mean score per turn"
        + (
            " with 95% interval"
            if any(line["whiskers"] for line in lines)
            else " (no 95% interval: too few test cases)"
        ),
        basis=", ".join(sorted(BASES.get(b, b) for b in basis)),
    )


def _turn_line(name: str, pts: list[dict], *, css: str, x, y) -> dict:
    """One contender's line over the turns it has a mean for: its points, its 95% band (where
    two or more turns have an interval), a dot per turn and its label at the end."""
    banded = [p for p in pts if p.get("ci95") and None not in p["ci95"]]
    upper = [f"{x(p['turn'])},{y(p['ci95'][1])}" for p in banded]
    lower = [f"{x(p['turn'])},{y(p['ci95'][0])}" for p in reversed(banded)]
    end = pts[-1]
    return {
        "name": name,
        "css": css,
        "points": " ".join(f"{x(p['turn'])},{y(p['mean'])}" for p in pts),
        "band": " ".join(upper + lower) if len(banded) > 1 else "",
        # Every interval also as a whisker at its turn: a lone one (no band) is drawn too.
        "whiskers": [
            {"x": x(p["turn"]), "y1": y(p["ci95"][0]), "y2": y(p["ci95"][1])} for p in banded
        ],
        "dots": [
            {
                "x": x(p["turn"]),
                "y": y(p["mean"]),
                "title": f"{name}, turn {p['turn']}: {p['mean']:.3f}"
                + (
                    f" [{p['ci95'][0]:.3f}, {p['ci95'][1]:.3f}]"
                    if p in banded
                    else f" ({p.get('reason') or 'no interval'})"
                )
                + f", n = {p['n']} tasks",
            }
            for p in pts
        ],
        "label_x": x(end["turn"]) + 8,
        "label_y": y(end["mean"]) + 4,
    }


def _spread_labels(lines: list[dict], top: float, bottom: float, gap: float = 14) -> None:
    """Contenders ending on the same value would print their names on top of each other:
    push the end labels apart, keeping their order."""
    order = sorted(lines, key=lambda line: line["label_y"])
    for prev, line in zip(order, order[1:], strict=False):
        line["label_y"] = max(line["label_y"], prev["label_y"] + gap)
    overflow = order[-1]["label_y"] - (bottom + 4) if order else 0
    if overflow > 0:
        for line in order:
            line["label_y"] = max(top, line["label_y"] - overflow)


def conversation_page(report: dict) -> dict:
    conv = report.get("conversation") or {}
    tables = [_turn_curve_table(conv), _decay_table(conv)]
    if any(c.get("single_vs_multi") for c in conv.values()):
        tables.append(_single_vs_multi_table(conv))
    return {"tables": tables, "turn_chart": turn_chart(conv)}


def _turn_curve_table(conv: dict) -> Table:
    """Each contender's mean score at each turn, with its interval."""
    curve_rows = [
        [name, p["turn"], p["mean"], p.get("ci95") or p.get("reason"), p["n"]]
        for name, c in conv.items()
        for p in c.get("turn_curve") or []
    ]
    reasons = {c.get("basis_reason") for c in conv.values()} - {None}
    return Table(
        "turn-curve",
        "Turn curve",
        [
            Column("contender", "name"),
            Column("turn", "int"),
            Column("mean score", "num"),
            Column("mean", "ci"),
            Column("tasks", "int"),
        ],
        curve_rows,
        empty="No turn is scored yet: add turn checks to the tasks, or score turns.",
        note="Mean score (0-1) at each turn: per task its samples first, then over tasks. "
        "95% interval from the report's bootstrap over test cases (none below 10)."
        + "".join(f" {r[:1].upper()}{r[1:]}." for r in sorted(reasons)),
    )


def _decay_table(conv: dict) -> Table:
    """Each contender's decay from the first scored turn to the last, and what it is measured on."""
    decay_rows = []
    for name, c in conv.items():
        d = c.get("decay") or {}
        decay_rows.append(
            [
                name,
                BASES.get(c.get("basis"), c.get("basis") or ""),
                d.get("value"),
                d.get("ci95") or d.get("reason"),
                d.get("first_turn"),
                d.get("last_turn"),
                d.get("n"),
            ]
        )
    return Table(
        "decay",
        "Decay from the first to the last turn",
        [
            Column("contender", "name"),
            Column("measured on"),
            Column("decay", "num"),
            Column("decay", "ci"),
            Column("first turn", "int"),
            Column("last turn", "int"),
            Column("tasks", "int"),
        ],
        decay_rows,
        note="Per task: its mean score at the last scored turn minus at the first, then "
        "the mean over tasks. Negative: the conversation loses quality as it goes on.",
    )


def _single_vs_multi_table(conv: dict) -> Table:
    """The conversation against the same request in one message, for the contenders with both."""
    svm_rows = [
        [
            name,
            s.get("single"),
            s.get("multi"),
            s.get("gap"),
            s.get("ci95") or s.get("reason"),
            s.get("n"),
            s.get("aptitude"),
            s.get("unreliability"),
            s.get("single_aptitude"),
            s.get("single_unreliability"),
            s.get("spread_reason") or "",
        ]
        for name, c in conv.items()
        if (s := c.get("single_vs_multi"))
    ]
    return Table(
        "single-vs-multi",
        "Conversation against the same request in one message",
        [
            Column("contender", "name"),
            Column("single turn", "num"),
            Column("conversation", "num"),
            Column("gap", "num"),
            Column("gap", "ci"),
            Column("tasks", "int"),
            Column("aptitude", "num"),
            Column("unreliability", "num"),
            Column("single-turn aptitude", "num"),
            Column("single-turn unreliability", "num"),
            Column("note"),
        ],
        svm_rows,
        note="Score of a sample: the share of the task's checks that pass on its final "
        "answer. Gap = conversation - single turn, paired by task. Aptitude: the 90th "
        "percentile of a task's sample scores, averaged over tasks; unreliability: "
        "90th minus 10th percentile (Laban et al. 2025). Both from the conversation "
        "unless named single-turn.",
    )
