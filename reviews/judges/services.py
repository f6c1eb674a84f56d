"""Judging a campaign on the generation machinery: rows, enqueue, claim, call, store, reconcile.

As for generation (tasks/generation/run.py), the database is the source of truth and a message
only says "look at row N":
- one row per (judge, item, sample, order), made once (a unique constraint); its order drawn
  at random when it is made, the swapped row showing the reverse;
- the claim is one conditional UPDATE that bumps `attempts` and takes a lease, and matches
  only while fewer than the judge's `max_concurrency` rows hold a live lease (claims of one
  judge serialize on a lock of the judge row on PostgreSQL, and on the single writer on
  SQLite), so the limit holds across any number of workers;
- the answer is stored only while the claim token still holds: a duplicate message finds the
  row claimed or done, and a call that outlived its lease is discarded;
- an answer outside the rubric is a failed attempt (its cause kept in `failures`), retried up
  to JUDGE_MAX_ATTEMPTS and then recorded as failed. It is never clamped or guessed.
"""

from __future__ import annotations

import functools
import logging
import os
import random
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from evalsite.broker import broker_queued
from reviews.judges.models import Judgement
from reviews.judges.screen import answer_shape, judge_view, versus_baseline
from reviews.judges.sql import judgement_claim
from reviews.models import ItemOutput, ReviewItem
from reviews.policy.services import policy_item_route
from tasks.blinding import render as blinding
from tasks.generation import providers
from tasks.generation.prices import call_costs, flat_table
from tasks.generation.providers.base import ProviderResult
from tasks.generation.providers.structured import structured_call
from tasks.generation.run import RunOutcome, backoff_seconds
from tasks.judges.answer import AnswerError, JudgeAnswer, answer_read, answer_schema
from tasks.judges.prompt import judge_messages
from tasks.models import Campaign, Judge

log = logging.getLogger(__name__)
S = Judgement.Status
# How long a claim that finds every slot of the judge taken waits in its worker before the
# message is re-queued, and how often it looks again meanwhile.
CLAIM_WAIT_SECONDS = 3.0
CLAIM_POLL_SECONDS = 0.05


class JudgingError(Exception):
    """A campaign cannot be judged as it is (no ready item, a missing API key variable)."""


# -- rows and enqueueing -----------------------------------------------------------------------


def judgement_rows_create(
    *, campaign: Campaign, judge: Judge, item_ids: list[int] | None = None
) -> int:
    """One row per ready item (of `item_ids` only, when given) x sample x order; existing
    rows are kept. Returns rows made."""
    outputs: dict[int, list[int]] = {}
    shown = ItemOutput.objects.filter(item__campaign=campaign, item__ready=True)
    if item_ids is not None:
        shown = shown.filter(item_id__in=item_ids)
    for item_id, output_id in shown.order_by("item_id", "pk").values_list("item_id", "pk"):
        outputs.setdefault(item_id, []).append(output_id)
    shuffler = random.SystemRandom()
    rows = []
    for item_id, ids in outputs.items():
        for sample in range(judge.samples):
            drawn = shuffler.sample(ids, len(ids))
            orders = [(False, drawn), (True, drawn[::-1])][: judge.orders]
            rows += [
                Judgement(
                    campaign=campaign,
                    judge=judge,
                    item_id=item_id,
                    sample=sample,
                    swapped=swapped,
                    order=order,
                )
                for swapped, order in orders
            ]
    before = Judgement.objects.filter(campaign=campaign, judge=judge).count()
    Judgement.objects.bulk_create(rows, batch_size=1000, ignore_conflicts=True)
    return Judgement.objects.filter(campaign=campaign, judge=judge).count() - before


def judging_problems(*, campaign: Campaign, judge: Judge) -> list[str]:
    """Why `judge` cannot judge `campaign` now ([] when it can)."""
    problems = []
    if judge.api_key_env and not os.environ.get(judge.api_key_env):
        problems.append(
            f"judge {judge.name}: environment variable {judge.api_key_env} is not set (set it "
            "for the web server and the Celery workers, and restart them)"
        )
    if not ReviewItem.objects.filter(campaign=campaign, ready=True).exists():
        problems.append(
            f"campaign {campaign.slug} has no review item ready to judge (every output of an "
            "item must exist first: generate, or import outputs)"
        )
    return problems


