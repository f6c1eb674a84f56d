"""One attempt at one generation row: claim, call the provider, store the answer (or schedule
a retry), then open the row's review items and flip the campaign once nothing is left to run.

The database is the source of truth. A Celery message only says "look at row N":
- the claim is a conditional UPDATE (pending, or running with a lapsed lease) that bumps
  `attempts`; at the cap the row fails instead, so redeliveries (acks_late +
  reject_on_worker_lost has no requeue cap of its own) can never loop;
- the per-contender concurrency limit is a semaphore made of the rows themselves: rows with a
  live lease, whatever their status (a cancelled row keeps its lease while its call is still
  in flight, and only the end of that call frees the slot). Claims for one contender serialize on a lock of the contender row
  (PostgreSQL) or on SQLite's single writer, so the count cannot be raced. It works across
  any number of workers and in the embedded SQLite + filesystem-broker mode alike;
- the result is stored only while the claim token still matches, so a duplicate or late call
  never makes a second output (it is counted in `discarded_calls`);
- a task with tools or turns is run by tasks/generation/conversation.py (every turn's tool loop), its
  state saved on the row after every model call under the claim, and stored once at the end
  like a single call: an attempt that fails mid-loop is resumed by the next one from its last
  saved step (docs/tools.md, "Resuming");
- every paid call is counted: the tokens and cost of a call whose answer was not kept are
  added to the row's `retried_*` fields and, once it is stored, to its totals.
"""

from __future__ import annotations

import functools
import logging
import random
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import DecimalField, F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from tasks import review_side
from tasks.generation import providers
from tasks.generation.claim_waits import slot_releases
from tasks.generation.conversation import (
    LoopAbandoned,
    TranscriptTooLong,
    conversation_run,
    single_result,
)
from tasks.generation.grading import graded_fields
from tasks.generation.lease_keeper import lease_keeper
from tasks.generation.prices import Usage
from tasks.generation.providers.base import cost_of
from tasks.generation.sample_seed import DERIVED, for_sample
from tasks.generation.services import campaign_status_refresh
from tasks.generation.sql import generation_claim
from tasks.models import Generation, Provider

log = logging.getLogger(__name__)
S = Generation.Status


@dataclass
class RunOutcome:
    action: str  # done | failed | retry | busy | skip | discarded
    countdown: float = 0.0
    detail: str = ""


def backoff_seconds(attempt: int, retry_after: float | None) -> float:
    """Exponential backoff with full jitter; never sooner than the provider's Retry-After."""
    ceiling = min(
        settings.GENERATION_BACKOFF_MAX,
        settings.GENERATION_BACKOFF_BASE * (2 ** max(attempt - 1, 0)),
    )
    delay = random.uniform(ceiling / 2, ceiling) if ceiling > 0 else 0.0
    if retry_after is not None:
        delay = max(delay, min(retry_after, settings.GENERATION_BACKOFF_MAX))
    return delay


# Columns a claim, call and store never read: not fetched (nor JSON-decoded) on the hot path.
_CLAIM_DEFERRED = (
    "output",
    "check_results",
    "task__reference",
    "task__metadata",
    "campaign__rubric",
    "campaign__weights",
    "campaign__name",
)


# How long a claim that finds every slot of its contender taken waits in its worker thread for
# one to free up before the message is re-queued through the broker. Far below the lease and
# the soft time limit; a re-queue costs a broker round trip, a re-read and a queued_at UPDATE.
CLAIM_WAIT_SECONDS = 3.0
# While waiting, the claim is retried at least this often: slots freed by other processes (or
# by a lapsed lease) send no wake-up to this one.
CLAIM_POLL_SECONDS = 0.1
# The wake-ups of threads waiting at a claim live in tasks/generation/claim_waits.py.


