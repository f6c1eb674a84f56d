"""Routing items under a review policy: once the policy's judge has finished an item (every
sample and order done or failed for good), the item opens for people when a rule selects it,
or the judge settles it (``source: "judge"``, its combined answer as the final outcome).

An item waits in the state ``judging`` until then: the claim offers only open items, so no
person reviews an item before the policy has decided it needs them. Routing is one
conditional UPDATE of an item still ``judging``: workers finishing the last two judgements of
an item at once route it once.
"""

from __future__ import annotations

from django.db.models import Count, Q

from reviews.models import ItemOutput, ReviewItem
from reviews.policy import rules
from reviews.rubric import Rubric
from tasks.models import Campaign, Judge

S = ReviewItem.State


def opening_state(weights: dict | None) -> str:
    """The state a ready item takes: judging under a review policy, else open."""
    policy = (weights or {}).get("review_policy")
    return S.JUDGING if isinstance(policy, dict) and policy.get("judge") else S.OPEN


def policy_item_route(*, item_id: int) -> str | None:
    """Route one item if its judge is done with it: "human", "judge", or None (not yet, no
    policy, or routed already)."""
    item = (
        ReviewItem.objects.select_related("campaign", "task")
        .filter(pk=item_id, state=S.JUDGING)
        .first()
    )
    if item is None:
        return None
    policy = item.campaign.review_policy()
    judge = Judge.objects.filter(name=(policy or {}).get("judge")).first()
    if policy is None or judge is None:
        return None
    judgements = item.judgements.filter(judge=judge)
    counts = judgements.aggregate(
        done=Count("pk", filter=Q(status="done")),
        failed=Count("pk", filter=Q(status="failed")),
    )
    if counts["done"] + counts["failed"] < judge.samples * judge.orders:
        return None  # judgements still to come (or not made yet: judge the campaign)
    done = list(judgements.filter(status="done").values_list("scores", "preference"))
    return _route(item=item, policy=policy, judge=judge, done=done)


def _route(*, item: ReviewItem, policy: dict, judge: Judge, done: list) -> str | None:
    outputs = [
        str(pk)
        for pk in ItemOutput.objects.filter(item=item).order_by("pk").values_list("pk", flat=True)
    ]
    reviews = rules.judge_reviews(done)
    facts = {
        "checks_failed": ItemOutput.objects.filter(
            item=item, generation__checks_passed=False
        ).exists(),
        "tier": item.task.tier,
        "case_type": item.task.case_type,
    }
    reasons = rules.item_reasons(
        policy=policy,
        facts=facts,
        uncertain=rules.judge_uncertain(
            rubric=Rubric.of(item.campaign), outputs=outputs, reviews=reviews
        ),
        audited=_audited(item, policy),
    )
    if not reviews:
        reasons.insert(0, rules.JUDGE_FAILED)
    fenced = ReviewItem.objects.filter(pk=item.pk, state=S.JUDGING)
    if reasons:
        # The campaign is open for review already: it opened when its items went to judging.
        routed = fenced.update(state=S.OPEN, policy_reasons=reasons)
        return "human" if routed else None
    final = rules.judge_final(outputs=outputs, reviews=reviews, judge=judge.name)
    routed = fenced.update(
        state=S.AGREED, source="judge", final=final, policy_reasons=[], dispute_reasons=[]
    )
    return "judge" if routed else None


def _audited(item: ReviewItem, policy: dict) -> bool:
    keys = ReviewItem.objects.filter(campaign_id=item.campaign_id).values_list(
        "task_id", "sample_index", "pair_key"
    )
    drawn = rules.audit_keys(campaign_id=item.campaign_id, share=policy["audit_share"], keys=keys)
    return (item.task_id, item.sample_index, item.pair_key) in drawn


def policy_campaign_route(*, campaign: Campaign) -> dict[str, int]:
    """Route every item of the campaign its judge is done with (idempotent): {"human": n,
    "judge": n}. Judging routes each item as its last judgement lands; this catches up."""
    routed = {"human": 0, "judge": 0}
    ids = ReviewItem.objects.filter(campaign=campaign, state=S.JUDGING).values_list("pk", flat=True)
    for item_id in list(ids):
        where = policy_item_route(item_id=item_id)
        if where:
            routed[where] += 1
    return routed
