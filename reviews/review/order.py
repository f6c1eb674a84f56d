"""Where a reviewer starts in a campaign's items, and the order an item's outputs are shown in.

Pure functions: both decide what a reviewer sees, so neither may depend on ids or creation
order (blinding).
"""

from __future__ import annotations

import hashlib

from django.contrib.auth.models import User

from tasks.models import Campaign

SHUFFLE_SPACE = 2**31  # shuffle_key is drawn from [0, 2**31)


def shuffle_offset(*, campaign: Campaign, reviewer: User) -> int:
    """Where in the campaign's random item order this reviewer starts (stable per reviewer).

    Items carry a random `shuffle_key`; a reviewer is offered fresh items in key order starting
    at their own offset and wrapping around. So the order is random, not by id (creation
    order), differs between reviewers, and concurrent reviewers start in different places
    instead of all fighting over the same first rows. An index on (campaign, state,
    live_count, shuffle_key, id) makes each step an index range scan that stops at the first
    free item, not a sort.
    """
    digest = hashlib.sha256(f"{campaign.pk}:{reviewer.pk}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % SHUFFLE_SPACE


def presented_order(*, rotation: int, output_ids: list[int], slot: int) -> list[int]:
    """The permutation shown in `slot` of an item (ItemOutput ids, position A first).

    `output_ids` come in contender order; `rotation` is the item's own, drawn when it was made
    (`readiness.item_rotations`). Slot s shows rotation (rotation + s) mod n of that order, the
    cycle reversed when (rotation // n) is odd. So within one item the k reviewers see k different rotations (the
    second never repeats the first's order), and since the campaign's items hold each of the
    2n classes about equally often, each contender lands in each position equally often up to
    a block of items (tests/reviews/test_assignment_engine.py bounds it).
    """
    n = len(output_ids)
    if n < 2:
        return list(output_ids)
    block, base = divmod(rotation, n)
    cycle = list(reversed(output_ids)) if block % 2 else list(output_ids)
    r = (base + slot) % n
    return cycle[r:] + cycle[:r]