def _claim(
    generation_id: int, *, wait: float = 0.0
) -> tuple[Generation | None, str, RunOutcome | None]:
    """Claim a row for one attempt. Returns (row, token, None) or (None, '', outcome).

    The row is read without a lock; the claim itself is one conditional UPDATE that matches
    only while the row is as read and the contender has a free slot, so the read is only
    advisory (a stale read makes the UPDATE match nothing). While every slot is taken the
    UPDATE is retried for up to `wait` seconds, woken as soon as a thread of this process
    frees a slot of the contender (by at most CLAIM_WAITERS threads of a process at once, and
    never by so many of a worker's threads that other contenders' jobs wait for one), before
    the caller re-queues the row ("busy").
    """
    gen, outcome = _claim_read(generation_id)
    if outcome is not None:
        return None, "", outcome
    deadline = time.monotonic() + wait
    while True:
        seen = slot_releases.count(gen.contender_id)
        token = _claim_update(gen)
        if token:
            gen.attempts += 1
            return gen, token, None
        remaining = deadline - time.monotonic()
        # No check here whether the row itself changed (cancelled, claimed by a duplicate):
        # that is rare, and the bounded wait ends in the check below.
        if remaining <= 0 or not slot_releases.wait(
            gen.contender_id, seen, min(remaining, CLAIM_POLL_SECONDS)
        ):
            break
    # Every slot is taken, or someone else changed the row first (then it is theirs).
    unchanged = Generation.objects.filter(pk=gen.pk, status=gen.status, attempts=gen.attempts)
    if gen.status == S.PENDING:
        busy = unchanged.update(queued_at=timezone.now())
    else:
        busy = unchanged.exists()
    if busy:
        return None, "", RunOutcome("busy", countdown=random.uniform(0.05, 0.3))
    return None, "", RunOutcome("skip", detail="lost the claim race")


def _claim_read(generation_id: int) -> tuple[Generation | None, RunOutcome | None]:
    """Read the row to claim, or decide it is not claimable (fails it at the attempt cap)."""
    now = timezone.now()
    gen = (
        Generation.objects.select_related("contender", "campaign", "task")
        .defer(*_CLAIM_DEFERRED)
        .filter(pk=generation_id)
        .first()
    )
    if gen is None:
        return None, RunOutcome("skip", detail="no such row")
    if gen.status in (S.DONE, S.FAILED, S.CANCELLED):
        return None, RunOutcome("skip", detail=f"already {gen.status}")
    if gen.status == S.RUNNING and gen.lease_expires_at and gen.lease_expires_at > now:
        return None, RunOutcome("skip", detail="claimed by another worker")
    if gen.status == S.PENDING and gen.queued_at and gen.queued_at > now + timedelta(seconds=0.25):
        # A retry is scheduled later; this is an early duplicate message.
        return None, RunOutcome("skip", detail="a later attempt is scheduled")
    if gen.contender.provider == Provider.IMPORTED:
        return None, RunOutcome("skip", detail="imported contender")
    if gen.attempts >= settings.GENERATION_MAX_ATTEMPTS:
        done = Generation.objects.filter(
            pk=gen.pk, status=gen.status, attempts=gen.attempts
        ).update(
            status=S.FAILED,
            finished_at=now,
            claim_token="",
            lease_expires_at=None,
            error=(gen.error or "") + f" [gave up after {gen.attempts} attempts]",
        )
        return None, RunOutcome("failed" if done else "skip", detail="attempt cap reached")
    return gen, None


def _claim_update(gen: Generation) -> str:
    """One claim attempt: the new claim token, or '' when it matched nothing (the
    contender's semaphore: tasks/generation/sql.py)."""
    now = timezone.now()
    token = secrets.token_hex(12)
    claimed = generation_claim(
        generation=gen,
        max_concurrency=gen.contender.max_concurrency,
        token=token,
        now=now,
        lease_until=now + timedelta(seconds=settings.GENERATION_LEASE_SECONDS),
    )
    return token if claimed else ""


def generation_run(*, generation_id: int, claim_wait: float = 0.0) -> RunOutcome:
    """One attempt at one row: claim, call the provider, store the result or schedule a retry.

    `claim_wait`: how long to wait in this thread for a slot of the contender before giving
    up as "busy" (a worker passes CLAIM_WAIT_SECONDS).
    """
    gen, token, outcome = _claim(generation_id, wait=claim_wait)
    if outcome is not None:
        if outcome.action == "failed":
            _after_finish(generation_id)
        return outcome
    # The process's lease keeper renews the short lease while the call runs (a worker); a
    # tool loop's saves renew it too, after every model call.
    lease_keeper.hold(token)
    try:
        return _call_and_store(gen, token)
    finally:
        lease_keeper.release(token)


