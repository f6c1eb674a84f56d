"""Dispute rules and final outcomes (docs/arbitration.md, "The final outcome").

Two layers:

* `settle(...)` is pure: plain dicts in, an `Outcome` out. No ORM, so every rule is testable on
  hand-built data.
* `item_settle(item)` loads an item's reviews, applies `settle` and stores the result. The review
  engine calls it inside the submit transaction when the k-th review lands; the review-record
  import settles all its items at once with `items_settle(items)`, the same in bulk.

Rules (k reviewers, k >= 1; with k >= 3 every rule compares all reviewers at once, which is the
pairwise maximum):

* Scores, per output and rubric dimension: disputed when max - min > the dimension's `max_gap`
  (default 1). A gap equal to `max_gap` is agreed. N/A (or no score) from some reviewers and a
  score from others is a dispute; N/A from everyone is an agreed N/A. Agreed -> the mean.
* Preference, compared un-permuted (which output, never which letter): the choices are
  "<ItemOutput id>", "tie" and "both_bad", compared by exact equality. So tie vs tie and
  both_bad vs both_bad agree; tie vs an output, both_bad vs an output, tie vs both_bad and two
  different outputs are disputes. A reviewer who gave no preference abstains; if nobody gave
  one the final preference is None.
* Flags, per output and flag: raised by some reviewers but not all is always recorded as a
  reason; it disputes the item only when `campaign.flags_dispute` is on. Final flags = flags
  every reviewer raised (plus the arbiter's decision on disputed ones).

Every reason is {"part": "<dim>"|"preference"|"flag", "output": "<ItemOutput id>"|None,
"detail": str, "disputes": bool} (plus "flag" for flag reasons). Raw reviews are never touched:
agreement statistics read them; the adjudicated result lives in `ReviewItem.final`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.db import transaction

from evalsite.bulk import rows_update
from reviews.disputes import sql
from reviews.models import Arbitration, ItemOutput, Preference, Review, ReviewItem
from reviews.rubric import Rubric, TurnScoring
from tasks.models import Task

NO_CHOICE = ""


@dataclass(frozen=True)
class ReviewData:
    """One review, un-permuted: keys are ItemOutput ids as strings."""

    scores: dict[str, dict[str, float | None]] = field(default_factory=dict)
    preference: str = NO_CHOICE  # "<ItemOutput id>" | "tie" | "both_bad" | "" (abstained)
    flags: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Outcome:
    disputed: bool
    reasons: list[dict]
    final: dict

    @property
    def state(self) -> str:
        return ReviewItem.State.DISPUTED if self.disputed else ReviewItem.State.AGREED


def unknown_field_errors(names, accepted: tuple[str, ...]) -> dict[str, str]:
    """{field: error} for the fields of a submit or resolve request that it does not have."""
    return {
        str(n): f"unknown field; accepted: {', '.join(accepted)}"
        for n in names
        if n not in accepted
    }


def _fmt(value: float | None) -> str:
    if value is None:
        return "N/A"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def settle(
    *,
    rubric: Rubric | list[dict],
    outputs: list[str],
    reviews: list[ReviewData],
    flags_dispute: bool = False,
) -> Outcome:
    """Decide agreed/disputed for one item and build its final outcome (disputed parts None)."""
    if not reviews:
        raise ValueError("an item cannot be settled without reviews")
    reasons: list[dict] = []
    scores = _settle_scores(
        rubric=Rubric.coerce(rubric), outputs=outputs, reviews=reviews, reasons=reasons
    )
    preference = _settle_preference(reviews=reviews, reasons=reasons)
    flags = _settle_flags(
        outputs=outputs, reviews=reviews, flags_dispute=flags_dispute, reasons=reasons
    )
    disputed = any(r["disputes"] for r in reasons)
    final = {
        "scores": scores,
        "preference": preference,
        "flags": flags,
        "arbitrated": [],
        "corrections": [],
    }
    return Outcome(disputed=disputed, reasons=reasons, final=final)


def _settle_scores(
    *, rubric: Rubric, outputs: list[str], reviews: list[ReviewData], reasons: list[dict]
) -> dict[str, dict[str, float | None]]:
    """{output: {dimension: mean or None}}; appends a reason for each disputed score."""
    scores: dict[str, dict[str, float | None]] = {}
    for output in outputs:
        scores[output] = {}
        for dim in rubric:
            values = [r.scores.get(output, {}).get(dim.key) for r in reviews]
            scores[output][dim.key] = _settle_score(
                key=dim.key, allowed=dim.max_gap, output=output, values=values, reasons=reasons
            )
    return scores


def _settle_score(
    *, key: str, allowed: float, output: str, values: list, reasons: list[dict]
) -> float | None:
    """One output's agreed score on one dimension (None: N/A or disputed, with its reason)."""
    rated = [float(v) for v in values if v is not None]
    if rated and len(rated) < len(values):
        reasons.append(
            {
                "part": key,
                "output": output,
                "disputes": True,
                "detail": f"N/A against a score ({', '.join(_fmt(v) for v in values)})",
            }
        )
    elif rated:
        gap = max(rated) - min(rated)
        if gap > allowed:
            reasons.append(
                {
                    "part": key,
                    "output": output,
                    "disputes": True,
                    "detail": f"scores {', '.join(_fmt(v) for v in values)} differ by "
                    f"{_fmt(gap)} (allowed {_fmt(allowed)})",
                }
            )
        else:
            return sum(rated) / len(rated)
    return None


