"""Review items and their readiness.

An item is one task + sample shown with >= 2 outputs. It is created as soon as its generation
rows exist ("waiting") and becomes ready ("open") only once every one of its outputs is done:
offering an item with a missing side would tell the reviewer which model failed or was slow.
An output held for an admin's approval (it names a model: tasks/blinding/hold.py) counts as
not done yet. The single-turn rows of a conversation task are never in an item.

The generation side never imports this module: it calls tasks/review_side.py's
`review_items_sync` and `review_items_open_for` where its rows change, and reviews/apps.py
registers the functions below there (docs/decisions/0009-cross-app-workflows.md).

Pairwise mode with more than two contenders shows one pair per item. Pairs are dealt round
robin from a shuffled list of all pairs over the tasks grouped by category and tier (see
`pair_deal`), so every pair - and so every contender - appears equally often (+-1) within each
category and tier, not only across the campaign.
"""

from __future__ import annotations

import hashlib
import random
import secrets
from collections import Counter
from itertools import combinations

from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q

from reviews.models import ItemOutput, ReviewItem
from reviews.policy.services import opening_state
from tasks.models import Campaign, Generation, Mode


def item_rotations(*, campaign_id: int, sizes: list[int]) -> list[int]:
    """Rotations for new items of a campaign, one per entry of `sizes` (the item's number of
    outputs), for `services.presented_order`.

    An n-output item has 2n classes (n rotations, each way round). Each new item takes one of
    the classes the campaign's items hold least often, at random among them (randomized
    permuted blocks): the positions stay balanced over the campaign, and nothing a reviewer
    could learn about an item (when it was made, its place in the test set) tells its order.
    """
    held = Counter(
        dict(
            ReviewItem.objects.filter(campaign_id=campaign_id)
            .values_list("rotation")
            .annotate(n=Count("id"))
        )
    )
    rotations = []
    for n in sizes:
        classes = range(2 * max(n, 1))
        least = min(held[c] for c in classes)
        pick = secrets.choice([c for c in classes if held[c] == least])
        held[pick] += 1
        rotations.append(pick)
    return rotations


def pair_key(campaign_id: int, pair: tuple[int, ...]) -> str:
    # Opaque: never shown to reviewers, but no reason to spell contender ids out either.
    return hashlib.sha256(f"{campaign_id}:{':'.join(map(str, sorted(pair)))}".encode()).hexdigest()[
        :16
    ]


def item_plan(campaign: Campaign, *, task_id: int | None = None, sample_index: int | None = None):
    """[(task_id, sample_index, pair_key, contender_ids)] for the reviewed samples, in test-set
    order. A pure function of the campaign, its contenders and its (frozen) tasks, so running
    it again never moves an item to another pair."""
    if campaign.kind == Campaign.Kind.MONITOR_RUN:
        return []  # a monitor run is graded by its checks: nothing for reviewers
    contenders = sorted(campaign.contenders.values_list("pk", flat=True))
    if len(contenders) < 2:
        return []
    samples = range(campaign.reviewed_samples)
    if sample_index is not None:
        samples = [s for s in samples if s == sample_index]
    tasks = campaign.testset.tasks.order_by("position")
    if task_id is not None:
        tasks = tasks.filter(pk=task_id)
    if not (campaign.mode == Mode.PAIRWISE and len(contenders) > 2):
        return [(t, s, "", contenders) for t in tasks.values_list("pk", flat=True) for s in samples]
    pairs = pair_deal(campaign=campaign, contenders=contenders)
    return [
        (t, s, pair_key(campaign.pk, pairs[t, s]), list(pairs[t, s]))
        for t in tasks.values_list("pk", flat=True)
        for s in samples
    ]


def pair_deal(*, campaign: Campaign, contenders: list[int]) -> dict[tuple[int, int], tuple]:
    """{(task_id, sample_index): pair} for every reviewed sample of the campaign.

    Dealing pairs in file order confounded pairs with categories (a file cycling through 3
    categories with 3 pairs gave each pair one category). So the tasks are grouped by
    (category, tier), shuffled within each group (seeded by the campaign and the group, never
    by file order), and the pairs are dealt round robin over the groups one after another: each
    group - and each category, whose groups are adjacent - sees every pair equally often (+-1),
    and so does the whole campaign.
    """
    pairs = list(combinations(contenders, 2))
    random.Random(f"pairs:{campaign.pk}").shuffle(pairs)
    strata: dict[tuple[str, str], list[int]] = {}
    for pk, category, tier in campaign.testset.tasks.order_by("pk").values_list(
        "pk", "category", "tier"
    ):
        strata.setdefault((category, tier), []).append(pk)
    dealt, slot = {}, 0
    for (category, tier), ids in sorted(strata.items()):
        random.Random(f"tasks:{campaign.pk}:{category}:{tier}").shuffle(ids)
        for t in ids:
            for s in range(campaign.reviewed_samples):
                dealt[t, s] = pairs[slot % len(pairs)]
                slot += 1
    return dealt