def _call_and_store(gen: Generation, token: str) -> RunOutcome:
    try:
        result = conversation_run(
            contender=for_sample(
                gen.contender,
                gen.sample_index,
                mode=(gen.campaign.weights or {}).get("sample_seeds", DERIVED),
            ),
            task=gen.task,
            single_turn=gen.single_turn,
            save_progress=functools.partial(_progress_save, gen.pk, token),
            resume=gen.loop_progress,
        )
    except LoopAbandoned as exc:
        _spent_record(gen, exc.spent)
        return _discard(gen, token)
    except TranscriptTooLong as exc:
        _spent_record(gen, exc.spent)
        return _retry_later(gen, token, exc.message, None)
    except providers.PermanentError as exc:
        return _fail(gen, token, exc.message)
    except providers.RetryableError as exc:
        return _retry_later(gen, token, exc.message, exc.retry_after)
    except (OperationalError, InterfaceError) as exc:  # the database, during a tool loop
        return _store_failed(gen, token, exc)
    except Exception as exc:  # noqa: BLE001 - includes SoftTimeLimitExceeded; the attempt cap bounds it
        log.exception("generation %s: unexpected error", gen.pk)
        return _retry_later(gen, token, f"{type(exc).__name__}: {exc}", None)
    try:
        return _store(gen, token, result)
    except (OperationalError, InterfaceError) as exc:
        return _store_failed(gen, token, exc, result)


def _store_failed(gen: Generation, token: str, exc: Exception, result=None) -> RunOutcome:
    """The database failed while the result was being stored: release the row for a retry at
    once rather than leave it running under a lease nobody will use. If the database cannot
    even take that, the job comes back once the lease has lapsed (nothing renews it now), when
    the row can be claimed again."""
    message = "the result could not be stored: the database was unreachable"
    log.warning("generation %s: %s (%s)", gen.pk, message, exc)
    try:
        if result is not None:  # paid for, and asked again (a loop: its last step only)
            _spent_record(gen, _result_spent(result))
        outcome = _retry_later(gen, token, message, None)
    except (OperationalError, InterfaceError):
        return RunOutcome(
            "retry", countdown=settings.GENERATION_LEASE_SECONDS + 1.0, detail=message
        )
    return outcome


def _update_claimed(pk: int, token: str, values: dict) -> int:
    """UPDATE the row only while our claim still holds (the store's fence)."""
    return Generation.objects.filter(pk=pk, claim_token=token, status=S.RUNNING).update(**values)


def _progress_save(pk: int, token: str, state: dict | None) -> bool:
    """Save a tool loop's state after a step (None: drop it) and extend the lease; False when
    the row is no longer ours (cancelled, or its lease lapsed and it was reclaimed): the loop
    then stops calling the model."""
    lease = timezone.now() + timedelta(seconds=settings.GENERATION_LEASE_SECONDS)
    return bool(
        Generation.objects.filter(pk=pk, claim_token=token, status=S.RUNNING).update(
            lease_expires_at=lease, loop_progress=state
        )
    )


def _result_spent(result) -> tuple[int, int]:
    """The tokens of a result that was not stored and will be asked for again. Not those of a
    loop: every step of it was saved on the row, and the attempt that stores the row resumes
    from them (at its end: without a call)."""
    if getattr(result, "transcript", None):
        return 0, 0
    return result.input_tokens or 0, result.output_tokens or 0


def _spent_record(gen: Generation, spent: tuple[int, int]) -> None:
    """Count a paid call whose answer was not kept: in the row's retried_* fields, and in its
    totals once it is stored (now, if it already is: another attempt stored it)."""
    tokens_in, tokens_out = spent
    if not (tokens_in or tokens_out):
        return
    cost = cost_of(gen.contender, Usage(input_tokens=tokens_in, output_tokens=tokens_out)) or 0
    with transaction.atomic():
        row = Generation.objects.filter(pk=gen.pk)
        row.update(
            retried_input_tokens=F("retried_input_tokens") + tokens_in,
            retried_output_tokens=F("retried_output_tokens") + tokens_out,
            retried_cost=F("retried_cost") + cost,
        )
        row.filter(status=S.DONE).update(
            input_tokens=Coalesce("input_tokens", 0) + tokens_in,
            output_tokens=Coalesce("output_tokens", 0) + tokens_out,
            cost=Coalesce("cost", Value(0, output_field=DecimalField())) + cost,
        )


def _store(gen: Generation, token: str, result) -> RunOutcome:
    if isinstance(result, providers.ProviderResult):  # one call, not yet priced
        result = single_result(gen.contender, result)
    graded = graded_fields(
        generation=gen,
        campaign=gen.campaign,
        output=result.text,
        transcript=getattr(result, "transcript", []),
        reasoning=result.reasoning,
    )
    with transaction.atomic():  # the totals gain what earlier attempts spent, together
        stored = _update_claimed(gen.pk, token, _stored_fields(gen, result, graded))
        if stored:
            # Paid calls of earlier attempts whose answers were not kept count too.
            Generation.objects.filter(
                Q(retried_input_tokens__gt=0) | Q(retried_output_tokens__gt=0), pk=gen.pk
            ).update(
                input_tokens=Coalesce("input_tokens", 0) + F("retried_input_tokens"),
                output_tokens=Coalesce("output_tokens", 0) + F("retried_output_tokens"),
                cost=Coalesce("cost", Value(0, output_field=DecimalField())) + F("retried_cost"),
            )
    if not stored:
        return _discard(gen, token, result)
    # The slot is free from here: a thread waiting for it starts its call while this one
    # opens review items and goes back to the broker.
    slot_releases.released(gen.contender_id)
    _after_finish(gen.pk, gen=gen)
    return RunOutcome("done")


