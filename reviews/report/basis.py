"""Every report figure built from final outcomes says whose outcomes they are: people's
(``human``) or a review policy's judge's (``judge``). On a campaign where both settled items
(``mixed``) the two are never pooled: each figure is computed apart on each basis
(``basis.by_basis``), and the report's own figures are people's. Pure: frames, the report
dict and the counts in."""

from __future__ import annotations

from dataclasses import replace

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


BASES = ("human", "judge")


def frames_of_basis(frames, basis: str):
    """The campaign's frames with only the items of one basis: "human" drops the items the
    judge settled, "judge" keeps only those (with their outputs, reviews and scores). The
    generations stay whole: the checks are no one's outcome."""
    items = frames.items
    keep = items["source"] == "judge" if basis == "judge" else items["source"] != "judge"
    items = items[keep]
    outputs = frames.outputs[frames.outputs["item"].isin(items["id"])]
    reviews = frames.reviews[frames.reviews["item"].isin(items["id"])]
    scores = frames.scores[frames.scores["review"].isin(reviews["id"])]
    return replace(frames, items=items, outputs=outputs, reviews=reviews, scores=scores)


def basis_apply(report: dict, counts: dict, apart: dict | None = None) -> None:
    """Add ``basis`` {"outcomes": "human"|"judge"|"mixed"|null, "items": {"human": n, "judge":
    n}, "figures": [section], "figures_basis": the basis of the report's own figures} to the
    report, a ``basis`` beside each leaderboard row and ``outcome_basis`` in ``rating`` and
    ``quality``.

    ``apart`` ({"human": report, "judge": report}, each built on its basis's frames) is given
    on a mixed basis: the report's figures built from final outcomes become people's, the
    judge's go beside them, and both are kept under ``basis.by_basis`` {basis: {section}},
    each stating its basis, with a warning that says so. Nothing is pooled."""
    basis = counts["basis"]
    own = "human" if apart else basis
    if apart:
        for section in OUTCOME_FIGURES:
            report[section] = apart["human"].get(section)
    report["basis"] = {
        "outcomes": basis,
        "items": {"human": counts["human"], "judge": counts["judge"]},
        "figures": list(OUTCOME_FIGURES),
        "figures_basis": own,
    }
    _state_basis(report, own)
    if not apart:
        return
    by_basis = {}
    for name in BASES:
        sections = {section: apart[name].get(section) for section in OUTCOME_FIGURES}
        _state_basis(sections, name)
        by_basis[name] = sections
    report["basis"]["by_basis"] = by_basis
    report.setdefault("warnings", []).append(
        f"Mixed basis: {counts['judge']} of {counts['human'] + counts['judge']} settled items "
        "were settled by the review policy's judge, not by people. The figures built from "
        f"final outcomes ({', '.join(OUTCOME_FIGURES)}) are computed apart, never pooled: the "
        "report's own are people's (human); the judge's are under basis.by_basis.judge. Read "
        "the judge's calibration (judges) before comparing them."
    )


def _state_basis(sections: dict, basis: str | None) -> None:
    """Say the basis beside each leaderboard row and in rating and quality (the sections
    keyed by figure: the others are keyed by contender or pair names)."""
    for row in sections.get("leaderboard") or []:
        row["basis"] = basis
    for key in ("rating", "quality"):
        if isinstance(sections.get(key), dict):
            sections[key]["outcome_basis"] = basis


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
