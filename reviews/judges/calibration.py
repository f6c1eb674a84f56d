"""A judge's progress, cost and calibration on one campaign: a few bulk reads, then the pure
statistics of reviews/stats/calibration.py. What the report's `judges` key, the API and the
calibration page show."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pandas as pd
from django.db.models import Count, Q, Sum

from reviews.judges.models import Judgement
from reviews.models import SETTLED, Review, ReviewItem, Score
from reviews.rubric import Rubric
from reviews.stats import calibration
from tasks.models import Campaign, Judge

SEED = 20261206
N_BOOT = 1000


def judging_progress(*, campaign: Campaign, judge: Judge) -> dict:
    """Rows by status, items judged, tokens and cost so far (failed attempts included)."""
    rows = Judgement.objects.filter(campaign=campaign, judge=judge)
    counts = dict(rows.values_list("status").annotate(n=Count("pk")).order_by())
    totals = rows.aggregate(
        cost=Sum("cost"),
        input_tokens=Sum("input_tokens"),
        output_tokens=Sum("output_tokens"),
        items=Count("item", distinct=True, filter=Q(status=Judgement.Status.DONE)),
    )
    total = sum(counts.values())
    finished = counts.get("done", 0) + counts.get("failed", 0)
    return {
        "judgements": total,
        "done": counts.get("done", 0),
        "failed": counts.get("failed", 0),
        "pending": counts.get("pending", 0),
        "running": counts.get("running", 0),
        "finished": bool(total) and finished == total,
        "items": totals["items"] or 0,
        "input_tokens": totals["input_tokens"] or 0,
        "output_tokens": totals["output_tokens"] or 0,
        "cost": float(totals["cost"] or Decimal(0)),
    }


def judging_failures(*, campaign: Campaign, judge: Judge, limit: int = 50) -> list[dict]:
    """Failed judgements with every attempt's cause (admins: causes quote the endpoint)."""
    return list(
        Judgement.objects.filter(campaign=campaign, judge=judge, status=Judgement.Status.FAILED)
        .order_by("item__task__position", "item_id", "sample", "swapped")
        .values("item__task__external_id", "sample", "swapped", "attempts", "error", "failures")[
            :limit
        ]
    )


def _judgements(campaign: Campaign, judge: Judge) -> pd.DataFrame:
    return pd.DataFrame.from_records(
        list(
            Judgement.objects.filter(
                campaign=campaign, judge=judge, status=Judgement.Status.DONE
            ).values_list("item_id", "sample", "swapped", "scores", "preference")
        ),
        columns=["item", "sample", "swapped", "scores", "preference"],
    )


def _settled(campaign: Campaign) -> dict[int, dict]:
    return {
        pk: final
        # People's outcomes only: an item the judge settled (review policy) would compare the
        # judge with itself.
        for pk, final in ReviewItem.objects.filter(
            campaign=campaign, state__in=SETTLED, final__isnull=False, source="human"
        ).values_list("pk", "final")
        if isinstance(final, dict)
    }