def judging_enqueue(*, campaign: Campaign, judge: Judge) -> int:
    """Make the rows and queue every row not queued yet, and failed rows with a fresh attempt
    budget. Nothing is queued when a problem stands (JudgingError). Returns rows queued."""
    problems = judging_problems(campaign=campaign, judge=judge)
    if problems:
        raise JudgingError("; ".join(problems) + ". Nothing was queued.")
    with transaction.atomic():
        judgement_rows_create(campaign=campaign, judge=judge)
        rows = Judgement.objects.filter(campaign=campaign, judge=judge).filter(
            Q(status=S.PENDING, queued_at__isnull=True) | Q(status=S.FAILED)
        )
        ids = list(rows.values_list("pk", flat=True))
        Judgement.objects.filter(pk__in=ids).update(
            status=S.PENDING, attempts=0, queued_at=timezone.now(), finished_at=None, error=""
        )
        _enqueue(ids)
    return len(ids)


def judging_enqueue_items(*, campaign: Campaign, judge: Judge, item_ids: list[int]) -> int:
    """Make the rows of these ready items and queue those never queued (a review policy's
    judge starting on the items that just became ready; failed rows stay failed, the *Judge*
    button retries them). The caller checks judging_problems first. Returns rows queued."""
    with transaction.atomic():
        judgement_rows_create(campaign=campaign, judge=judge, item_ids=item_ids)
        rows = Judgement.objects.filter(
            campaign=campaign, judge=judge, item_id__in=item_ids, status=S.PENDING
        ).filter(queued_at__isnull=True)
        ids = list(rows.values_list("pk", flat=True))
        Judgement.objects.filter(pk__in=ids, queued_at__isnull=True).update(
            queued_at=timezone.now()
        )
        _enqueue(ids)
    return len(ids)


def _enqueue(ids: list[int]) -> None:
    """One message per row once the rows are committed (a worker must find them)."""
    transaction.on_commit(functools.partial(_send, list(ids)))


def _send(ids: list[int]) -> None:
    from reviews.judges.jobs import judgement_run_job

    for position, pk in enumerate(ids):
        try:
            judgement_run_job.delay(pk)
        except BrokerError as exc:
            # The rows stay queued in the database: the reconciler sends them once it answers.
            log.warning(
                "broker unreachable, %d judgements left for the reconciler: %s",
                len(ids) - position,
                exc,
            )
            return


# -- one attempt -------------------------------------------------------------------------------


def judgement_run(*, judgement_id: int, claim_wait: float = 0.0) -> RunOutcome:
    """One attempt at one judgement: claim, call the judge, check the answer, store it (or
    record the failed attempt and schedule the next). The item's last judgement to finish
    routes it under a review policy (people or the judge settle it: reviews/policy/)."""
    outcome = _attempt(judgement_id, claim_wait)
    if outcome.action in ("done", "failed"):
        # After the row's own commit: of two workers finishing an item's last two rows, the
        # later one sees both finished, and the route's fence lets one of them through.
        item_id = Judgement.objects.filter(pk=judgement_id).values_list("item_id", flat=True)
        for pk in item_id:
            policy_item_route(item_id=pk)
    return outcome


def _attempt(judgement_id: int, claim_wait: float) -> RunOutcome:
    row, token, outcome = _claim(judgement_id, wait=claim_wait)
    if outcome is not None:
        return outcome
    try:
        view = judge_view(
            campaign=row.campaign,
            item_id=row.item_id,
            order=row.order,
            preference_only=versus_baseline(row.item.pair_key),
        )
        shape = answer_shape(view)
        messages = judge_messages(view, judge_instructions=row.judge.instructions)
        raw, result = structured_call(row.judge, messages, answer_schema(shape))
    except providers.PermanentError as exc:
        cause = f"the endpoint refused the request: {exc.message}"
        return _attempt_failed(row, token, Failure(cause, retry=False))
    except providers.RetryableError as exc:
        return _attempt_failed(row, token, Failure(exc.message, retry_after=exc.retry_after))
    except Exception as exc:  # noqa: BLE001 - includes SoftTimeLimitExceeded; the cap bounds it
        log.exception("judgement %s: unexpected error", row.pk)
        return _attempt_failed(row, token, Failure(f"{type(exc).__name__}: {exc}"))
    spent = _spent(row.judge, result)
    try:
        answer = answer_read(raw, shape)
    except AnswerError as exc:
        # Asked again at once: the endpoint is fine, the answer was not.
        cause = f"answer outside the rubric: {exc.cause}"
        return _attempt_failed(row, token, Failure(cause, countdown=0.0, spent=spent, raw=raw))
    return _store(row, token, answer, raw=raw, spent={**spent, "latency_ms": result.latency_ms})