def _settle_preference(*, reviews: list[ReviewData], reasons: list[dict]) -> str | None:
    """The agreed preference (None: nobody gave one, or they differ, with its reason)."""
    choices = [r.preference for r in reviews if r.preference != NO_CHOICE]
    if not choices:
        return None
    if len(set(choices)) == 1:
        return choices[0]
    reasons.append(
        {
            "part": "preference",
            "output": None,
            "disputes": True,
            "detail": f"preferences differ ({len(set(choices))} different choices "
            f"among {len(choices)} reviewers)",
        }
    )
    return None


def _settle_flags(
    *, outputs: list[str], reviews: list[ReviewData], flags_dispute: bool, reasons: list[dict]
) -> dict[str, list[str]]:
    """{output: flags every reviewer raised}; appends a reason for each flag only some raised."""
    flags: dict[str, list[str]] = {}
    for output in outputs:
        raised = [set(r.flags.get(output, [])) for r in reviews]
        everyone = set.intersection(*raised)
        anyone = set.union(*raised)
        flags[output] = sorted(everyone)
        for flag in sorted(anyone - everyone):
            count = sum(flag in s for s in raised)
            reasons.append(
                {
                    "part": "flag",
                    "output": output,
                    "flag": flag,
                    "disputes": flags_dispute,
                    "detail": f"{flag} raised by {count} of {len(reviews)} reviewers",
                }
            )
    return flags


def disputed_cells(reasons: list[dict]) -> set[tuple[str, str | None]]:
    """(part, output) pairs an arbiter must decide; flags as ("flag:<name>", output)."""
    cells = set()
    for r in reasons:
        if not r.get("disputes"):
            continue
        part = f"flag:{r['flag']}" if r["part"] == "flag" else r["part"]
        cells.add((part, r.get("output")))
    return cells


def _item_reviews(
    item_pk: int, output_ids: list[int] | None = None
) -> tuple[list[str], list[ReviewData]]:
    """An item's output ids (read unless given) and its reviews as plain data."""
    if output_ids is None:
        output_ids = list(ItemOutput.objects.filter(item_id=item_pk).values_list("pk", flat=True))
    outputs = [str(pk) for pk in sorted(output_ids)]
    return outputs, _reviews_data(sql.item_reviews(item_pk))  # one row per score, submit order


def _reviews_data(rows: Iterable[tuple]) -> list[ReviewData]:
    """Rows of (review id, preference, preferred output id, flags, output id, dimension,
    value), one per score in submit order, as one ReviewData per review."""
    reviews: dict[int, ReviewData] = {}
    for pk, preference, preferred, flags, output_id, dimension, value in rows:
        data = reviews.get(pk)
        if data is None:
            if preference == Preference.OUTPUT and preferred:
                choice = str(preferred)
            elif preference in (Preference.TIE, Preference.BOTH_BAD):
                choice = preference
            else:
                choice = NO_CHOICE
            flags = {str(k): list(v) for k, v in (flags or {}).items()}
            data = reviews[pk] = ReviewData(preference=choice, flags=flags)
        if output_id is not None:
            data.scores.setdefault(str(output_id), {})[dimension] = value
    return list(reviews.values())


def item_settle(item: ReviewItem, output_ids: list[int] | None = None) -> Outcome | None:
    """Store agreed/disputed, reasons and the final outcome; open an Arbitration when disputed.

    Idempotent: settling again rewrites the same values. An item already resolved by an
    arbiter is left alone (its final values are the arbiter's), and returns None.
    `output_ids`: the item's ItemOutput ids when the caller has them (a submit: the
    assignment's presented order holds every output of the item), else they are read.
    """
    # Inside a submit this joins its transaction (no savepoint round trips); alone, it is one.
    with transaction.atomic(savepoint=False):
        if item.state == ReviewItem.State.RESOLVED:
            return None
        campaign = item.campaign
        outputs, reviews = _item_reviews(item.pk, output_ids)
        outcome = settle(
            rubric=Rubric.for_item(item),  # per-turn scores are dimensions too
            outputs=outputs,
            reviews=reviews,
            flags_dispute=campaign.flags_dispute,
        )
        item.state = outcome.state
        item.dispute_reasons = outcome.reasons
        item.final = outcome.final
        ReviewItem.objects.filter(pk=item.pk).update(
            state=item.state, dispute_reasons=item.dispute_reasons, final=item.final
        )
        unresolved = Arbitration.objects.filter(item=item).exclude(state=Arbitration.State.RESOLVED)
        if outcome.disputed:
            # Give an unresolved arbitration the new reasons, or open one (unless an arbiter
            # resolved it already). Settles of one item take turns on its row, locked above.
            if not unresolved.update(reasons=outcome.reasons):
                Arbitration.objects.bulk_create(
                    [Arbitration(item=item, reasons=outcome.reasons)], ignore_conflicts=True
                )
        else:
            # Re-settled as agreed (e.g. a re-import): an unresolved arbitration has no work left.
            unresolved.delete()
        return outcome


