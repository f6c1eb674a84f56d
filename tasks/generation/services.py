"""Generation services: a campaign's rows, queueing them, cancel, retry, the campaign's status.

The database is the source of truth; a Celery message only says "look at row N" (the attempt
itself is tasks/generation/run.py). Queueing is a database write first, and the messages go
out once it has committed: a broker that does not take them leaves the rows queued for the
reconciler (tasks/generation/reconcile.py).

Two workflows cross into other packages here, each named where it starts: the review side
creates a campaign's review items when its rows are made (`tasks.review_side`,
docs/decisions/0009-cross-app-workflows.md), and a monitor run whose generation ended is
graded by the monitors package, through its Celery job sent by registered name.
"""

from __future__ import annotations

import functools
import logging
import os

from celery import current_app
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from evalsite.text import counted
from tasks import review_side
from tasks.models import Campaign, Generation, Provider

log = logging.getLogger(__name__)
S = Generation.Status


class GenerationError(Exception):
    """A campaign cannot be queued as it is (e.g. a missing API key variable)."""


class GenerationNotSent(GenerationError):
    """Rows are queued in the database but the broker did not take their messages."""

    def __init__(self, count: int):
        self.count = count
        super().__init__(
            f"{counted(count, 'generation')} queued but not yet sent to the workers: the task "
            "broker (Redis) is unreachable. They stay queued, and are sent within about two "
            "minutes of the broker answering again; there is no need to start them again."
        )


def generations_send(ids: list[int]) -> None:
    """One message per row once the transaction has committed (a worker must find the row).

    If the broker does not take one, GenerationNotSent is raised out of the commit, after
    it, and the rows not sent (Django drops the later callbacks) stay queued in the
    database for the reconciler."""
    for position, pk in enumerate(ids):
        transaction.on_commit(functools.partial(_send, pk, unsent=len(ids) - position))


# The jobs are sent by their registered names (docs/decisions/0005-celery-job-names.md): the
# job modules are entry points (tasks/jobs.py, tasks/monitors/jobs.py) that import this one.
GENERATION_RUN_JOB = "tasks.generation_run"
MONITOR_RUN_FINISH_JOB = "tasks.monitor_run_finish"


def _send(pk: int, *, unsent: int) -> None:
    try:
        current_app.send_task(GENERATION_RUN_JOB, (pk,))
    except BrokerError as exc:
        log.warning("broker unreachable, %d generations left for the reconciler: %s", unsent, exc)
        raise GenerationNotSent(unsent) from exc


def generation_rows_create(*, campaign: Campaign) -> int:
    """One row per (task, contender, sample), and for a conversation task that also states
    its request in one message (`single_turn`), its own samples of that single-turn regime
    (docs/conversations.md; not in a monitor run, which grades the golden set's tasks as
    they are); idempotent (existing rows are kept)."""
    tasks = list(campaign.testset.tasks.values_list("pk", "turns", "single_turn"))
    both = campaign.kind != Campaign.Kind.MONITOR_RUN
    regimes = [(t, False) for t, _, _ in tasks] + [
        (t, True) for t, turns, one in tasks if both and turns and one
    ]
    contender_ids = list(campaign.contenders.values_list("pk", flat=True))
    # Only the missing rows are built: an import calls this on a campaign that has them all.
    have = set(
        campaign.generations.values_list("task_id", "contender_id", "sample_index", "single_turn")
    )
    rows = [
        Generation(campaign=campaign, task_id=t, contender_id=c, sample_index=s, single_turn=one)
        for t, one in regimes
        for c in contender_ids
        for s in range(campaign.samples_per_task)
        if (t, c, s, one) not in have
    ]
    if not rows:
        return 0
    Generation.objects.bulk_create(rows, batch_size=1000, ignore_conflicts=True)
    return campaign.generations.count() - len(have)


def missing_api_keys(*, campaign: Campaign) -> list[str]:
    problems = []
    for contender in campaign.contenders.exclude(provider=Provider.IMPORTED):
        if contender.api_key_env and not os.environ.get(contender.api_key_env):
            problems.append(
                f"contender {contender.name}: environment variable {contender.api_key_env} is not set"
            )
    return problems


