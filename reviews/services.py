"""Double assignment: claim, lease, heartbeat, submit, skip, release (SPEC workflows 3 and 4).

The guarantee "each item gets exactly k distinct reviewers" rests on three things, in this
order of importance (docs/architecture.md, "Flow of a review request"):

1. Database constraints: UNIQUE(item, reviewer), UNIQUE(item, slot) over live assignments,
   CHECK(0 <= slot < k) and CHECK(live_count <= k). Whatever the code does, the database
   refuses a third reviewer on a k=2 item.
2. A counter on the item row (`live_count` = active + submitted), changed in the same
   transaction as the assignment row. A claim locks the item row with
   SELECT ... FOR NO KEY UPDATE SKIP LOCKED; under READ COMMITTED a waiting claim re-checks the
   locked row, and the counter is on that row, so it sees the first claim's increment (a COUNT
   subquery would not be re-checked).
3. Lock order, to stay deadlock-free: paths that end an *active* assignment (submit, skip,
   expire, release) lock the assignment row first and the item row second; the claim locks
   the item row and then only inserts, or revives a row that is not active, which no other
   path touches without the item lock.

On PostgreSQL the usual claim is one statement (the campaign and the reviewer's standing,
lock, free slot, insert, counter). It reads
the item's rows on the snapshot it started with, so a claim that lost a race is refused by the
constraints of 1., and the careful transaction (a fresh read under the lock) runs instead.

Leases are compared with the database clock, never the web server's.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import random
import secrets
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Now
from django.utils import timezone

from evalsite import rawrows
from evalsite.roles import REVIEWER
from tasks.models import Campaign, Generation, Mode, Task

from . import blinding, pagerows
from .disputes import item_settle, unknown_field_errors
from .models import (
    Assignment,
    ItemOutput,
    Preference,
    Review,
    ReviewerRemoval,
    ReviewItem,
    Score,
)
from .rubric import Mode as AnswerMode
from .rubric import Rubric, answers_check
from .rubric import labels as rubric_labels

log = logging.getLogger(__name__)

LIVE = (Assignment.State.ACTIVE, Assignment.State.SUBMITTED)
# A reviewer never gets an item again once they hold it, reviewed it or chose to skip it. An
# expired or released row of theirs may be revived (with two reviewers and k=2 an item must not
# get stuck because one of them walked away once).
BLOCKING = (Assignment.State.ACTIVE, Assignment.State.SUBMITTED, Assignment.State.SKIPPED)
REVIEWABLE = (Campaign.Status.GENERATING, Campaign.Status.REVIEWING)
# A heartbeat extends the lease by the campaign's lease length, up to this many lease lengths
# after the claim: an open but forgotten tab cannot hold a slot for ever.
HEARTBEAT_CAP_LEASES = 4
SUBMIT_KEY_MAX = Assignment._meta.get_field("submit_key").max_length
CLAIM_ATTEMPTS = 12
SHUFFLE_SPACE = 2**31  # shuffle_key is drawn from [0, 2**31)
SKIP_REASONS = {
    "expertise": "I can't judge this topic",
    "unreadable": "The text is unreadable or broken",
    "conflict": "Conflict of interest",
    "other": "Other",
}


class ClaimBusy(Exception):
    """Every candidate was taken under our feet CLAIM_ATTEMPTS times in a row; retry."""


class NotReviewable(Exception):
    """The campaign is not open for this reviewer (wrong status, removed, not a reviewer)."""


@dataclass
class Claim:
    assignment: Assignment
    resumed: bool
    campaign: Campaign  # as read by the claim (the API passes only the slug)
    # The item's task and {ItemOutput pk: Generation}, read by the claim (None: not read).
    answer: tuple[Task, dict[int, Generation]] | None = None


@dataclass
class SubmitResult:
    """What happened to a submit. `code` is stable (the API returns it as "status")."""

    # saved | saved_late | duplicate | key_reused | invalid | already_submitted | reassigned |
    # skipped | released
    code: str
    message: str
    assignment: Assignment
    errors: dict[str, str] = field(default_factory=dict)
    review: Review | None = None

    @property
    def ok(self) -> bool:
        return self.code in {"saved", "saved_late", "duplicate"}


def db_now() -> datetime:
    """The database's clock: several web processes must agree on when a lease ends."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement_timestamp()")
            return cursor.fetchone()[0]
    # Embedded mode: SQLite has no server; it and the web process share this machine's clock.
    return timezone.now()


def reviewer_may_review(*, campaign: Campaign, reviewer: AbstractBaseUser) -> bool:
    return not reviewer_barred_message(campaign=campaign, reviewer=reviewer)


def reviewer_barred_message(*, campaign: Campaign, reviewer: AbstractBaseUser) -> str:
    """Why `reviewer` may not review `campaign` any more, for them to read ('' if they may)."""
    if campaign.status not in REVIEWABLE:
        return barred_message(removed=False)
    if reviewer_removed(campaign=campaign, reviewer=reviewer):
        return barred_message(removed=True)
    return ""


def reviewer_removed(*, campaign: Campaign, reviewer: AbstractBaseUser) -> bool:
    return ReviewerRemoval.objects.filter(campaign=campaign, reviewer=reviewer).exists()


def barred_message(*, removed: bool) -> str:
    if removed:
        return (
            "An administrator removed you from this campaign: nothing more comes to you here. "
            "The reviews you submitted are kept."
        )
    return "This campaign is not open for review any more."


def shuffle_offset(*, campaign: Campaign, reviewer: AbstractBaseUser) -> int:
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


def _decrement_live(item_counts: Counter) -> None:
    # Sorted, so two transactions that release slots on the same items lock them in one order.
    for item_id in sorted(item_counts):
        ReviewItem.objects.filter(pk=item_id).update(
            live_count=F("live_count") - item_counts[item_id]
        )


