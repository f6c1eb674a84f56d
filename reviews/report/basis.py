"""Every report figure built from final outcomes says whose outcomes they are: people's
(``human``), a review policy's judge's (``judge``), or both (``mixed``, with a warning: the
two are never pooled without saying so). Pure: the report dict and the counts in."""

from __future__ import annotations

import pandas as pd

from reviews.report.outcomes import SETTLED

# The report's sections whose figures are built from the items' final outcomes (the
# per-output quality, the battles, the human pass rates and everything ranked on them).
OUTCOME_FIGURES = (
    "leaderboard",
    "rating",
    "quality",
    "stability",
    "passes",
    "head_to_head",
    "separation",
    "slices",
    "length",
    "gates",
)


def basis_apply(report: dict, counts: dict) -> None:
    """Add ``basis`` {"outcomes": "human"|"judge"|"mixed"|null, "items": {"human": n, "judge":
    n}, "figures": [section]} to the report, a ``basis`` beside each leaderboard row,
    ``outcome_basis`` in ``rating`` and ``quality``, and a warning when the bases are mixed."""
    basis = counts["basis"]
    report["basis"] = {
        "outcomes": basis,
        "items": {"human": counts["human"], "judge": counts["judge"]},
        "figures": list(OUTCOME_FIGURES),
    }
    for row in report.get("leaderboard") or []:
        row["basis"] = basis
    # Only in sections keyed by figure: the others are keyed by contender (or pair) names.
    for key in ("rating", "quality"):
        if isinstance(report.get(key), dict):
            report[key]["outcome_basis"] = basis
    if basis == "mixed":
        report.setdefault("warnings", []).append(
            f"Mixed basis: {counts['judge']} of {counts['human'] + counts['judge']} settled "
            "items were settled by the review policy's judge, not by people; every figure "
            f"built from final outcomes ({', '.join(OUTCOME_FIGURES)}) pools both. Read the "
            "judge's calibration (judges) before trusting them as people's figures."
        )


def outcome_basis(items: pd.DataFrame) -> dict:
    """Who settled the final outcomes the figures rest on, from the report's items frame:
    {"basis": "human" | "judge" | "mixed" (None before any item is settled), "human": items,
    "judge": items}."""
    if len(items):
        settled = items[items["state"].isin(SETTLED) & items["final"].notna()]
        counts = settled["source"].value_counts().to_dict()
    else:
        counts = {}
    human, judge = int(counts.get("human", 0)), int(counts.get("judge", 0))
    basis = None
    if human and judge:
        basis = "mixed"
    elif human or judge:
        basis = "human" if human else "judge"
    return {"basis": basis, "human": human, "judge": judge}