def _spent(judge: Judge, result: ProviderResult) -> dict:
    cost = call_costs(
        flat_table(judge.price_in_per_mtok, judge.price_out_per_mtok), result.usage()
    )[0]
    return {
        "input_tokens": result.input_tokens or 0,
        "output_tokens": result.output_tokens or 0,
        "cost": cost or 0,
    }


def _charged(spent: dict | None) -> dict:
    """UPDATE values adding one call's tokens and cost to the row's totals."""
    if not spent:
        return {}
    return {
        "input_tokens": F("input_tokens") + spent["input_tokens"],
        "output_tokens": F("output_tokens") + spent["output_tokens"],
        "cost": F("cost") + spent["cost"],
    }


def _claim(judgement_id: int, *, wait: float) -> tuple[Judgement | None, str, RunOutcome | None]:
    row, outcome = _claim_read(judgement_id)
    if outcome is not None:
        return None, "", outcome
    deadline = time.monotonic() + wait
    while True:
        token = _claim_update(row)
        if token:
            row.attempts += 1
            return row, token, None
        if time.monotonic() >= deadline:
            break
        time.sleep(CLAIM_POLL_SECONDS)
    unchanged = Judgement.objects.filter(pk=row.pk, status=row.status, attempts=row.attempts)
    if unchanged.exists():
        return None, "", RunOutcome("busy", countdown=random.uniform(0.05, 0.3))
    return None, "", RunOutcome("skip", detail="lost the claim race")


def _claim_read(judgement_id: int) -> tuple[Judgement | None, RunOutcome | None]:
    """The row to claim, or why not (at the attempt cap the row fails here)."""
    now = timezone.now()
    row = (
        Judgement.objects.select_related("judge", "campaign", "item")
        .defer("raw_answer", "reasoning", "scores")
        .filter(pk=judgement_id)
        .first()
    )
    if row is None:
        return None, RunOutcome("skip", detail="no such row")
    if row.status in (S.DONE, S.FAILED):
        return None, RunOutcome("skip", detail=f"already {row.status}")
    if row.status == S.RUNNING and row.lease_expires_at and row.lease_expires_at > now:
        return None, RunOutcome("skip", detail="claimed by another worker")
    if row.status == S.PENDING and row.queued_at and row.queued_at > now + timedelta(seconds=0.25):
        return None, RunOutcome("skip", detail="a later attempt is scheduled")
    if row.attempts >= settings.JUDGE_MAX_ATTEMPTS:
        done = Judgement.objects.filter(pk=row.pk, status=row.status, attempts=row.attempts).update(
            status=S.FAILED,
            finished_at=now,
            claim_token="",
            lease_expires_at=None,
            error=(row.error or "worker lost") + f" [gave up after {row.attempts} attempts]",
        )
        return None, RunOutcome("failed" if done else "skip", detail="attempt cap reached")
    return row, None


def _claim_update(row: Judgement) -> str:
    """One claim attempt: the claim token, or '' when every slot of the judge is taken (or the
    row changed since it was read): the semaphore of reviews/judges/sql.py."""
    now = timezone.now()
    token = secrets.token_hex(12)
    lease_until = now + timedelta(seconds=settings.GENERATION_LEASE_SECONDS)
    claimed = judgement_claim(row=row, token=token, now=now, lease_until=lease_until)
    return token if claimed else ""


def _fenced(row: Judgement, token: str) -> QuerySet[Judgement]:
    """The row, only while our claim holds (the store's fence)."""
    return Judgement.objects.filter(pk=row.pk, claim_token=token, status=S.RUNNING)


