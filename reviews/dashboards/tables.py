"""Dashboard tables (shown and downloaded as CSV) and interval charts: geometry and text only.

Templates draw what these return; every value comes from the campaign report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings

from evalsite.text import money

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
                [f"{c.label} ci95 low", f"{c.label} ci95 high"]
                if c.kind == "ci"
                else [f"{c.label} ({settings.EVALSITE_CURRENCY})" if c.kind == "money" else c.label]
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
        return money(value)  # with the site's currency
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
    """Horizontal interval plot: one row per label with a point and its 95% interval. `narrow`:
    the same chart for a phone, each label above its row, so it fits 390 px legibly."""

    width: int
    height: int
    left: int
    rows: list[dict]
    ticks: list[dict]
    marks: list[dict]
    title: str
    narrow: IntervalChart | None = None


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
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
    points: list[tuple[str, float | None, list | str | None]],
    *,
    title: str,
    interval: str = "95% interval",
    domain: tuple[float, float] | None = None,
    marks: list[tuple[float, str]] | None = None,
    fmt: str = "{:.0f}",
) -> IntervalChart | None:
    """points: (label, value, [low, high] or why there is none); None values are listed as
    'no data'. The caption is `title` with `interval` where every point has one drawn, and
    says which points have none, and why, otherwise."""
    reasons = {label: ci for label, _, ci in points if isinstance(ci, str)}
    points = [(label, v, None if isinstance(ci, str) else ci) for label, v, ci in points]
    known = [(v, ci) for _, v, ci in points if v is not None]
    if not known:
        return None
    lo, hi = _chart_domain(known, domain, marks)
    wide = _drawn(points, lo=lo, hi=hi, marks=marks, fmt=fmt, narrow=False)
    wide.narrow = _drawn(points, lo=lo, hi=hi, marks=marks, fmt=fmt, narrow=True)
    wide.title = wide.narrow.title = chart_caption(title, interval, wide.rows, reasons)
    return wide


def _drawn(points: list[tuple], *, lo: float, hi: float, marks, fmt: str, narrow: bool):
    """The geometry at one width: 720 units with labels on the left, or 360 with each label
    above its row (a phone draws it at its own width, so 12 px text stays about 11 px)."""
    if narrow:
        width, left, right, row_h, top, n_ticks = 360, 12, 18, 42, 16, 4
    else:
        width, left, right, row_h, top, n_ticks = 720, 190, 30, 30, 16, 5
    plot = width - left - right
    x = _x_scale(lo, hi, left, plot)
    rows = []
    for i, (label, value, ci) in enumerate(points):
        y = top + i * row_h + (row_h - 10 if narrow else row_h / 2)
        row = _chart_row((label, value, ci), y=y, x=x, fmt=fmt, span=(left, plot))
        row["lx"], row["ly"] = (left, y - 12) if narrow else (left - 10, y + 4)
        rows.append(row)
    height = top + len(points) * row_h + 28
    axis_y = top + len(points) * row_h + 4
    ticks = [
        {"x": x(t), "label": fmt.format(t), "y": axis_y + 16, "y0": top, "y1": axis_y}
        for t in nice_ticks(lo, hi, n_ticks)
    ]
    drawn_marks = [
        {"x": x(v), "label": label, "y0": top - 6, "y1": axis_y} for v, label in marks or []
    ]
    return IntervalChart(
        width=width, height=height, left=left, rows=rows, ticks=ticks, marks=drawn_marks, title=""
    )


def chart_caption(title: str, interval: str, rows: list[dict], reasons: dict[str, str]) -> str:
    """'Rating with 95% interval' only where every point has its interval drawn; else which
    points have none and why ('too few test cases' unless the report said)."""
    missing = [r["label"] for r in rows if r["x"] is not None and r["x_lo"] is None]
    if not missing:
        return f"{title} with {interval}"
    why = sorted({reasons.get(label) or "too few test cases" for label in missing})
    if len(missing) == sum(r["x"] is not None for r in rows):
        return f"{title} (no {interval}: {'; '.join(why)})"
    return f"{title} with {interval} (none for {', '.join(missing)}: {'; '.join(why)})"


def _chart_domain(known: list[tuple], domain, marks) -> tuple[float, float]:
    """The axis' ends: `domain`, or the values and intervals padded by 8%; marks always in."""
    # an undefeated (winless) contender's interval has one open side: None, not a number
    values = [v for v, _ in known] + [x for _, ci in known if ci for x in ci if x is not None]
    lo, hi = domain or (min(values), max(values))
    if domain is None:
        pad = (hi - lo) * 0.08 or max(abs(hi) * 0.05, 1.0)
        lo, hi = lo - pad, hi + pad
    for value, _ in marks or []:
        lo, hi = min(lo, value), max(hi, value)
    return lo, hi


def _x_scale(lo: float, hi: float, left: int, plot: int):
    """Value -> x position on the plot, clamped to [lo, hi] (the middle when lo == hi)."""

    def x(v: float) -> float:
        return (
            round(left + (min(max(v, lo), hi) - lo) / (hi - lo) * plot, 1)
            if hi > lo
            else left + plot / 2
        )

    return x


def _chart_row(point: tuple, *, y: float, x, fmt: str, span: tuple[int, int]) -> dict:
    """One point's row (`point`: label, value, interval): its value's x, its interval's ends
    (one open side for an undefeated or winless contender) and its text."""
    label, value, ci = point
    left, plot = span
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
    return row