def _stored_fields(gen: Generation, result, graded: dict) -> dict:
    """The columns a stored answer sets: its text, measures (each call priced on its own by
    the conversation runner), grading, and the row released."""
    return {
        "status": S.DONE,
        "output": result.text,
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "cache_read_tokens": result.cache_read_tokens,
        "cache_write_tokens": result.cache_write_tokens,
        "reasoning_tokens": result.reasoning_tokens,
        "reasoning": result.reasoning,
        "latency_ms": result.latency_ms,
        "ttft_ms": result.ttft_ms,
        "tokens_per_s": result.tokens_per_s,
        "cost": result.cost,
        "reasoning_cost": result.reasoning_cost,
        "finish_reason": (result.finish_reason or "")[:50],
        "served_model": result.served_model,
        "fingerprint": result.fingerprint,
        "error": "",
        **graded,
        "finished_at": timezone.now(),
        "lease_expires_at": None,
        "claim_token": "",
        "loop_progress": None,
    }


def _discard(gen: Generation, token: str, result=None) -> RunOutcome:
    # Someone else owns the row now (cancelled, or our lease lapsed and it was reclaimed).
    Generation.objects.filter(pk=gen.pk).update(discarded_calls=F("discarded_calls") + 1)
    if result is not None:
        _spent_record(gen, _result_spent(result))
    _release_discarded(gen, token)
    return RunOutcome("discarded", detail="the row was no longer ours")


def _fail(gen: Generation, token: str, message: str) -> RunOutcome:
    updated = Generation.objects.filter(pk=gen.pk, claim_token=token, status=S.RUNNING).update(
        status=S.FAILED,
        error=message[:2000],
        finished_at=timezone.now(),
        lease_expires_at=None,
        claim_token="",
        loop_progress=None,
    )
    if updated:
        slot_releases.released(gen.contender_id)
        _after_finish(gen.pk, gen=gen)
    else:
        _release_discarded(gen, token)
    return RunOutcome("failed" if updated else "discarded", detail=message)


def _retry_later(
    gen: Generation, token: str, message: str, retry_after: float | None
) -> RunOutcome:
    if gen.attempts >= settings.GENERATION_MAX_ATTEMPTS:
        return _fail(gen, token, f"{message} [gave up after {gen.attempts} attempts]")
    countdown = backoff_seconds(gen.attempts, retry_after)
    updated = Generation.objects.filter(pk=gen.pk, claim_token=token, status=S.RUNNING).update(
        status=S.PENDING,
        retries=F("retries") + 1,
        error=message[:2000],
        claim_token="",
        lease_expires_at=None,
        queued_at=timezone.now() + timedelta(seconds=countdown),
    )
    if not updated:
        _release_discarded(gen, token)
        return RunOutcome("discarded", detail=message)
    slot_releases.released(gen.contender_id)
    return RunOutcome("retry", countdown=countdown, detail=message)


def _release_discarded(gen: Generation, token: str) -> None:
    """A call whose row was cancelled under it has ended: free the slot it still held."""
    if Generation.objects.filter(pk=gen.pk, claim_token=token).update(
        claim_token="", lease_expires_at=None
    ):
        slot_releases.released(gen.contender_id)


def _after_finish(generation_id: int, gen: Generation | None = None) -> None:
    """Open the row's review items, then flip the campaign once nothing is left to run.

    Runs after the row's own update committed, so the last row to finish always sees every
    other row finished. The status refresh (a few more queries) only runs when no row of the
    campaign is queued or running.
    """
    if gen is None:
        gen = Generation.objects.select_related("campaign").get(pk=generation_id)
    # A single-turn regime row is scored by its checks only: it is never in an item.
    if not gen.single_turn and gen.sample_index < gen.campaign.reviewed_samples:
        review_side.review_items_open_for(generation_id=gen.pk)
    active = Generation.objects.filter(campaign_id=gen.campaign_id).filter(
        Q(status=S.RUNNING) | Q(status=S.PENDING, queued_at__isnull=False)
    )
    if not active.exists():
        campaign_status_refresh(campaign_id=gen.campaign_id)
