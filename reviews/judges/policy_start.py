"""A review policy starts its own judge: when a campaign's items become ready under a policy
(they wait in the state ``judging``), the policy's judge is queued on them at once, with no
separate command. `reviews/workflows.py` calls it when items open (inside the caller's
transaction: the messages go after the commit); the campaign page and the report read the
policy through `policy_state`.

A judge that cannot run (deleted, or its key variable unset) queues nothing: the items keep
waiting, and the campaign page says why (``policy_judging_problem``); *Judge* on that page,
or ``judge_campaign``, starts it once the problem is fixed.
"""

from __future__ import annotations

import logging

from reviews.judges.services import judging_enqueue_items, judging_problems
from reviews.models import ReviewItem
from reviews.policy.selectors import policy_summary
from tasks.models import Campaign, Judge

log = logging.getLogger(__name__)


def policy_judging_problem(*, campaign: Campaign, policy: dict) -> str:
    """Why the policy's judge cannot judge the campaign's items now ('' when it can)."""
    judge = Judge.objects.filter(name=policy["judge"]).first()
    if judge is None:
        return f"judge {policy['judge']} no longer exists"
    problems = judging_problems(campaign=campaign, judge=judge)
    # "no item ready" is the normal state of a campaign still generating: not a problem.
    return "; ".join(p for p in problems if "has no review item ready" not in p)


def policy_judging_start(*, campaign: Campaign, item_ids: list[int] | None = None) -> int:
    """Queue the policy's judge on the campaign's items waiting for it (of `item_ids` only,
    when given) that it has not been queued on yet. Returns judgements queued (0 without a
    policy, or when the judge cannot run: logged, and shown on the campaign page)."""
    policy = campaign.review_policy()
    if policy is None:
        return 0
    problem = policy_judging_problem(campaign=campaign, policy=policy)
    if problem:
        log.warning("campaign %s: review policy judging not started: %s", campaign.slug, problem)
        return 0
    waiting = ReviewItem.objects.filter(campaign=campaign, state=ReviewItem.State.JUDGING)
    if item_ids is not None:
        waiting = waiting.filter(pk__in=item_ids)
    ids = list(waiting.values_list("pk", flat=True))
    if not ids:
        return 0
    judge = Judge.objects.get(name=policy["judge"])
    return judging_enqueue_items(campaign=campaign, judge=judge, item_ids=ids)


def policy_state(*, campaign: Campaign) -> dict | None:
    """The policy and where its items went (`policy_summary`), with "judge_problem": why its
    judging cannot start now ('' when it can); None without a policy."""
    summary = policy_summary(campaign=campaign)
    if summary is None:
        return None
    return {**summary, "judge_problem": policy_judging_problem(campaign=campaign, policy=summary)}
