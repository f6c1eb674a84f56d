"""The reconciler (beat, every minute): generation work lost to a dead worker or a lost
message is queued again (docs/operations.md, "Celery delivery")."""

from __future__ import annotations

import contextlib
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from evalsite.broker import broker_queued
from tasks import review_side
from tasks.generation.services import GenerationNotSent, campaign_status_refresh, generations_send
from tasks.models import Campaign, Generation, Provider

S = Generation.Status


def generation_reconcile(
    *, requeue_after: float | None = None, limit: int = 5000, broker_idle: bool | None = None
) -> dict:
    """Beat job: re-enqueue lost work.

    - running rows whose lease lapsed (their worker died): back to pending and queued (also
      done every few seconds by generation_lapsed_requeue alone);
    - queued rows nobody picked up (a lost message: never sent while the broker was down, or
      taken by a job that failed while the database was down): queued again. A row whose
      message waits behind a backlog looks the same, so the threshold depends on the broker:
      with its queue empty (`broker_idle`, asked when None) no row has a message waiting,
      and a row due for GENERATION_REQUEUE_IDLE_AFTER seconds is lost; with messages waiting,
      only after `requeue_after` (GENERATION_REQUEUE_AFTER), so a long backlog is not sent
      twice. Duplicates are harmless anyway: the claim lets one through.
    """
    requeue_after = settings.GENERATION_REQUEUE_AFTER if requeue_after is None else requeue_after
    if broker_idle is None:
        broker_idle = _broker_idle()
    if broker_idle:
        requeue_after = min(requeue_after, settings.GENERATION_REQUEUE_IDLE_AFTER)
    lapsed = generation_lapsed_requeue(limit=limit)
    now = timezone.now()
    stale: list[int] = []
    with _not_sent():
        with transaction.atomic():
            stale = list(
                Generation.objects.filter(
                    _LIVE, status=S.PENDING, queued_at__lt=now - timedelta(seconds=requeue_after)
                )
                .exclude(contender__provider=Provider.IMPORTED)
                .values_list("pk", flat=True)[:limit]
            )
            Generation.objects.filter(pk__in=stale, status=S.PENDING).update(queued_at=now)
            generations_send(stale)
    for campaign in Campaign.objects.filter(status=Campaign.Status.GENERATING):
        # Safety net: review items missed by a crash between steps.
        review_side.review_items_sync(campaign=campaign)
        campaign_status_refresh(campaign_id=campaign.pk)
    return {"lapsed": lapsed, "requeued": len(stale)}


# Rows of a cancelled campaign are left as they are.
_LIVE = ~Q(campaign__status=Campaign.Status.CANCELLED)


def generation_lapsed_requeue(*, limit: int = 5000) -> int:
    """Beat job (every GENERATION_LAPSED_SWEEP_SECONDS): running rows whose lease lapsed (no
    worker renews it: the worker died, or lost the database) go back to pending and are
    queued again. One indexed read when there are none. Returns how many."""
    now = timezone.now()
    with _not_sent():
        with transaction.atomic():
            lapsed = list(
                Generation.objects.filter(
                    _LIVE, status=S.RUNNING, lease_expires_at__lt=now
                ).values_list("pk", flat=True)[:limit]
            )
            if lapsed:
                Generation.objects.filter(
                    pk__in=lapsed, status=S.RUNNING, lease_expires_at__lt=now
                ).update(status=S.PENDING, claim_token="", lease_expires_at=None, queued_at=now)
                generations_send(lapsed)
    return len(lapsed)


def _not_sent():
    """Around a transaction that queues rows: a broker that did not take their messages is
    logged by the sender, and the rows stay queued in the database for the next pass."""
    return contextlib.suppress(GenerationNotSent)


def _broker_idle() -> bool:
    try:
        return broker_queued() == 0
    except BrokerError:
        return False  # nothing can be sent now anyway
