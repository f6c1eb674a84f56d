"""The claim: a reviewer's next item, with a free slot, exactly k distinct reviewers per item.

A claim locks the item row with SELECT ... FOR NO KEY UPDATE SKIP LOCKED; under READ
COMMITTED a waiting claim re-checks the locked row, and the live counter is on that row, so it
sees the first claim's increment (docs/decisions/0003). The claim locks the item row and then
only inserts, or revives a row that is not active, which no other path touches without the
item lock.

On PostgreSQL the usual claim is one statement (the campaign and the reviewer's standing,
lock, free slot, insert, counter). It reads the item's rows on the snapshot it started with, so
a claim that lost a race is refused by the database constraints, and the careful transaction
(a fresh read under the lock) runs instead.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models.functions import Now
from django.utils import timezone

from evalsite import rawrows
from tasks.models import Campaign, Generation, Task

from .. import pagerows
from ..models import Assignment, ItemOutput, ReviewItem
from ..sql import ASSIGNMENTS as _A
from ..sql import ITEMS as _I
from ..sql import REMOVALS as _R
from ..sql import fetch, now_sql
from .leases import BLOCKING, LIVE, assignment_expire_stale
from .order import SHUFFLE_SPACE, presented_order, shuffle_offset
from .standing import REVIEWABLE

log = logging.getLogger(__name__)


CLAIM_ATTEMPTS = 12


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


RETRY = object()


def retryable(exc: OperationalError) -> bool:
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
        return RETRY


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
    now, now_params = now_sql()
    offset = shuffle_offset(campaign=campaign, reviewer=reviewer)
    postgresql = connection.vendor == "postgresql"

    def first(where: str, order: str, locked=True):
        # Lock the item row (PostgreSQL) and read the database clock in one round trip.
        rows = fetch(
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
        return RETRY if first("1 = 1", "i.id", locked=False) else None
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
    rows = fetch(pagerows.claim_item_sql(), [item_pk, item_pk])
    assignments = [row[1:5] for row in rows if row[0] == "a"]
    output_rows = [row for row in rows if row[0] == "o"]
    outputs = sorted((contender, pk) for _, pk, contender, *_ in output_rows)
    answer = pagerows.task_and_generations(output_rows, 5) if output_rows else None
    used = {slot for _, _, state, slot in assignments if state in LIVE}
    previous = next(((pk, st) for pk, rid, st, _ in assignments if rid == reviewer.pk), None)
    if previous is not None and previous[1] in BLOCKING:
        return RETRY
    free = [s for s in range(overlap) if s not in used]
    if not free:
        # The counter said there was room but the rows disagree: never trust one alone.
        log.error("review item %s: live_count=%s but slots %s are taken", item_pk, live_count, used)
        return RETRY
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
            rows = fetch(_claim_fast_sql(key), params)
    except IntegrityError as exc:
        log.info("one-statement claim lost a race (%s); taking the careful path", exc)
        return None, None
    except OperationalError as exc:
        if not retryable(exc):
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
        f"& {SHUFFLE_SPACE - 1} AS off FROM ({_claim_context_sql(key, now_sql()[0])}) x), "
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
    now, now_params = now_sql()
    rows = fetch(
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
            if not retryable(exc):
                raise
            result = RETRY
        if result is RETRY:
            # Lock holders finish in milliseconds; back off a little, with jitter.
            time.sleep(random.uniform(0.002, 0.01) * (attempt + 1))
            continue
        return result  # a Claim, or None: nothing left
    raise ClaimBusy(campaign.slug)