def assignment_expire_stale(*, campaign: Campaign | None = None, limit: int = 500) -> int:
    """Return the slots of leases that ran out (database clock). Safe to run concurrently."""
    stale = Assignment.objects.filter(stale_leases_q())
    if campaign is not None:
        stale = stale.filter(campaign=campaign)
    # Usually nothing is stale: one indexed read, no transaction, on every claim.
    if not stale.exists():
        return 0
    with transaction.atomic():
        locked = stale.select_for_update(skip_locked=True, of=("self",), no_key=True)
        rows = list(locked.order_by("pk").values_list("pk", "item_id")[:limit])
        if not rows:
            return 0
        # The rows are locked and still active (FOR UPDATE re-checked them): no other path can
        # end them now, so each slot is returned exactly once.
        Assignment.objects.filter(pk__in=[pk for pk, _ in rows]).update(
            state=Assignment.State.EXPIRED
        )
        _decrement_live(Counter(item_id for _, item_id in rows))
    return len(rows)


def assignment_sweep_expired() -> int:
    """Beat entry: expire every stale lease in every campaign, in batches, then return the
    leases of accounts that can no longer finish them."""
    total = 0
    while True:
        n = assignment_expire_stale(limit=1000)
        total += n
        if n < 1000:
            return total + assignment_release_unfinishable()


def assignment_release_unfinishable() -> int:
    """Open leases held by accounts that can no longer finish them (deactivated, or no longer
    reviewers) back to the pool. Changing the account releases them at once (user_update);
    this catches a claim that was in flight at that moment, whose lease would otherwise hold
    its slot until it ran out."""
    holders = get_user_model().objects.filter(assignments__state=Assignment.State.ACTIVE)
    reviewers = get_user_model().objects.filter(is_active=True, groups__name=REVIEWER)
    unfinishable = holders.exclude(pk__in=reviewers.values("pk")).distinct()
    return sum(reviewer_leases_release(reviewer=user) for user in unfinishable)


_RETRY = object()


def _retryable(exc: OperationalError) -> bool:
    """A deadlock or serialization failure: PostgreSQL rolled us back; the retry is safe."""
    return getattr(exc.__cause__, "sqlstate", None) in ("40P01", "40001") and not (
        connection.in_atomic_block
    )


def _claim_once(*, campaign: Campaign, reviewer: AbstractBaseUser, lease: timedelta):
    try:
        return _claim_in_transaction(campaign=campaign, reviewer=reviewer, lease=lease)
    except IntegrityError as exc:
        # A constraint refused the insert or revival: the whole attempt rolled back (no
        # savepoint needed, the claim transaction did nothing else); try another item.
        log.info("claim lost a race (%s); trying another item", exc)
        return _RETRY


def _now_sql() -> tuple[str, list]:
    """The database clock in raw SQL (PostgreSQL); SQLite shares the web process's clock."""
    if connection.vendor == "postgresql":
        return "STATEMENT_TIMESTAMP()", []
    return "%s", [connection.ops.adapt_datetimefield_value(timezone.now())]


def _fetch(sql: str, params: list) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


# The claim runs on every "next item": its fixed queries are written as SQL once instead of
# being rebuilt by the ORM on every call (that query building was most of the claim's CPU).
_A, _I, _R = (
    Assignment._meta.db_table,
    ReviewItem._meta.db_table,
    ReviewerRemoval._meta.db_table,
)


# Where a reviewer's next item comes from, in order: breadth first, items already in review (so
# pairs complete; few rows), then fresh items in this reviewer's order, from their offset to the
# end, then wrapping round. (WHERE, ORDER BY), where {offset} stands for the reviewer's offset.
_PASSES = (
    (
        "i.live_count > 0",
        "i.live_count DESC, CASE WHEN i.shuffle_key >= {offset} THEN 0 ELSE 1 END, i.shuffle_key",
    ),
    ("i.live_count = 0 AND i.shuffle_key >= {offset}", "i.shuffle_key"),
    ("i.live_count = 0 AND i.shuffle_key < {offset}", "i.shuffle_key"),
)


@cache
def _candidate_sql(
    where: str,
    order: str,
    now: str,
    postgresql: bool,
    locked: bool = True,
    campaign: str = "%s",
    offset: str = "%s",
) -> str:
    """The first item of a pass this reviewer may take, locked (PostgreSQL: skipping items
    another transaction holds), with the database clock. Parameters: the clock's (SQLite), the
    campaign, WHERE's, the reviewer, ORDER BY's; `campaign` and `offset` may instead be SQL
    expressions, which then take no parameter."""
    where, order = where.replace("{offset}", offset), order.replace("{offset}", offset)
    # "Not yet this reviewer's" is a probe per candidate of the item's own rows (at most a
    # few): OFFSET 0 keeps the planner from turning it into an anti-join, and `+ 0` from
    # using an index on the reviewer. Either made the plan follow the reviewer's row
    # estimate: for a reviewer newer than the statistics it read all their assignments once
    # per candidate, and PostgreSQL planned it again on every claim.
    probe_only = " OFFSET 0" if postgresql else ""
    lock = " FOR NO KEY UPDATE OF i SKIP LOCKED" if postgresql and locked else ""
    return (
        f"SELECT i.id, i.overlap, i.live_count, {now}, i.rotation FROM {_I} i "
        f"WHERE i.campaign_id = {campaign} AND i.ready "
        f"AND i.state = {rawrows.literal(ReviewItem.State.OPEN)} "
        f"AND i.live_count < i.overlap "
        # Per candidate, one probe of the item's rows: the cost does not grow with the
        # reviewer's history (a NOT IN over all their assignments did).
        f"AND {where} AND NOT EXISTS (SELECT 1 FROM {_A} a WHERE a.item_id = i.id "
        f"AND a.reviewer_id + 0 = %s AND a.state IN ({rawrows.literal(*BLOCKING)}){probe_only}) "
        f"ORDER BY {order}, i.id LIMIT 1{lock}"
    )


def _candidate_params(where: str, order: str, campaign, reviewer, offset: int) -> list:
    """`_candidate_sql`'s parameters after the clock's: the campaign, WHERE's, the reviewer,
    ORDER BY's (the offsets)."""
    return [
        campaign.pk,
        *[offset] * where.count("{offset}"),
        reviewer.pk,
        *[offset] * order.count("{offset}"),
    ]