def _store(row: Judgement, token: str, answer: JudgeAnswer, *, raw: str, spent: dict) -> RunOutcome:
    """Store the answer un-permuted: labels become the ItemOutput ids they stood for."""
    by_label = dict(zip(blinding.labels(len(row.order)), row.order, strict=True))
    scores = (
        {str(by_label[label]): dims for label, dims in answer.scores.items()}
        if answer.scores
        else None
    )
    preference = answer.preference or ""
    if preference in by_label:
        preference = str(by_label[preference])
    latency = spent.pop("latency_ms", None)
    stored = _fenced(row, token).update(
        status=S.DONE,
        scores=scores,
        preference=preference,
        reasoning=answer.reasoning,
        raw_answer=raw,
        latency_ms=latency,
        error="",
        finished_at=timezone.now(),
        lease_expires_at=None,
        claim_token="",
        **_charged(spent),
    )
    if not stored:
        return _discard(row, spent)
    return RunOutcome("done")


@dataclass(frozen=True)
class Failure:
    """A failed attempt: its cause, whether another attempt may help, and what it cost."""

    cause: str
    retry: bool = True
    retry_after: float | None = None  # the endpoint's Retry-After
    countdown: float | None = None  # None: backoff with jitter
    spent: dict | None = None
    raw: str = ""


def _attempt_failed(row: Judgement, token: str, failure: Failure) -> RunOutcome:
    """Record a failed attempt with its cause; schedule the next, or fail the row at the cap
    (or at once when retrying cannot help)."""
    cause = failure.cause[:2000]
    values = {
        "failures": [*(row.failures or []), {"attempt": row.attempts, "cause": cause}],
        "error": cause,
        "raw_answer": failure.raw[:100_000],
        "claim_token": "",
        "lease_expires_at": None,
        **_charged(failure.spent),
    }
    if not failure.retry or row.attempts >= settings.JUDGE_MAX_ATTEMPTS:
        values.update(status=S.FAILED, finished_at=timezone.now())
        if failure.retry:
            values["error"] = f"{cause} [gave up after {row.attempts} attempts]"
        outcome = RunOutcome("failed", detail=cause)
    else:
        wait = failure.countdown
        if wait is None:
            wait = backoff_seconds(row.attempts, failure.retry_after)
        values.update(status=S.PENDING, queued_at=timezone.now() + timedelta(seconds=wait))
        outcome = RunOutcome("retry", countdown=wait, detail=cause)
    if not _fenced(row, token).update(**values):
        return _discard(row, failure.spent)
    return outcome


def _discard(row: Judgement, spent: dict | None) -> RunOutcome:
    # Someone else owns the row now (our lease lapsed and it was reclaimed): the call still
    # cost what it cost.
    Judgement.objects.filter(pk=row.pk).update(
        discarded_calls=F("discarded_calls") + 1, **_charged(spent)
    )
    return RunOutcome("discarded", detail="the row was no longer ours")


# -- the reconciler ----------------------------------------------------------------------------


def _broker_idle() -> bool:
    try:
        return broker_queued() == 0
    except BrokerError:
        return False  # nothing can be sent now anyway


def judgement_reconcile(*, requeue_after: float | None = None, limit: int = 5000) -> dict:
    """Beat job: rows whose worker died (lapsed lease) go back to pending; queued rows whose
    message was lost are sent again: due for GENERATION_REQUEUE_IDLE_AFTER seconds while the
    broker's queue is empty (no message can be waiting), else only after
    GENERATION_REQUEUE_AFTER, so a long backlog is not sent twice. Duplicates are harmless
    anyway: the claim lets one through."""
    if requeue_after is None:
        requeue_after = (
            settings.GENERATION_REQUEUE_IDLE_AFTER
            if _broker_idle()
            else settings.GENERATION_REQUEUE_AFTER
        )
    now = timezone.now()
    with transaction.atomic():
        lapsed = list(
            Judgement.objects.filter(status=S.RUNNING, lease_expires_at__lt=now).values_list(
                "pk", flat=True
            )[:limit]
        )
        Judgement.objects.filter(pk__in=lapsed, status=S.RUNNING, lease_expires_at__lt=now).update(
            status=S.PENDING, claim_token="", lease_expires_at=None, queued_at=now
        )
        stale = list(
            Judgement.objects.filter(
                status=S.PENDING, queued_at__lt=now - timedelta(seconds=requeue_after)
            ).values_list("pk", flat=True)[:limit]
        )
        Judgement.objects.filter(pk__in=stale, status=S.PENDING).update(queued_at=now)
        ids = sorted(set(lapsed) | set(stale))
        _enqueue(ids)
    return {"lapsed": len(lapsed), "requeued": len(ids)}