def review_items_sync(
    *, campaign: Campaign, task_id: int | None = None, sample_index: int | None = None
) -> dict:
    """Create missing items (waiting) and open those whose outputs are all done.

    Idempotent and safe to run concurrently (unique constraints + conditional updates); call
    it after the generation's own transaction committed so it sees the row as done.
    Optionally scoped to one task / sample (what a finishing generation touches).
    """
    plan = item_plan(campaign, task_id=task_id, sample_index=sample_index)
    if not plan:
        return {"created": 0, "ready": 0}
    gens, items = _sync_scope(campaign=campaign, task_id=task_id, sample_index=sample_index)
    gen_ids = {
        (t, c, s): pk
        for pk, t, c, s in gens.values_list("pk", "task_id", "contender_id", "sample_index")
    }
    wanted = _items_wanted(plan=plan, items=items, gen_ids=gen_ids)
    created = 0
    if wanted:
        _items_create(campaign=campaign, items=items, wanted=wanted, gen_ids=gen_ids)
        created = len(wanted)
    state = opening_state(campaign.weights)
    opened = _items_open(items=items, state=state)
    if opened:
        campaign_open_for_review(Campaign.objects.filter(pk=campaign.pk))
    return {"created": created, "ready": opened}


def campaign_open_for_review(campaigns) -> None:
    """A draft whose first items just opened is open for review: reviewers may take what is
    ready (part of its outputs imported, say) whatever the rest is still doing."""
    campaigns.filter(status=Campaign.Status.DRAFT).update(status=Campaign.Status.REVIEWING)


def _sync_scope(*, campaign: Campaign, task_id: int | None, sample_index: int | None):
    """(generations, items) of the campaign that a sync looks at, scoped to the task / sample."""
    # A single-turn regime row (docs/conversations.md) answers another statement of the task:
    # it is scored by its checks and never shown beside the conversation's outputs.
    gens = Generation.objects.filter(
        campaign=campaign, sample_index__lt=campaign.reviewed_samples, single_turn=False
    )
    items = ReviewItem.objects.filter(campaign=campaign)
    if task_id is not None:
        gens, items = gens.filter(task_id=task_id), items.filter(task_id=task_id)
    if sample_index is not None:
        gens, items = (
            gens.filter(sample_index=sample_index),
            items.filter(sample_index=sample_index),
        )
    return gens, items


def _items_wanted(*, plan: list, items, gen_ids: dict) -> list:
    """The planned items not made yet whose every output has its generation row."""
    rows = list(items.values_list("task_id", "sample_index", "pair_key", "imported"))
    existing = {(t, s, key) for t, s, key, _ in rows}
    # A sample whose pair item exists keeps that pair, even one dealt by the older file-order
    # rule: never a second, differently paired twin. (Imported items are the records' choice.)
    paired = {(t, s) for t, s, key, imported in rows if key and not imported}
    return [
        (t, s, key, cs)
        for t, s, key, cs in plan
        if (t, s, key) not in existing
        and not (key and (t, s) in paired)
        and all((t, c, s) in gen_ids for c in cs)
    ]


def _items_create(*, campaign: Campaign, items, wanted: list, gen_ids: dict) -> None:
    """Make the wanted items (waiting) and their outputs, in one transaction."""
    with transaction.atomic():
        rotations = item_rotations(campaign_id=campaign.pk, sizes=[len(cs) for *_, cs in wanted])
        ReviewItem.objects.bulk_create(
            [
                ReviewItem(
                    campaign=campaign,
                    task_id=t,
                    sample_index=s,
                    pair_key=key,
                    overlap=campaign.overlap,
                    shuffle_key=secrets.randbelow(2**31),
                    rotation=rotation,
                )
                for (t, s, key, _), rotation in zip(wanted, rotations, strict=True)
            ],
            batch_size=500,
            ignore_conflicts=True,
        )
        by_key = {
            (t, s, key): pk
            for pk, t, s, key in items.values_list("pk", "task_id", "sample_index", "pair_key")
        }
        outputs = [
            ItemOutput(item_id=by_key[(t, s, key)], generation_id=gen_ids[(t, c, s)])
            for t, s, key, cs in wanted
            for c in cs
        ]
        ItemOutput.objects.bulk_create(outputs, batch_size=1000, ignore_conflicts=True)