@transaction.atomic
def _claim_in_transaction(*, campaign: Campaign, reviewer: AbstractBaseUser, lease: timedelta):
    now, now_params = _now_sql()
    offset = shuffle_offset(campaign=campaign, reviewer=reviewer)
    postgresql = connection.vendor == "postgresql"

    def first(where: str, order: str, locked=True):
        # Lock the item row (PostgreSQL) and read the database clock in one round trip.
        rows = _fetch(
            _candidate_sql(where, order, now, postgresql, locked),
            [*now_params, *_candidate_params(where, order, campaign, reviewer, offset)],
        )
        return rows[0] if rows else None

    found = None
    for where, order in _PASSES:
        found = found or first(where, order)
    if found is None:
        # SKIP LOCKED also skips items that are only *momentarily* locked (a submit or
        # another claim on them). "Nothing left" must mean nothing left, so look again
        # without locking; if candidates exist, retry once they are released.
        return _RETRY if first("1 = 1", "i.id", locked=False) else None
    item_pk, overlap, live_count, db_clock, rotation = found
    if not isinstance(db_clock, datetime):
        db_clock = timezone.now()  # SQLite: the clock parameter comes back as text
    # One fresh read (a new snapshot, now that the item is locked) of the item's rows: the
    # live slots, and whether this reviewer already has a row. The candidate query's
    # NOT IN (blocked) ran on an older snapshot, and a row lock re-checks only the item
    # row. Inserting over a row of ours that exists but is being changed right now would
    # wait on that transaction while we hold the item lock it needs: a deadlock. So never
    # insert when a row exists. The item's outputs (for the presented order) come along,
    # with the task and texts the answer shows.
    rows = _fetch(pagerows.claim_item_sql(), [item_pk, item_pk])
    assignments = [row[1:5] for row in rows if row[0] == "a"]
    output_rows = [row for row in rows if row[0] == "o"]
    outputs = sorted((contender, pk) for _, pk, contender, *_ in output_rows)
    answer = pagerows.task_and_generations(output_rows, 5) if output_rows else None
    used = {slot for _, _, state, slot in assignments if state in LIVE}
    previous = next(((pk, st) for pk, rid, st, _ in assignments if rid == reviewer.pk), None)
    if previous is not None and previous[1] in BLOCKING:
        return _RETRY
    free = [s for s in range(overlap) if s not in used]
    if not free:
        # The counter said there was room but the rows disagree: never trust one alone.
        log.error("review item %s: live_count=%s but slots %s are taken", item_pk, live_count, used)
        return _RETRY
    slot = free[0]
    fields = {
        "state": Assignment.State.ACTIVE,
        "slot": slot,
        "overlap": overlap,
        "lease_expires_at": db_clock + lease,
        "heartbeat_at": None,
        "submit_key": "",
    }
    bump = f"UPDATE {_I} SET live_count = live_count + 1 WHERE id = %s"
    if previous is not None:
        # Same token and same presented order: a page still open from the earlier
        # lease keeps working, and its labels still mean the same outputs.
        revived = Assignment.objects.filter(pk=previous[0], state=previous[1]).update(
            created_at=Now(), **fields
        )
        if revived != 1:
            raise IntegrityError("assignment changed while reviving it")
        assignment = Assignment.objects.get(pk=previous[0])
    else:
        order = presented_order(rotation=rotation, output_ids=[pk for _, pk in outputs], slot=slot)
        new = Assignment(
            item_id=item_pk, campaign=campaign, reviewer=reviewer, order=order, **fields
        )
        if postgresql:
            # The new assignment and its slot's count in one statement: one round trip less,
            # and both or neither take effect.
            assignment = rawrows.insert(
                new, db_now=["created_at"], with_=(f"WITH bump AS ({bump})", [item_pk])
            )
            return Claim(assignment=assignment, resumed=False, campaign=campaign, answer=answer)
        assignment = rawrows.insert(new, db_now=["created_at"])
    with connection.cursor() as cursor:
        cursor.execute(bump, [item_pk])
    return Claim(assignment=assignment, resumed=False, campaign=campaign, answer=answer)


def _claim_fast(
    *, reviewer: AbstractBaseUser, campaign: Campaign | None, slug: str | None
) -> tuple[Claim | None, tuple | None]:
    """PostgreSQL: the whole claim in one statement, with no transaction of its own (one round
    trip instead of six: the context, BEGIN, the candidate, the item's rows, the insert,
    COMMIT). It reads what `_claim_context` reads; when that allows a new claim (the campaign
    is open, the reviewer neither removed nor holding a lease, no lapsed lease to return), the
    first free item is locked, the assignment written with a free slot and the item's count
    bumped (all or nothing), and the task and outputs come back for the answer.

    Returns (the claim or None, the context or None). Without a claim the caller decides from
    the context, as without this statement: the careful path (`_claim_in_transaction`) then
    handles no candidate (or all locked), a row of this reviewer's on the item to revive, and
    lapsed leases. The statement reads the item's rows on the snapshot it started with, before
    it held the item, so a claim of that item committed in between makes its slot taken twice:
    the unique (item, slot) of live rows refuses it, as it refuses the same reviewer twice, and
    the context is then read again (None)."""
    key, value = ("slug", slug) if campaign is None else ("id", campaign.pk)
    token = Assignment._meta.get_field("token").get_default()
    # The offset's text after the campaign id, the context's, each pass's and the slot's
    # reviewer, then the new row's reviewer and token.
    params = [f":{reviewer.pk}", reviewer.pk, reviewer.pk, value]
    params += [reviewer.pk] * (len(_PASSES) + 2) + [token]
    # Inside a caller's transaction a refused statement must not abort it: a savepoint then.
    guard = transaction.atomic() if connection.in_atomic_block else contextlib.nullcontext()
    try:
        with guard:
            rows = _fetch(_claim_fast_sql(key), params)
    except IntegrityError as exc:
        log.info("one-statement claim lost a race (%s); taking the careful path", exc)
        return None, None
    except OperationalError as exc:
        if not _retryable(exc):
            raise
        return None, None
    if not rows:
        return None, _NO_CAMPAIGN
    width = len(rawrows.fields_of(Campaign))
    found = rawrows.instance(Campaign, rows[0][:width])
    removed, stale, held, _offset = rows[0][width : width + 4]
    context = (found, bool(removed), bool(stale), held)
    start = width + 4
    if rows[0][start] is None:
        return None, context  # nothing claimed
    end = start + len(rawrows.fields_of(Assignment))
    assignment = rawrows.instance(Assignment, rows[0][start:end])
    answer = pagerows.task_and_generations(rows, end)
    return Claim(assignment=assignment, resumed=False, campaign=found, answer=answer), context