@transaction.atomic
def generation_enqueue(*, campaign: Campaign) -> int:
    """Queue every row not yet queued (or cancelled) for the callable contenders.

    Checked first, before anything is queued: API key variables exist. Returns rows queued.
    """
    problems = missing_api_keys(campaign=campaign)
    if problems:
        raise GenerationError(
            "; ".join(problems) + ". Nothing was queued: set the variable for the web server "
            "and the Celery workers (they call the model), restart them, and start again."
        )
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    generation_rows_create(campaign=campaign)
    review_side.review_items_sync(campaign=campaign)  # its review items exist
    now = timezone.now()
    rows = (
        Generation.objects.filter(campaign=campaign)
        .exclude(contender__provider=Provider.IMPORTED)
        .filter(Q(status=S.PENDING, queued_at__isnull=True) | Q(status=S.CANCELLED))
    )
    ids = list(rows.values_list("pk", flat=True))
    Generation.objects.filter(pk__in=ids).update(status=S.PENDING, queued_at=now, finished_at=None)
    if ids:
        Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.GENERATING)
        generations_send(ids)
    else:
        campaign_status_refresh(campaign_id=campaign.pk)
    return len(ids)


@transaction.atomic
def generation_cancel(*, campaign: Campaign) -> int:
    """Stop a campaign's generation: queued and running rows become cancelled (Generate
    queues them again). Rows never queued stay as they are, and with nothing to stop the
    campaign keeps its status: a campaign in review stays open to its reviewers.

    A call already in flight finishes on its worker but its result is discarded (the store
    is conditional on the row still being claimed). Its claim token and lease stay until
    then: the call still holds a slot of the contender's concurrency limit.
    """
    now = timezone.now()
    count = (
        Generation.objects.filter(campaign=campaign)
        .filter(Q(status=S.RUNNING) | Q(status=S.PENDING, queued_at__isnull=False))
        .update(status=S.CANCELLED, finished_at=now)
    )
    if count:
        Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.CANCELLED)
    return count


@transaction.atomic
def generation_retry_failed(*, campaign: Campaign, ids: list[int] | None = None) -> int:
    """Give failed rows (all of the campaign's, or those of `ids`) a fresh attempt budget and
    queue them again."""
    problems = missing_api_keys(campaign=campaign)
    if problems:
        raise GenerationError(
            "; ".join(problems) + ". Nothing was queued: set the variable for the web server "
            "and the Celery workers (they call the model), restart them, and start again."
        )
    rows = Generation.objects.filter(campaign=campaign, status=S.FAILED).exclude(
        contender__provider=Provider.IMPORTED
    )
    if ids is not None:
        rows = rows.filter(pk__in=ids)
    ids = list(rows.values_list("pk", flat=True))
    Generation.objects.filter(pk__in=ids, status=S.FAILED).update(
        status=S.PENDING,
        attempts=0,
        error="",
        queued_at=timezone.now(),
        finished_at=None,
        claim_token="",
        loop_progress=None,
    )
    if ids:
        Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.GENERATING)
        generations_send(ids)
    return len(ids)


def campaign_status_refresh(*, campaign_id: int) -> None:
    """generating -> reviewing once nothing is queued or running (draft too, once all is done)."""
    active = Generation.objects.filter(campaign_id=campaign_id).filter(
        Q(status=S.RUNNING) | Q(status=S.PENDING, queued_at__isnull=False)
    )
    if active.exists():
        return
    if Campaign.objects.filter(pk=campaign_id, status=Campaign.Status.GENERATING).update(
        status=Campaign.Status.REVIEWING
    ):
        _generation_ended(campaign_id)
    if not Generation.objects.filter(campaign_id=campaign_id, status=S.PENDING).exists():
        Campaign.objects.filter(pk=campaign_id, status=Campaign.Status.DRAFT).update(
            status=Campaign.Status.REVIEWING
        )


def _generation_ended(campaign_id: int) -> None:
    """A monitor run's generation ended: the monitors package grades it in a job, once this
    transaction committed (the monitor tick is the net)."""
    if Campaign.objects.filter(pk=campaign_id, kind=Campaign.Kind.MONITOR_RUN).exists():
        transaction.on_commit(functools.partial(_monitor_run_grade, campaign_id))


def _monitor_run_grade(campaign_id: int) -> None:
    try:
        current_app.send_task(MONITOR_RUN_FINISH_JOB, (campaign_id,))
    except BrokerError:
        log.warning("broker unreachable: monitor run of campaign %s left for the tick", campaign_id)