def items_settle(items: Sequence[ReviewItem]) -> int:
    """`item_settle` for many items of one campaign at once (the review-record import): the
    same outcomes, with the reviews read and the results written in a few bulk statements
    instead of several per item. The caller holds the transaction and has made sure no item
    is under live review. Returns the number of items settled."""
    pending = [item for item in items if item.state != ReviewItem.State.RESOLVED]
    if not pending:
        return 0
    campaign = pending[0].campaign
    ids = [item.pk for item in pending]
    outputs, rows = _items_outputs_and_rows(ids)
    rubrics = _rubrics_by_item(pending)
    for item in pending:
        outcome = settle(
            rubric=rubrics[item.pk],
            outputs=outputs[item.pk],
            reviews=_reviews_data(rows[item.pk]),
            flags_dispute=campaign.flags_dispute,
        )
        item.state, item.dispute_reasons, item.final = outcome.state, outcome.reasons, outcome.final
    rows_update(
        ReviewItem,
        [
            (i.pk, {"state": i.state, "dispute_reasons": i.dispute_reasons, "final": i.final})
            for i in pending
        ],
    )
    _arbitrations_sync(pending)
    return len(pending)


def _items_outputs_and_rows(ids: list[int]) -> tuple[dict, dict]:
    """Per item: its output ids (sorted, as strings) and its review rows in submit order (the
    rows of `sql.item_reviews`, for many items in one ORM query)."""
    outputs: dict[int, list[str]] = defaultdict(list)
    for item_id, pk in (
        ItemOutput.objects.filter(item_id__in=ids).order_by("pk").values_list("item_id", "pk")
    ):
        outputs[item_id].append(str(pk))
    rows: dict[int, list[tuple]] = defaultdict(list)
    for item_id, *row in (
        Review.objects.filter(item_id__in=ids)
        .order_by("item_id", "submitted_at", "pk", "scores__pk")
        .values_list(
            "item_id",
            "pk",
            "preference",
            "preferred_output_id",
            "flags",
            "scores__output_id",
            "scores__dimension",
            "scores__value",
        )
    ):
        rows[item_id].append(tuple(row))
    return outputs, rows


def _rubrics_by_item(items: list[ReviewItem]) -> dict[int, Rubric]:
    """Each item's rubric; the tasks' turns read in one query when the campaign scores turns."""
    campaign = items[0].campaign
    if TurnScoring.of(campaign) is None:
        rubric = Rubric.of(campaign)
        return {item.pk: rubric for item in items}
    turns = dict(
        Task.objects.filter(pk__in={item.task_id for item in items}).values_list("pk", "turns")
    )
    return {item.pk: Rubric.of(campaign, turns=len(turns[item.task_id] or [])) for item in items}


def _arbitrations_sync(items: list[ReviewItem]) -> None:
    """As `item_settle` does per item: a disputed item's unresolved arbitration gets the new
    reasons, or one is opened (unless an arbiter resolved it already); an agreed item's
    unresolved arbitration is deleted."""
    unresolved = {
        a.item_id: a
        for a in Arbitration.objects.filter(item__in=items).exclude(
            state=Arbitration.State.RESOLVED
        )
    }
    disputed = [item for item in items if item.state == ReviewItem.State.DISPUTED]
    rows_update(
        Arbitration,
        [
            (unresolved[i.pk].pk, {"reasons": i.dispute_reasons})
            for i in disputed
            if i.pk in unresolved
        ],
    )
    Arbitration.objects.bulk_create(
        [
            Arbitration(item=i, reasons=i.dispute_reasons)
            for i in disputed
            if i.pk not in unresolved
        ],
        batch_size=500,
        ignore_conflicts=True,
    )
    agreed = {item.pk for item in items} - {item.pk for item in disputed}
    Arbitration.objects.filter(pk__in=[a.pk for i, a in unresolved.items() if i in agreed]).delete()