def _items_open(*, items, state: str) -> int:
    """Open the waiting items whose outputs are all done and released; how many opened.
    ``state``: open, or judging under a review policy (the judge decides who settles them)."""
    waiting = items.filter(ready=False, state=ReviewItem.State.WAITING)
    # Not there yet: an output not done, or one held until an admin approves its masked view.
    blocked = ItemOutput.objects.filter(item__in=waiting).filter(
        ~Q(generation__status=Generation.Status.DONE) | Q(generation__identity_held=True)
    )
    ready_ids = list(
        waiting.exclude(pk__in=blocked.values("item_id"))
        .annotate(n=Count("outputs"))
        .filter(n__gte=2)
        .values_list("pk", flat=True)
    )
    return ReviewItem.objects.filter(
        pk__in=ready_ids, ready=False, state=ReviewItem.State.WAITING
    ).update(ready=True, state=state)


def review_items_open_for(*, generation_id: int) -> int:
    """Open the items that show this (just finished, or just released) generation once all
    their outputs are done and none is held for an admin's approval. Returns how many opened.

    One UPDATE: the hot path of every finished generation. Items themselves are created up
    front by `review_items_sync` (campaign creation, generate, import, and the reconciler).
    """
    not_there = ItemOutput.objects.filter(item=OuterRef("pk")).filter(
        ~Q(generation__status=Generation.Status.DONE) | Q(generation__identity_held=True)
    )
    showing = ItemOutput.objects.filter(generation_id=generation_id).values("item_id")
    # Under a review policy an item opens to its judge first (one small read: the weights).
    weights = (
        Generation.objects.filter(pk=generation_id)
        .values_list("campaign__weights", flat=True)
        .first()
    )
    opened = (
        ReviewItem.objects.filter(pk__in=showing, ready=False, state=ReviewItem.State.WAITING)
        .filter(~Exists(not_there))
        .update(ready=True, state=opening_state(weights))
    )
    if opened:  # at most once per item: not on every generation's path
        generation = Generation.objects.filter(pk=generation_id).values("campaign_id")
        campaign_open_for_review(Campaign.objects.filter(pk__in=generation))
    return opened


def review_item_progress(*, campaign: Campaign) -> dict[str, int]:
    """The items behind a campaign's stage (tasks/campaigns/lifecycle.py), in one query: total, ready,
    reviewed (its k reviews in), disputed, resolved. A dropped item (reported as revealing
    its model) is no longer the campaign's."""
    return (
        ReviewItem.objects.filter(campaign=campaign)
        .exclude(state=ReviewItem.State.DROPPED)
        .aggregate(
            total=Count("pk"),
            ready=Count("pk", filter=Q(ready=True)),
            # An item its judge settled (review policy) needs no review.
            reviewed=Count("pk", filter=Q(submitted_count__gte=F("overlap")) | Q(source="judge")),
            disputed=Count("pk", filter=Q(state=ReviewItem.State.DISPUTED)),
            resolved=Count("pk", filter=Q(state=ReviewItem.State.RESOLVED)),
        )
    )


def review_item_states(*, campaign: Campaign) -> dict[str, int]:
    """The campaign page's item counts: total, waiting, blocked (waiting on a generation that
    failed for good), cancelled (waiting on a cancelled one) and ready (no longer waiting)."""
    counts = dict(
        ReviewItem.objects.filter(campaign=campaign)
        .values_list("state")
        .annotate(n=Count("pk"))
        .order_by()
    )
    counts.pop(ReviewItem.State.DROPPED, None)  # no longer the campaign's
    waiting = counts.get(ReviewItem.State.WAITING, 0)

    def waiting_on(status: str) -> int:
        if not waiting:
            return 0
        return (
            ReviewItem.objects.filter(
                campaign=campaign,
                state=ReviewItem.State.WAITING,
                outputs__generation__status=status,
            )
            .distinct()
            .count()
        )

    # Waiting for an admin, not for a model: every output done, one held until its masked view
    # is approved. Said apart, so the header names the real wait.
    held = 0
    if waiting:
        not_done = ItemOutput.objects.filter(item=OuterRef("pk")).exclude(
            generation__status=Generation.Status.DONE
        )
        held = (
            ReviewItem.objects.filter(
                campaign=campaign,
                state=ReviewItem.State.WAITING,
                outputs__generation__identity_held=True,
            )
            .filter(~Exists(not_done))
            .distinct()
            .count()
        )
    # Waiting on a generation that failed for good or was cancelled: no worker will finish it
    # (Retry failed, or Generate, does).
    return {
        "total": sum(counts.values()),
        "waiting": waiting,
        "held": held,
        "waiting_outputs": waiting - held,
        "blocked": waiting_on(Generation.Status.FAILED),
        "cancelled": waiting_on(Generation.Status.CANCELLED),
        "ready": sum(n for state, n in counts.items() if state != ReviewItem.State.WAITING),
    }
