"""Final outcomes and the frames the report's sections share (pure: frames in, frames out).

The settled items' final scores and preferences, per-output quality, pairwise battles (with
``both_bad`` read from the rubric scores), position bias and the automatic checks' per-sample
shares. Nothing here touches the database.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from reviews.models import SETTLED
from reviews.stats import bias, quality
from tasks.models import Generation

if TYPE_CHECKING:
    from reviews.report.campaign import CampaignFrames


def output_table(f: CampaignFrames) -> pd.DataFrame:
    """ItemOutput id -> item, generation, contender (name), task, sample, category, tier, state."""
    gens = f.generations[["id", "task", "contender", "sample"]].rename(columns={"id": "generation"})
    names = dict(zip(f.contenders["id"], f.contenders["name"], strict=True))
    out = f.outputs.merge(gens, on="generation", how="inner")
    out["contender"] = out["contender"].map(names)
    tasks = f.tasks.rename(columns={"id": "task"})
    out = out.merge(tasks, on="task", how="left")
    out = out.merge(f.items[["id", "state"]].rename(columns={"id": "item"}), on="item", how="left")
    return out.dropna(subset=["contender"]).sort_values("id").reset_index(drop=True)


def _number(value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return np.nan
    return float(value)


def _final_tables(f: CampaignFrames, outputs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Final scores (output, dimension, value) and final preferences (item, preference) of the
    settled items (agreed or resolved by arbitration)."""
    settled = f.items[f.items["state"].isin(SETTLED) & f.items["final"].notna()]
    own = outputs.groupby("item")["id"].agg(frozenset).to_dict() if len(outputs) else {}
    rows, prefs = [], []
    # Defensive about the JSON: a key that is not one of the item's outputs, or a value that is
    # not a number, is skipped rather than crashing the report.
    for item, final in zip(settled["id"], settled["final"], strict=True):
        if not isinstance(final, dict):
            continue
        mine = own.get(item, frozenset())
        for output, dims in (final.get("scores") or {}).items():
            o = int(output) if str(output).isdigit() else None
            if o in mine and isinstance(dims, dict):
                rows.extend((o, str(dim), _number(v)) for dim, v in dims.items())
        prefs.append((item, final.get("preference")))
    return (
        pd.DataFrame(rows, columns=["output", "dimension", "value"]),
        pd.DataFrame(prefs, columns=["item", "preference"]),
    )


def final_outcomes(f: CampaignFrames, outputs: pd.DataFrame | None = None):
    """(final scores, final preferences, final scores joined with the output's contender,
    task, sample, category and tier) of the settled items."""
    outputs = output_table(f) if outputs is None else outputs
    final_scores, final_prefs = _final_tables(f, outputs)
    cols = ["id", "item", "generation", "contender", "task", "sample", "category", "tier"]
    cols += [c for c in ("case_type",) if c in outputs]
    final_full = final_scores.merge(
        outputs[cols].rename(columns={"id": "output"}), on="output", how="inner"
    ).sort_values(["output", "dimension"])
    return final_scores, final_prefs, final_full


def final_flags(f: CampaignFrames, outputs: pd.DataFrame, flag_names) -> pd.DataFrame:
    """One row per (output of a settled item, flag): contender, tier, case_type, flag, passed
    (1 where the final outcome raised the flag on that output, else 0)."""
    settled = f.items[f.items["state"].isin(SETTLED) & f.items["final"].notna()]
    raised = []
    for final in settled["final"]:
        flags = final.get("flags") if isinstance(final, dict) else None
        for output, names in (flags or {}).items():
            if str(output).isdigit() and isinstance(names, list):
                raised.extend((int(output), str(n)) for n in names)
    judged = outputs[outputs["item"].isin(settled["id"])]
    cols = ["id", "contender", "tier"] + (["case_type"] if "case_type" in judged else [])
    judged = judged[cols].rename(columns={"id": "output"})
    if "case_type" not in judged:
        judged = judged.assign(case_type=None)
    flags = pd.DataFrame({"flag": list(flag_names)})
    rows = judged.merge(flags, how="cross")
    hits = pd.DataFrame(raised, columns=["output", "flag"]).drop_duplicates().assign(passed=1)
    rows = rows.merge(hits, on=["output", "flag"], how="left")
    rows["passed"] = rows["passed"].fillna(0).astype(int)
    return rows[["output", "contender", "tier", "case_type", "flag", "passed"]]


