"""Dispute rules and final outcomes (issue 5 fills this in).

Contract used by the review engine: `item_settle(item)` is called inside the submit
transaction when an item's k-th review lands; it decides agreed/disputed, stores
`item.dispute_reasons`, `item.final` and `item.state`, and opens an Arbitration when disputed.
"""

from .models import ReviewItem


def item_settle(item: ReviewItem) -> None:
    raise NotImplementedError("dispute rules are not built yet")