@cache
def _claim_fast_sql(key: str) -> str:
    qn = connection.ops.quote_name
    passes = [
        _candidate_sql(
            where,
            order,
            "NULL",
            True,
            campaign="(SELECT id FROM go)",
            offset="(SELECT off FROM go)",
        )
        for where, order in _PASSES
    ]
    o, g = rawrows.table(ItemOutput), rawrows.table(Generation)
    fields = [f for f in rawrows.fields_of(Assignment) if not f.primary_key]
    # Each value of the new row, in the model's field order.
    values = {
        "item_id": "s.id",
        "campaign_id": "go.id",
        "reviewer_id": "%s",
        "slot": "s.slot",
        "overlap": "s.overlap",
        "state": rawrows.literal(Assignment.State.ACTIVE),
        "token": "%s",
        # presented_order in SQL: rotation (rotation % n + slot) of the outputs in contender
        # order, the cycle reversed when rotation / n is odd (a test compares the two).
        "order": (
            "(SELECT COALESCE(jsonb_agg(s.ids[1 + CASE WHEN mod(s.rotation / r.n, 2) = 1 "
            "THEN r.n - 1 - r.p ELSE r.p END] ORDER BY j), '[]'::jsonb) "
            "FROM (SELECT cardinality(s.ids) AS n) r0, generate_series(0, r0.n - 1) j, "
            "LATERAL (SELECT r0.n, mod(mod(s.rotation, r0.n) + s.slot + j, r0.n) AS p) r)"
        ),
        "lease_expires_at": "STATEMENT_TIMESTAMP() + make_interval(mins => go.lease_minutes)",
        "heartbeat_at": "NULL",
        "created_at": "STATEMENT_TIMESTAMP()",
        "submitted_at": "NULL",
        "submit_key": "''",
        "skip_reason": "''",
    }
    if [f.attname for f in fields] != list(values):
        raise RuntimeError("Assignment's fields changed: update the claim's INSERT")
    if SHUFFLE_SPACE & (SHUFFLE_SPACE - 1):
        raise RuntimeError("the claim's offset takes SHUFFLE_SPACE's low bits: a power of two")
    returning = ", ".join(qn(f.column) for f in rawrows.fields_of(Assignment))
    return (
        # shuffle_offset in SQL: the first 8 bytes of sha256("<campaign>:<reviewer>") modulo
        # SHUFFLE_SPACE (a test compares the two).
        "WITH ctx AS MATERIALIZED (SELECT x.*, ('x' || encode(substring(sha256(convert_to("
        "x.id::text || %s, 'UTF8')) FROM 1 FOR 8), 'hex'))::bit(64)::bigint "
        f"& {SHUFFLE_SPACE - 1} AS off FROM ({_claim_context_sql(key, _now_sql()[0])}) x), "
        # A new claim only where assignment_claim_next would make one; else nothing below runs.
        "go AS MATERIALIZED (SELECT id, off, lease_minutes FROM ctx "
        f"WHERE status IN ({rawrows.literal(*sorted(REVIEWABLE))}) AND NOT removed "
        "AND NOT stale AND held IS NULL), "
        f"c0 AS ({passes[0]}), c1 AS ({passes[1]}), c2 AS ({passes[2]}), "
        "cand AS (SELECT * FROM c0 UNION ALL SELECT * FROM c1 UNION ALL SELECT * FROM c2 LIMIT 1), "
        # The lowest free slot and the outputs (contender order), unless the reviewer has
        # a row on the item already (to revive: the careful path's work).
        "s AS MATERIALIZED (SELECT cand.id, cand.overlap, cand.rotation, "
        "(SELECT min(n) FROM generate_series(0, cand.overlap - 1) n WHERE NOT EXISTS "
        f"(SELECT 1 FROM {_A} a WHERE a.item_id = cand.id AND a.slot = n "
        f"AND a.state IN ({rawrows.literal(*LIVE)}))) AS slot, "
        f"(SELECT array_agg(o.id ORDER BY g.contender_id, o.id) FROM {o} o "
        f"JOIN {g} g ON g.id = o.generation_id WHERE o.item_id = cand.id) AS ids FROM cand "
        f"WHERE NOT EXISTS (SELECT 1 FROM {_A} a WHERE a.item_id = cand.id AND a.reviewer_id = %s)), "
        f"ins AS (INSERT INTO {_A} ({', '.join(qn(f.column) for f in fields)}) "
        f"SELECT {', '.join(values.values())} FROM s, go WHERE s.slot IS NOT NULL "
        f"RETURNING {returning}), "
        f"bump AS (UPDATE {_I} i SET live_count = i.live_count + 1 FROM ins WHERE i.id = ins.item_id) "
        # The context always; the new assignment and the answer's rows when there is one.
        "SELECT ctx.*, y.* FROM ctx LEFT JOIN LATERAL (SELECT ins.*, x.* FROM ins, "
        f"LATERAL ({pagerows.task_outputs_of('ins.item_id')}) x) y ON true"
    )


_NO_CAMPAIGN = (None, False, False, None)  # _claim_context's answer when there is no campaign


def _claim_context(
    *, reviewer: AbstractBaseUser, campaign: Campaign | None, slug: str | None
) -> tuple[Campaign | None, bool, bool, int | None]:
    """(the campaign, reviewer removed?, any lapsed lease in the campaign?, the live lease
    the reviewer already holds or None), in one round trip: every claim asks all four (on
    PostgreSQL the claim's statement asks them itself; this query runs when that statement was
    refused, and on SQLite). The campaign is read by `slug` (the API) or again by pk; None if
    there is no such campaign."""
    now, now_params = _now_sql()
    rows = _fetch(
        _claim_context_sql("slug" if campaign is None else "id", now),
        [reviewer.pk, *now_params, reviewer.pk, *now_params]
        + [slug if campaign is None else campaign.pk],
    )
    if not rows:
        return _NO_CAMPAIGN
    *values, removed, stale, held = rows[0]
    return rawrows.instance(Campaign, values), bool(removed), bool(stale), held


