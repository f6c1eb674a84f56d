"""What the review side does when the generation side's work changes, step by step in one
place: items open (reviews/review/readiness.py), and under a campaign's review policy its judge
starts on the items that opened for it (reviews/judges/policy_start.py).

These are the functions tasks calls through its port (tasks/review_side.py:
`review_items_sync`, `review_items_open_for`), registered in reviews/apps.py
(docs/decisions/0009-cross-app-workflows.md). Like the URLconf and the jobs, this
module sits on top of the review side's packages: it may import any of them, and none imports
it.
"""

from __future__ import annotations

from reviews.judges.policy_start import policy_judging_start
from reviews.models import ItemOutput, ReviewItem
from reviews.policy.services import opening_state
from reviews.review.readiness import review_items_open_for, review_items_sync
from tasks.models import Campaign


def items_sync(
    *, campaign: Campaign, task_id: int | None = None, sample_index: int | None = None
) -> dict:
    """Create the campaign's missing items and open those whose outputs are all done
    (`review_items_sync`); items that opened to the policy's judge get it queued."""
    result = review_items_sync(campaign=campaign, task_id=task_id, sample_index=sample_index)
    if result["ready"] and opening_state(campaign.weights) == ReviewItem.State.JUDGING:
        policy_judging_start(campaign=campaign)
    return result


def items_open_for(*, generation_id: int) -> int:
    """Open the items showing this finished generation (`review_items_open_for`: one UPDATE,
    the hot path of every generation); under a review policy its judge is queued on them."""
    opened = review_items_open_for(generation_id=generation_id)
    if opened:
        campaign = Campaign.objects.filter(generations__pk=generation_id).first()
        if campaign and opening_state(campaign.weights) == ReviewItem.State.JUDGING:
            policy_judging_start(campaign=campaign, item_ids=_items_showing(generation_id))
    return opened


def _items_showing(generation_id: int) -> list[int]:
    return list(
        ItemOutput.objects.filter(generation_id=generation_id).values_list("item_id", flat=True)
    )