def _number(value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return np.nan
    return float(value)


def _score_rows(judged: pd.DataFrame) -> pd.DataFrame:
    rows = [
        (item, int(output), str(dim), _number(value))
        for item, scores in zip(judged["item"], judged["scores"], strict=True)
        if isinstance(scores, dict)
        for output, dims in scores.items()
        for dim, value in (dims or {}).items()
    ]
    return pd.DataFrame(rows, columns=["item", "output", "dimension", "value"])


def _dimensions(campaign, judged, settled, n_boot: int, seed: int) -> dict:
    """{dimension: calibration} for every rubric dimension (the judge's scores: median)."""
    combined = calibration.judge_scores(_score_rows(judged))
    panel = pd.DataFrame(
        [
            (item, int(output), str(dim), _number(value))
            for item, final in settled.items()
            for output, dims in (final.get("scores") or {}).items()
            if str(output).isdigit() and isinstance(dims, dict)
            for dim, value in dims.items()
        ],
        columns=["item", "output", "dimension", "panel"],
    )
    raw = pd.DataFrame.from_records(
        list(
            Score.objects.filter(review__item_id__in=list(settled)).values_list(
                "review__item_id", "review__reviewer_id", "output_id", "dimension", "value"
            )
        ),
        columns=["item", "reviewer", "output", "dimension", "value"],
    ).astype({"value": float})
    out = {}
    for dim in Rubric.of(campaign).final:
        units = panel[panel["dimension"] == dim.key].merge(
            combined[combined["dimension"] == dim.key][["output", "value", "spread"]].rename(
                columns={"value": "judge"}
            ),
            on="output",
            how="left",
        )
        reviews = raw[raw["dimension"] == dim.key]
        out[dim.key] = calibration.dimension_calibration(
            units.rename(columns={"output": "unit"}),
            reviews.rename(columns={"output": "unit"}),
            {"min": dim.min, "max": dim.max, "level": dim.level},
            n_boot=n_boot,
            seed=seed,
        )
    return out


def _preference(judged, settled, n_boot: int, seed: int) -> dict:
    """The preference's calibration (the judge's majority choice per item)."""
    chosen = judged[judged["preference"].astype(bool)] if len(judged) else judged
    by_item = chosen.groupby("item")["preference"].agg(list).to_dict() if len(chosen) else {}
    items = pd.DataFrame(
        [
            (item, final.get("preference"), calibration.majority(by_item.get(item, [])))
            for item, final in settled.items()
        ],
        columns=["item", "panel", "judge"],
    )
    choices = pd.DataFrame.from_records(
        [
            (item, reviewer, str(output) if preference == "output" else (preference or None))
            for item, reviewer, preference, output in Review.objects.filter(
                item_id__in=list(settled)
            ).values_list("item_id", "reviewer_id", "preference", "preferred_output_id")
        ],
        columns=["item", "reviewer", "value"],
    )
    swaps = _swap_pairs(chosen)
    return calibration.preference_calibration(items, choices, swaps, n_boot=n_boot, seed=seed)


def _swap_pairs(chosen: pd.DataFrame) -> pd.DataFrame:
    """(item, sample) judged in both orders with a preference in each: first, second."""
    if not len(chosen):
        return pd.DataFrame(columns=["first", "second"])
    wide = chosen.pivot_table(
        index=["item", "sample"], columns="swapped", values="preference", aggfunc="first"
    )
    if False not in wide or True not in wide:
        return pd.DataFrame(columns=["first", "second"])
    wide = wide.dropna(subset=[False, True])
    return pd.DataFrame({"first": wide[False].to_numpy(), "second": wide[True].to_numpy()})


def judge_calibration(
    *, campaign: Campaign, judge: Judge, n_boot: int = N_BOOT, seed: int = SEED
) -> dict:
    """The report's `judges` entry for one judge: items, judgements, cost, and per dimension
    and for the preference the calibration against the panel (what the campaign's mode asks)."""
    progress = judging_progress(campaign=campaign, judge=judge)
    judged = _judgements(campaign, judge)
    settled = _settled(campaign)
    wants_scores, wants_preference = campaign.wants()
    return {
        "items": progress["items"],
        "judgements": progress["done"],
        "failed": progress["failed"],
        "cost": progress["cost"],
        "basis": "judge against the human panel (final outcomes of settled items)",
        "dimensions": _dimensions(campaign, judged, settled, n_boot, seed) if wants_scores else {},
        "preference": _preference(judged, settled, n_boot, seed) if wants_preference else None,
    }


def campaign_judges(*, campaign: Campaign, n_boot: int = N_BOOT, seed: int = SEED) -> dict:
    """{judge name: judge_calibration} for every judge that judged the campaign."""
    judges = Judge.objects.filter(judgements__campaign=campaign).distinct().order_by("name")
    return {
        j.name: judge_calibration(campaign=campaign, judge=j, n_boot=n_boot, seed=seed)
        for j in judges
    }


def calibration_points(*, campaign: Campaign, judge: Judge, dimension: str) -> list[dict]:
    """(panel, judge) per settled output for the calibration page's chart of one dimension."""
    settled = _settled(campaign)
    combined = calibration.judge_scores(_score_rows(_judgements(campaign, judge)))
    judged = combined[combined["dimension"] == dimension]
    judge_value = dict(zip(judged["output"], judged["value"], strict=True))
    points = []
    for final in settled.values():
        for output, dims in (final.get("scores") or {}).items():
            panel = _number((dims or {}).get(dimension))
            value = judge_value.get(int(output)) if str(output).isdigit() else None
            if np.isfinite(panel) and value is not None:
                points.append({"panel": panel, "judge": float(value)})
    return points


def calibration_chart(*, campaign: Campaign, judge: Judge, dimension: str, scale) -> dict:
    """A bubble chart of one dimension: the panel's value (y) against the judge's (x), a
    circle per pair of values sized by how many outputs have it, and the diagonal of perfect
    agreement. ``scale``: the rubric dimension (min, max)."""
    counts: dict[tuple[float, float], int] = {}
    for point in calibration_points(campaign=campaign, judge=judge, dimension=dimension):
        key = (point["judge"], point["panel"])
        counts[key] = counts.get(key, 0) + 1
    size, pad = 240, 30
    span = max(scale.max - scale.min, 1)

    def at(value: float) -> float:
        return round(pad + (value - scale.min) / span * (size - 2 * pad), 1)

    biggest = max(counts.values(), default=1)
    circles = [
        {
            "x": at(j),
            "y": round(size - at(p), 1),
            "r": round(3 + 9 * (n / biggest) ** 0.5, 1),
            "title": f"judge {j:g}, panel {p:g}: {n} output{'s' if n != 1 else ''}",
        }
        for (j, p), n in sorted(counts.items())
    ]
    ticks = [{"value": v, "at": at(v), "flip": round(size - at(v), 1)} for v in scale.points]
    return {
        "dimension": dimension,
        "size": size,
        "low": at(scale.min),
        "high": at(scale.max),
        "flip_low": round(size - at(scale.min), 1),
        "flip_high": round(size - at(scale.max), 1),
        "ticks": ticks,
        "circles": circles,
        "n": sum(counts.values()),
    }