@cache
def _claim_context_sql(key: str, now: str) -> str:
    active = rawrows.literal(Assignment.State.ACTIVE)
    in_campaign = f"FROM {_A} a WHERE a.campaign_id = c.id"
    return (
        f"SELECT {rawrows.columns('c', Campaign)}, "
        f"EXISTS (SELECT 1 FROM {_R} r WHERE r.campaign_id = c.id AND r.reviewer_id = %s) "
        "AS removed, "
        f"EXISTS (SELECT 1 {in_campaign} AND a.state = {active} AND a.lease_expires_at <= {now}) "
        "AS stale, "
        f"(SELECT a.id {in_campaign} AND a.reviewer_id = %s AND a.state = {active} "
        f"AND a.lease_expires_at > {now} ORDER BY a.created_at, a.id LIMIT 1) AS held "
        f"FROM {rawrows.table(Campaign)} c WHERE c.{key} = %s"
    )


def assignment_claim_next(
    *, reviewer: AbstractBaseUser, campaign: Campaign | None = None, slug: str | None = None
) -> Claim | None:
    """The reviewer's current item, or a newly claimed one, or None when nothing is left.

    Give the campaign, or only its slug (the API): the campaign row then comes with the
    claim's first query instead of a query of its own. NotReviewable if there is no such
    campaign, it is not open for review, or the reviewer was removed from it.
    """
    context = None
    if connection.vendor == "postgresql":
        claim, context = _claim_fast(reviewer=reviewer, campaign=campaign, slug=slug)
        if claim is not None:
            return claim
    if context is None:
        context = _claim_context(reviewer=reviewer, campaign=campaign, slug=slug)
    campaign, removed, stale, held = context
    if campaign is None or campaign.status not in REVIEWABLE or removed:
        raise NotReviewable(slug if campaign is None else campaign.slug)
    if stale:
        # Lazy expiry: abandoned slots come back even if the beat sweeper is not running.
        assignment_expire_stale(campaign=campaign)
    if held is not None:
        return Claim(assignment=Assignment.objects.get(pk=held), resumed=True, campaign=campaign)
    lease = timedelta(minutes=campaign.lease_minutes)
    for attempt in range(CLAIM_ATTEMPTS):
        try:
            result = _claim_once(campaign=campaign, reviewer=reviewer, lease=lease)
        except OperationalError as exc:
            if not _retryable(exc):
                raise
            result = _RETRY
        if result is _RETRY:
            # Lock holders finish in milliseconds; back off a little, with jitter.
            time.sleep(random.uniform(0.002, 0.01) * (attempt + 1))
            continue
        return result  # a Claim, or None: nothing left
    raise ClaimBusy(campaign.slug)


def lease_extended(*, expires_at: datetime, claimed_at: datetime, lease: timedelta) -> datetime:
    """A heartbeat's new lease end (review and arbitration pages alike): one more lease from
    now on the database clock, never past HEARTBEAT_CAP_LEASES leases after the claim (a
    forgotten tab cannot hold an item for ever), never shorter than it was."""
    return max(expires_at, min(db_now() + lease, claimed_at + HEARTBEAT_CAP_LEASES * lease))


LEASE_LAPSED = "Your time on this item ran out. Submitting may still work if nobody else took it."


class LeaseGone(Exception):
    """A heartbeat for a lease that is no longer live; the message says what became of it."""


def assignment_heartbeat(*, token: str, reviewer: AbstractBaseUser) -> datetime:
    """Extend a live lease (the page is open); LeaseGone if there is none to extend."""
    assignment = (
        Assignment.objects.select_related("item__campaign")
        .filter(token=token, reviewer=reviewer)
        .only("pk", "state", "created_at", "lease_expires_at", "item__campaign__lease_minutes")
        .first()
    )
    if assignment is None:
        raise Assignment.DoesNotExist(token)
    new_expiry = lease_extended(
        expires_at=assignment.lease_expires_at,
        claimed_at=assignment.created_at,
        lease=timedelta(minutes=assignment.item.campaign.lease_minutes),
    )
    updated = Assignment.objects.filter(
        pk=assignment.pk, state=Assignment.State.ACTIVE, lease_expires_at__gt=Now()
    ).update(lease_expires_at=new_expiry, heartbeat_at=Now())
    if not updated:
        # Submitted, skipped, released or expired say so; an active one ran out of time.
        active = assignment.state == Assignment.State.ACTIVE
        raise LeaseGone(LEASE_LAPSED if active else assignment_state_message(assignment))
    return new_expiry


# --- submit ---------------------------------------------------------------------------------


def labels_for(n: int) -> list[str]:
    return rubric_labels(n)


def campaign_wants(campaign: Campaign) -> tuple[bool, bool]:
    """(wants rubric scores, wants a preference) for the campaign's mode."""
    scores = campaign.mode in (Mode.RUBRIC, Mode.BOTH) and bool(campaign.rubric)
    preference = campaign.mode in (Mode.PAIRWISE, Mode.BOTH)
    return scores, preference


SUBMIT_FIELDS = ("scores", "preference", "flags", "comment", "seconds_spent", "key")