def check_rows(generations: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """One row per (done generation, check kind it ran): contender, tier, case_type, kind,
    passed (0/1). ``generations`` carries contender names."""
    done = generations[
        (generations["status"] == Generation.Status.DONE)
        & generations["check_results"].map(lambda r: isinstance(r, dict) and bool(r))
    ]
    tier = dict(zip(tasks["id"], tasks["tier"], strict=True))
    case = dict(
        zip(tasks["id"], tasks.get("case_type", pd.Series([None] * len(tasks))), strict=True)
    )
    rows = [
        (c, tier.get(t), case.get(t), str(kind), int(bool((r or {}).get("passed"))))
        for c, t, results in zip(
            done["contender"], done["task"], done["check_results"], strict=True
        )
        for kind, r in sorted(results.items())
    ]
    return pd.DataFrame(rows, columns=["contender", "tier", "case_type", "kind", "passed"])


def output_quality_frame(f: CampaignFrames, meta: dict) -> pd.DataFrame:
    """One row per reviewed output of a settled item: item, output, generation, contender,
    task, sample, category, tier, quality (0..1). For capability heatmaps and the like."""
    return quality.output_quality(final_outcomes(f)[2], meta["rubric"])


def battles(
    outputs: pd.DataFrame, outq: pd.DataFrame, prefs: pd.DataFrame, order: dict
) -> tuple[pd.DataFrame, dict]:
    """Pairwise outcomes per settled item: the final preference where given (a preferred
    output beats every other output of its item; a tie is a tie for every pair), otherwise
    (and for pairs without the preferred output) the final overall scores. "Both bad" says
    both fell short, not that they were equal: where both outputs have final rubric scores
    the pair's outcome comes from them, otherwise it is a tie. A pair with neither (pairwise
    mode collects no scores) is no outcome. Rows carry the item's task (the bootstrap's
    cluster)."""
    cols = ["item", "output", "contender", "task"]
    settled = outputs.loc[outputs["item"].isin(prefs["item"]), ["item", "id", "contender", "task"]]
    left = (
        settled.rename(columns={"id": "output"})
        .merge(outq[["output", "quality"]], on="output", how="left")[[*cols, "quality"]]
        .astype({"quality": float})
    )
    pairs = left.merge(left, on=["item", "task"], suffixes=("_a", "_b"))
    pairs = pairs[pairs["contender_a"].map(order) < pairs["contender_b"].map(order)]
    qa, qb = pairs["quality_a"].round(9), pairs["quality_b"].round(9)
    by_score = np.where(qa > qb, 1.0, np.where(qa < qb, 0.0, 0.5))
    by_score = np.where(qa.isna() | qb.isna(), np.nan, by_score)
    pref = pairs["item"].map(dict(zip(prefs["item"], prefs["preference"], strict=True)))
    pref = pref.where(pref.notna(), "")
    pref = pref.astype(str)
    both_bad = (pref == "both_bad").to_numpy() & np.isnan(by_score)
    tie = (pref == "tie").to_numpy() | both_bad
    wins_a = pref == pairs["output_a"].astype(str)
    wins_b = pref == pairs["output_b"].astype(str)
    explicit = (tie | wins_a | wins_b).to_numpy()
    score = np.where(wins_a, 1.0, np.where(wins_b, 0.0, np.where(tie, 0.5, by_score)))
    decided = ~np.isnan(score)
    out = pd.DataFrame(
        {
            "item": pairs["item"].to_numpy()[decided],
            "task": pairs["task"].to_numpy()[decided],
            "a": pairs["contender_a"].to_numpy()[decided],
            "b": pairs["contender_b"].to_numpy()[decided],
            "score": score[decided],
            "output_a": pairs["output_a"].to_numpy()[decided],
            "output_b": pairs["output_b"].to_numpy()[decided],
        }
    )
    return out.sort_values(["item", "a", "b"]).reset_index(drop=True), {
        "preference": int(explicit.sum()),
        "scores": int((decided & ~explicit).sum()),
    }


def position_bias(f: CampaignFrames, rubric: list[dict]) -> dict:
    reviews = f.reviews
    explicit = reviews[(reviews["preference"] == "output") & reviews["preferred_output"].notna()]
    explicit = explicit[
        explicit["presented_order"].map(lambda o: isinstance(o, list) and len(o) >= 2)
    ]
    if len(explicit):
        first = explicit["presented_order"].map(lambda o: int(o[0]))
        won = (explicit["preferred_output"].astype(int) == first).to_numpy()
        return bias.position_bias(
            won, explicit["presented_order"].map(len).to_numpy(), source="preferences"
        )
    # Rubric-only campaigns: the output a reviewer scored strictly best, by its overall score.
    s = f.scores[f.scores["value"].notna()]
    if s.empty:
        return bias.position_bias([], [], source="scores")
    norm = s.assign(q=quality.normalize(s["value"], s["dimension"], rubric))
    overall = norm.groupby(["review", "output"], sort=True)["q"].mean().round(9).reset_index()
    best = overall.groupby("review")["q"].transform("max")
    top = overall[overall["q"] == best]
    counts = top.groupby("review")["output"].agg(["size", "first"])
    strict = counts[counts["size"] == 1]
    order = dict(zip(reviews["id"], reviews["presented_order"], strict=True))
    won, n_opts = [], []
    for review, output in zip(strict.index, strict["first"], strict=True):
        shown = order.get(review) or []
        if len(shown) >= 2:
            won.append(int(shown[0]) == int(output))
            n_opts.append(len(shown))
    return bias.position_bias(won, n_opts, source="scores")


def check_scores(generations: pd.DataFrame) -> pd.DataFrame:
    """Per done generation with automatic checks: the share of its checks that passed."""
    done = generations[generations["status"] == Generation.Status.DONE]

    def share(results):
        if not isinstance(results, dict) or not results:
            return np.nan
        return sum(bool((r or {}).get("passed")) for r in results.values()) / len(results)

    scored = done.assign(quality=done["check_results"].map(share))
    return scored.loc[scored["quality"].notna(), ["contender", "task", "sample", "quality"]]
