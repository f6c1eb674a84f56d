"""The port to the review side: every workflow of `tasks` that crosses into `reviews` is a call
here, made where the workflow starts (docs/decisions/0007, 0009-cross-app-workflows.md).

`tasks` never imports `reviews`; `reviews` registers the implementations here from its
AppConfig.ready(). Each function below gives the signature and the contract, and calling one
before the review side registered it (the `reviews` app missing from INSTALLED_APPS) raises
ReviewSideMissing rather than doing nothing. Generation making a campaign's rows calls
`review_items_sync`, a stored output `review_items_open_for`: a reader of that code sees the
review items open.

May import: tasks.models (for type hints only). Every package of tasks may import it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from tasks.models import Campaign, Judge

_registered: dict[str, Callable[..., Any]] = {}


class ReviewSideMissing(RuntimeError):
    """A review-side function was called before the reviews app registered it."""


def register(
    *,
    review_items_sync: Callable[..., dict[str, int]],
    review_items_open_for: Callable[..., int],
    review_item_progress: Callable[..., dict[str, int]],
    review_item_states: Callable[..., dict[str, int]],
    roster_changed: Callable[..., int],
    answers_preview_html: Callable[..., str],
    blinding_summary: Callable[..., dict],
    judge_verdicts: Callable[..., dict],
    judge_output_scores: Callable[..., list[dict]],
    judge_outputs: Callable[..., dict],
    judge_preferences: Callable[..., list[dict]],
) -> None:
    """Fill the port: called once, by reviews' AppConfig.ready()."""
    _registered.update(
        review_items_sync=review_items_sync,
        review_items_open_for=review_items_open_for,
        review_item_progress=review_item_progress,
        review_item_states=review_item_states,
        roster_changed=roster_changed,
        answers_preview_html=answers_preview_html,
        blinding_summary=blinding_summary,
        judge_verdicts=judge_verdicts,
        judge_output_scores=judge_output_scores,
        judge_outputs=judge_outputs,
        judge_preferences=judge_preferences,
    )


def _side(name: str) -> Callable[..., Any]:
    try:
        return _registered[name]
    except KeyError:
        raise ReviewSideMissing(
            f"tasks.review_side.{name} is filled in by the reviews app when Django starts "
            "(ReviewsConfig.ready()); is 'reviews' in INSTALLED_APPS and django.setup() run?"
        ) from None


def review_items_sync(*, campaign: Campaign) -> dict[str, int]:
    """Create the campaign's missing review items (waiting) and open those whose outputs are
    all done. Returns {"created": n, "ready": n}."""
    return _side("review_items_sync")(campaign=campaign)


def review_items_open_for(*, generation_id: int) -> int:
    """Open the items showing this generation whose outputs are now all done and none held.
    Returns how many opened."""
    return _side("review_items_open_for")(generation_id=generation_id)


def review_item_progress(*, campaign: Campaign) -> dict[str, int]:
    """The campaign's review items for its stage: {"total", "ready", "reviewed" (k reviews
    in), "disputed", "resolved"}."""
    return _side("review_item_progress")(campaign=campaign)


def review_item_states(*, campaign: Campaign) -> dict[str, int]:
    """The campaign page's item counts: {"total", "waiting", "blocked" (waiting on a generation
    that failed for good), "cancelled" (waiting on a cancelled one), "ready" (not waiting)}."""
    return _side("review_item_states")(campaign=campaign)


def roster_changed(
    *,
    campaign: Campaign,
    role: str,
    named: set[AbstractBaseUser],
    again: set[AbstractBaseUser],
    by: AbstractBaseUser | None,
) -> int:
    """The review side of a roster now naming exactly `named` for `role` (REVIEWER or
    ARBITER): reviewers in `again` (named again) are let back in; whoever else holds work in
    the campaign and is not named (admins and leads excepted) has it returned to the queues.
    Returns how many leases (reviewers) or disputes (arbiters) went back."""
    return _side("roster_changed")(campaign=campaign, role=role, named=named, again=again, by=by)


def answers_preview_html(*, campaign: Campaign, terms: tuple[str, ...], labels: list[str]) -> str:
    """The review page's answer grid, blank, for an unsaved `campaign` (its rubric and mode)
    and one output per label, its texts masked with `terms`, for a task of one reply."""
    return _side("answers_preview_html")(campaign=campaign, terms=terms, labels=labels)


def blinding_summary(*, campaign: Campaign) -> dict:
    """What the campaign page says of its blinding: {"reports" (every identity report),
    "open" (waiting for an admin), "dropped" (items dropped), "probe": the blinding probe's
    verdict in plain words, or None when the campaign asks no probe}."""
    return _side("blinding_summary")(campaign=campaign)


def judge_verdicts(*, judge: Judge, campaign: Campaign) -> dict:
    """The judge's calibration against `campaign`'s panel, reduced to what a monitor needs:
    {"rubric": [dimension keys], "dimensions": {key: {"verdict", "reason"}}, "preference":
    {"verdict", "reason"} or None when the campaign asks no preference}."""
    return _side("judge_verdicts")(judge=judge, campaign=campaign)


def judge_output_scores(*, judge: Judge, campaign: Campaign) -> list[dict]:
    """The judge's done judgements of `campaign`'s outputs, one row per output and dimension
    (the median of its samples and orders): [{"contender", "task", "sample", "dimension",
    "value"}], `task` the task's external id."""
    return _side("judge_output_scores")(judge=judge, campaign=campaign)


def judge_outputs(*, judge: Judge, campaign: Campaign, baseline: Campaign | None = None) -> dict:
    """Judge every done output of a monitor run's campaign (blind, one judgement per output,
    sample of the judge and order) and, with `baseline` (the baseline run's campaign), each
    output against the baseline's output of the same contender, task and sample (the judge's
    preference, both orders when it swaps positions); queued once, later calls only report.
    Returns {"finished", "judgements", "done", "failed", "cost", ...}. Raises the review
    side's JudgingError when the judge cannot run (its key variable unset)."""
    return _side("judge_outputs")(judge=judge, campaign=campaign, baseline=baseline)


def judge_preferences(*, judge: Judge, campaign: Campaign, baseline: Campaign) -> list[dict]:
    """The judge's preference of each of `campaign`'s outputs over `baseline`'s output of the
    same contender, task and sample: [{"contender", "task", "sample", "value"}], value 1 (the
    run's output is better), 0 (the baseline's) or 0.5 (tie, both bad, or a draw of the
    judge's samples and orders). Empty when the run was not judged against `baseline`."""
    return _side("judge_preferences")(judge=judge, campaign=campaign, baseline=baseline)