def review_payload_parse(
    *, campaign: Campaign, order: list[int], data: dict
) -> tuple[dict, dict[str, str]]:
    """Check a submit against the rubric and map labels to ItemOutput ids.

    `data` = {"scores": {"A": {"accuracy": 4}}, "preference": "A"|"tie"|"both_bad",
    "flags": {"A": ["hallucination"]}, "comment": "...", "seconds_spent": 42, "key": "..."}.
    "na" or null is N/A where a dimension allows it. Returns (parsed, errors); errors map
    "scores.A.accuracy"-style paths to messages. Any other field is an error: a misspelt one
    would otherwise be dropped without a word. The answers are checked by reviews/rubric.py.
    """
    labels = labels_for(len(order))
    by_label = dict(zip(labels, order, strict=True))
    wants_scores, wants_preference = campaign_wants(campaign)
    errors = unknown_field_errors(data, SUBMIT_FIELDS)
    if not isinstance(data.get("key"), str | None):
        errors["key"] = "must be a string"
    answers = answers_check(
        rubric=Rubric.of(campaign),
        labels=labels,
        data=data,
        mode=AnswerMode.REVIEW,
        wants_scores=wants_scores,
        wants_preference=wants_preference,
    )
    errors.update(answers.errors)
    preference, preferred = answers.preference or "", None
    if preference in by_label:
        preference, preferred = Preference.OUTPUT, by_label[preference]

    # A number from the API, text from the review page's hidden field (which the browser's
    # clock fills: negative if the clock was set back, so clamped, never refused: the reviewer
    # could not correct a hidden field).
    seconds = data.get("seconds_spent")
    if seconds is None or seconds == "":
        seconds = None
    else:
        try:
            value = float(seconds) if not isinstance(seconds, bool) else math.nan
        except (TypeError, ValueError):
            value = math.nan
        if math.isfinite(value):
            seconds = round(max(0.0, min(value, 86400.0)))
        else:
            errors["seconds_spent"] = "must be a number of seconds"
            seconds = None

    parsed = {
        "scores": {by_label[label]: dims for label, dims in answers.scores.items() if dims},
        "preference": preference,
        "preferred_output_id": preferred,
        "flags": {str(by_label[label]): sorted(set(f)) for label, f in answers.flags.items() if f},
        "comment": answers.comment,
        "seconds_spent": seconds,
    }
    return parsed, errors


def _same_answers(assignment: Assignment, data: dict) -> bool:
    """Whether a retry carries the answers stored under its key (a retry after a network
    error does; a script reusing one key for changed answers does not). The time spent is
    left out: the review page's clock moves between a submit and its retry."""
    parsed, errors = review_payload_parse(
        campaign=assignment.item.campaign, order=assignment.order, data=data
    )
    review = Review.objects.filter(assignment=assignment).first()
    if errors or review is None:
        return not errors
    stored: dict[int, dict] = {}
    for output_id, dimension, value in review.scores.values_list("output_id", "dimension", "value"):
        stored.setdefault(output_id, {})[dimension] = value
    return (
        stored == parsed["scores"]
        and (review.preference, review.preferred_output_id)
        == (parsed["preference"], parsed["preferred_output_id"])
        and review.flags == parsed["flags"]
        and review.comment == parsed["comment"]
    )


def _settled_result(assignment: Assignment, key: str) -> SubmitResult:
    if key and assignment.submit_key == key:
        return SubmitResult(
            "duplicate",
            "Already saved: this review arrived before, it was not saved twice.",
            assignment,
        )
    return SubmitResult(
        "already_submitted", "You already submitted a review for this item.", assignment
    )


def _closed_result(assignment: Assignment) -> SubmitResult:
    if assignment.state == Assignment.State.SKIPPED:
        return SubmitResult(
            "skipped", "You skipped this item; the review was not saved.", assignment
        )
    if assignment.state == Assignment.State.RELEASED:
        return SubmitResult(
            "released",
            "An administrator released this item from you; the review was not saved.",
            assignment,
        )
    return SubmitResult(
        "reassigned",
        "Your time on this item ran out and it was given to another reviewer; "
        "the review was not saved.",
        assignment,
    )


def assignment_state_message(assignment: Assignment) -> str:
    return {
        Assignment.State.ACTIVE: "This item is yours to review.",
        Assignment.State.SUBMITTED: "You already submitted a review for this item.",
        Assignment.State.SKIPPED: "You skipped this item.",
        Assignment.State.RELEASED: "An administrator released this item from you.",
        Assignment.State.EXPIRED: "Your time on this item ran out and it went back to the pool.",
    }[assignment.state]


@cache
def _submit_assignment_sql() -> str:
    return (
        f"SELECT {rawrows.columns('a', Assignment)}, {rawrows.columns('i', ReviewItem)}, "
        f"{rawrows.columns('c', Campaign)} FROM {_A} a JOIN {_I} i ON i.id = a.item_id "
        f"JOIN {rawrows.table(Campaign)} c ON c.id = i.campaign_id "
        # The token alone picks the row (its unique index); whose it is is checked after.
        f"WHERE a.token = %s"
    )


def _submit_assignment(*, token: str, reviewer: AbstractBaseUser) -> Assignment:
    """The reviewer's assignment `token` with its item and campaign, in one query written
    once (every submit reads them; building the ORM's join cost more than running it)."""
    rows = _fetch(_submit_assignment_sql(), [token])
    if not rows:
        raise Assignment.DoesNotExist(token)
    assignment, item, campaign = rawrows.instances(rows[0], Assignment, ReviewItem, Campaign)
    if assignment.reviewer_id != reviewer.pk:
        raise Assignment.DoesNotExist(token)  # someone else's: as if it did not exist
    item.campaign = campaign
    assignment.item = item
    return assignment


def assignment_submit(
    *, token: str, reviewer: AbstractBaseUser, key: str, data: dict
) -> SubmitResult:
    """Save a review once, fenced on the assignment still being this reviewer's.

    - Same `key` again (double click, retry after a network error) -> "duplicate", nothing new.
    - Lease ran out but nobody took the slot -> saved anyway ("saved_late"); work is not lost.
    - Lease ran out and the slot went to someone else -> "reassigned", nothing saved.
    Raises Assignment.DoesNotExist for a token that is not the reviewer's.
    """
    key = (key or "").strip()
    assignment = _submit_assignment(token=token, reviewer=reviewer)
    if len(key) > SUBMIT_KEY_MAX:
        # Refused, not cut: two keys that share their first characters would be one key,
        # and the second review would be taken for a retry of the first.
        return SubmitResult(
            "invalid",
            "Some answers are missing or invalid.",
            assignment,
            errors={"key": f"at most {SUBMIT_KEY_MAX} characters (a UUID has 36)"},
        )
    if assignment.state == Assignment.State.SUBMITTED:
        result = _settled_result(assignment, key)
        if result.code == "duplicate" and not _same_answers(assignment, data):
            return SubmitResult(
                "key_reused",
                "Not saved: other answers to this item were already saved under the same "
                "submit key, and those stand.",
                assignment,
            )
        return result
    if assignment.state in (Assignment.State.SKIPPED, Assignment.State.RELEASED):
        return _closed_result(assignment)
    campaign = assignment.item.campaign
    parsed, errors = review_payload_parse(campaign=campaign, order=assignment.order, data=data)
    if errors:
        return SubmitResult(
            "invalid", "Some answers are missing or invalid.", assignment, errors=errors
        )
    if not key:
        key = "server-" + secrets.token_hex(8)

    for attempt in range(3):
        try:
            with transaction.atomic():
                review = _review_store_fenced(
                    assignment=assignment, reviewer=reviewer, key=key, parsed=parsed
                )
                if review is not None:
                    assignment.state, assignment.submit_key = Assignment.State.SUBMITTED, key
                    return SubmitResult("saved", "Saved.", assignment, review=review)
            # Not fenced. That transaction is over on purpose: a fence that lost a race may
            # still hold the row lock PostgreSQL took while re-checking it, and the late path
            # locks the item first (like a claim); holding both the other way round deadlocks.
            result = _submit_late(assignment=assignment, reviewer=reviewer, key=key, parsed=parsed)
        except OperationalError as exc:
            if not _retryable(exc):
                raise
            result = _RETRY
        if result is not _RETRY:
            return result
        time.sleep(random.uniform(0.005, 0.02) * (attempt + 1))
    raise ClaimBusy("the item kept changing while saving; retry with the same key")


def _submit_late(
    *, assignment: Assignment, reviewer: AbstractBaseUser, key: str, parsed: dict
) -> SubmitResult:
    """A submit whose fence failed: a double click's twin, or a lease that ran out."""
    with transaction.atomic():
        item = (
            ReviewItem.objects.select_for_update(of=("self",), no_key=True)
            .filter(pk=assignment.item_id)
            .only("pk", "overlap", "live_count", "state")
            .first()
        )
        assignment.refresh_from_db()
        if assignment.state == Assignment.State.SUBMITTED:
            return _settled_result(assignment, key)
        if assignment.state == Assignment.State.ACTIVE:
            # Revived by a claim of the same reviewer meanwhile: go through the fence again
            # (not here, while holding the item lock).
            return _RETRY
        if assignment.state != Assignment.State.EXPIRED:
            return _closed_result(assignment)
        # Expired: take a slot again if one is still free, so finished work is not lost.
        used = set(
            Assignment.objects.filter(item_id=item.pk, state__in=LIVE).values_list(
                "slot", flat=True
            )
        )
        free = [s for s in range(item.overlap) if s not in used]
        if item.state != ReviewItem.State.OPEN or item.live_count >= item.overlap or not free:
            return _closed_result(assignment)
        try:
            with transaction.atomic():
                revived = Assignment.objects.filter(
                    pk=assignment.pk, state=Assignment.State.EXPIRED
                ).update(
                    state=Assignment.State.SUBMITTED,
                    slot=free[0],
                    overlap=item.overlap,
                    submit_key=key,
                    submitted_at=Now(),
                )
                if revived != 1:
                    raise IntegrityError("assignment changed while saving a late review")
                ReviewItem.objects.filter(pk=item.pk).update(live_count=F("live_count") + 1)
        except IntegrityError:
            return _closed_result(assignment)
        review = _review_store(assignment=assignment, reviewer=reviewer, parsed=parsed)
    assignment.refresh_from_db()
    return SubmitResult(
        "saved_late",
        "Saved. Your time on this item had run out, but it still needed your review.",
        assignment,
        review=review,
    )


def _review_store_fenced(
    *, assignment: Assignment, reviewer: AbstractBaseUser, key: str, parsed: dict
) -> Review | None:
    """The fence, then the review: None (nothing written) unless the assignment was still this
    reviewer's active one, which the fence marks submitted under `key`."""
    now, now_params = _now_sql()
    fence = (
        f"UPDATE {_A} SET state = {rawrows.literal(Assignment.State.SUBMITTED)}, submit_key = %s, "
        f"submitted_at = {now} WHERE id = %s AND state = {rawrows.literal(Assignment.State.ACTIVE)}"
    )
    fence_params = [key, *now_params, assignment.pk]
    if connection.vendor == "postgresql":
        # One round trip: the review, its scores and the item's count are written only when
        # the fence changed its row, in the fence's own statement.
        return _review_store(
            assignment=assignment,
            reviewer=reviewer,
            parsed=parsed,
            fence=(f"fence AS ({fence} RETURNING id)", fence_params),
        )
    with connection.cursor() as cursor:
        cursor.execute(fence, fence_params)
        fenced = cursor.rowcount
    return (
        _review_store(assignment=assignment, reviewer=reviewer, parsed=parsed) if fenced else None
    )


def _review_store(
    *,
    assignment: Assignment,
    reviewer: AbstractBaseUser,
    parsed: dict,
    fence: tuple[str, list] | None = None,
) -> Review | None:
    """Write the review and its scores; settle the item when this was its k-th review.

    `fence` (PostgreSQL): a `fence AS (UPDATE ... RETURNING id)` query and its parameters; all
    the writes then run in that one statement, only if the fence returns its row (else None)."""
    review = Review(
        item_id=assignment.item_id,
        assignment=assignment,
        reviewer=reviewer,
        preference=parsed["preference"],
        preferred_output_id=parsed["preferred_output_id"],
        flags=parsed["flags"],
        comment=parsed["comment"],
        seconds_spent=parsed["seconds_spent"],
        presented_order=list(assignment.order),
    )
    scores = [
        (output_id, dim, value)
        for output_id, dims in parsed["scores"].items()
        for dim, value in dims.items()
    ]
    columns = ("review_id", "output_id", "dimension", "value")
    # Counting the review returns the item's fresh state (the item row stays locked by this
    # UPDATE until commit, so two last reviews cannot both miss the settle).
    counted = "submitted_count, overlap, state"
    count = (
        f"UPDATE {_I} SET submitted_count = submitted_count + 1 WHERE id = %s RETURNING {counted}"
    )
    if fence is not None:
        fence_sql, fence_params = fence
        review_sql, review_params, clock = rawrows.insert_sql(
            review, db_now=["submitted_at"], source="fence"
        )
        writes, params = [fence_sql, f"review AS ({review_sql})"], [*fence_params, *review_params]
        if scores:
            scores_sql, scores_params = rawrows.insert_rows_sql(
                Score, columns, scores, first_from="review.id"
            )
            writes.append(f"scores AS ({scores_sql})")
            params += scores_params
        writes.append(
            f"counted AS (UPDATE {_I} i SET submitted_count = i.submitted_count + 1 FROM review "
            f"WHERE i.id = %s RETURNING i.submitted_count, i.overlap, i.state)"
        )
        rows = _fetch(
            f"WITH {', '.join(writes)} SELECT review.*, {counted} FROM review, counted",
            [*params, assignment.item_id],
        )
        if not rows:
            return None
        *returned, submitted, overlap, state = rows[0]
        rawrows.inserted(review, returned, clock)
    else:
        rawrows.insert(review, db_now=["submitted_at"])  # the database clock, in the INSERT
        rows = [(review.pk, *score) for score in scores]
        if rows and connection.vendor == "postgresql":
            # The scores go in the same statement (one round trip less).
            insert_scores, params = rawrows.insert_rows_sql(Score, columns, rows)
            count, count_params = f"WITH scores AS ({insert_scores}) {count}", params
        else:
            rawrows.insert_rows(Score, columns, rows)
            count_params = []
        (submitted, overlap, state) = _fetch(count, [*count_params, assignment.item_id])[0]
    if submitted >= overlap and state == ReviewItem.State.OPEN:
        item = assignment.item  # loaded with its campaign by the caller
        item.submitted_count, item.state = submitted, state
        item_settle(item, output_ids=assignment.order)
    return review


def assignment_skip(*, token: str, reviewer: AbstractBaseUser, reason: str) -> bool:
    """Give an item back with a reason; the reviewer will not be offered it again."""
    reason = (reason or "").strip()[:200]
    if not reason:
        raise ValueError("a reason is required to skip")
    assignment = Assignment.objects.only("pk", "item_id").get(token=token, reviewer=reviewer)
    with transaction.atomic():
        done = Assignment.objects.filter(pk=assignment.pk, state=Assignment.State.ACTIVE).update(
            state=Assignment.State.SKIPPED, skip_reason=reason
        )
        if done:
            _decrement_live(Counter({assignment.item_id: 1}))
    return bool(done)


def assignment_release(*, campaign: Campaign, token: str) -> bool:
    """Admin/lead: take an active lease away; the slot returns to the pool at once."""
    assignment = Assignment.objects.only("pk", "item_id").get(token=token, campaign=campaign)
    with transaction.atomic():
        done = Assignment.objects.filter(pk=assignment.pk, state=Assignment.State.ACTIVE).update(
            state=Assignment.State.RELEASED
        )
        if done:
            _decrement_live(Counter({assignment.item_id: 1}))
    return bool(done)


def reviewer_remove_from_campaign(
    *, campaign: Campaign, reviewer: AbstractBaseUser, by: AbstractBaseUser | None = None
) -> int:
    """Admin/lead: no more items for this reviewer here; their open leases return to the pool.

    Reviews they already submitted stay (they are real, finished work). Returns how many
    leases were released.
    """
    with transaction.atomic():
        ReviewerRemoval.objects.get_or_create(
            campaign=campaign, reviewer=reviewer, defaults={"removed_by": by}
        )
        return _leases_release(reviewer=reviewer, campaign=campaign)


def reviewer_leases_release(*, reviewer: AbstractBaseUser) -> int:
    """Every open lease the reviewer holds, in every campaign, back to the pool (a deactivated
    account, or one that lost the reviewer role, cannot finish them). Returns how many."""
    with transaction.atomic():
        return _leases_release(reviewer=reviewer)


def _leases_release(*, reviewer: AbstractBaseUser, campaign: Campaign | None = None) -> int:
    leases = Assignment.objects.filter(reviewer=reviewer, state=Assignment.State.ACTIVE)
    if campaign is not None:
        leases = leases.filter(campaign=campaign)
    rows = list(
        leases.select_for_update(of=("self",), no_key=True)
        .order_by("pk")
        .values_list("pk", "item_id")
    )
    if rows:
        Assignment.objects.filter(pk__in=[pk for pk, _ in rows]).update(
            state=Assignment.State.RELEASED
        )
        _decrement_live(Counter(item_id for _, item_id in rows))
    return len(rows)


def reviewer_restore_to_campaign(*, campaign: Campaign, reviewer: AbstractBaseUser) -> bool:
    return ReviewerRemoval.objects.filter(campaign=campaign, reviewer=reviewer).delete()[0] > 0


_TERMS_CACHE: dict[int, tuple[float, tuple, tuple[str, ...]]] = {}
TERMS_TTL_SECONDS = 30.0


def campaign_identity_terms(campaign: Campaign) -> tuple[str, ...]:
    """Words to mask for this campaign. Cached per process for a few seconds: every review
    page needs them, and a campaign's contenders do not change while it is reviewed."""
    now = time.monotonic()
    redact = tuple(campaign.redact or [])
    cached = _TERMS_CACHE.get(campaign.pk)
    if cached is not None and cached[1] == redact and now - cached[0] < TERMS_TTL_SECONDS:
        return cached[2]
    terms = blinding.identity_terms(
        redact=redact,
        contenders=campaign.contenders.values("name", "model", "version_label", "base_url"),
    )
    _TERMS_CACHE[campaign.pk] = (now, redact, terms)
    return terms


def stale_leases_q() -> Q:
    """Active assignments whose lease ran out (database clock), not yet expired by a sweep."""
    return Q(state=Assignment.State.ACTIVE, lease_expires_at__lte=Now())
