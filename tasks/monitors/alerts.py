"""Alerts: every crossed threshold recorded once per run, contender and rule, then delivered.

Webhook delivery works as the webhook senders people trust do (Stripe, GitHub):
- each delivery has an id, sent as `X-Evalsite-Delivery` and as `delivery` in the body, the
  same on every try and resend, so a receiver deduplicates on it; the body holds `sent_at` (this
  try's time) and is signed as a whole (`X-Evalsite-Signature: sha256=<hex HMAC-SHA256 of the
  raw body with MONITOR_WEBHOOK_SECRET>`), so a receiver can refuse old replays;
- a try that fails (no answer within MONITOR_WEBHOOK_TIMEOUT, a non-2xx answer) is tried again
  with exponential backoff, MONITOR_WEBHOOK_BACKOFF_BASE doubling up to _MAX, until
  MONITOR_WEBHOOK_ATTEMPTS tries (hours with the defaults), then it is `failed`; an admin can
  resend it (page, API, resend_alert), under the same id;
- the database decides who tries: a try claims the row with a conditional UPDATE that also
  moves `next_attempt_at` past the try's own timeout, so a Celery retry and the beat sweep that
  both find a delivery due never send it twice at once.
Email goes through Django's backend. The monitor page shows the alerts of the latest run.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import random
from datetime import timedelta

import httpx
from celery import current_app
from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone
from kombu.exceptions import OperationalError

from tasks.monitors.definition import RULES, threshold_crossed
from tasks.monitors.judging import judge_note
from tasks.monitors.models import AlertDelivery, MonitorAlert, MonitorRun

log = logging.getLogger(__name__)
D = AlertDelivery.Status


def signature(body: bytes, secret: str | None = None) -> str:
    secret = settings.MONITOR_WEBHOOK_SECRET if secret is None else secret
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _value(entry: dict | None, key: str):
    return None if entry is None else entry.get(key)


def alerts_record(*, run: MonitorRun, comparison: dict) -> list[dict]:
    """Record each crossed threshold (once: the unique constraint) and queue its deliveries.
    Returns the alerts as JSON for the comparison."""
    monitor = run.monitor
    out = []
    for name, entry in sorted(comparison["contenders"].items()):
        changed = entry.get("served_model_changed", False)
        for threshold in monitor.thresholds:
            metric = threshold["metric"]
            if metric == "served_model":
                base_value = entry["served_models"]["baseline"]
                run_value = entry["served_models"]["run"]
            else:
                m = entry["metrics"].get(metric)
                base_value, run_value = _value(m, "baseline"), _value(m, "run")
            if not threshold_crossed(threshold, entry["metrics"].get(metric), changed):
                continue
            rule = next(k for k in threshold if k in RULES)
            alert = _alert_once(
                run,
                {
                    "contender": name,
                    "metric": metric,
                    "rule": rule,
                    "threshold": threshold,
                    "baseline_value": base_value,
                    "run_value": run_value,
                },
            )
            out.append(alert_json(alert))
    return out


def _alert_once(run, fields: dict) -> MonitorAlert:
    """The run's alert with these `fields` (contender, metric, rule, threshold, baseline_value,
    run_value), recorded once with a delivery per channel; the one recorded before if any."""
    try:
        with transaction.atomic():
            alert = MonitorAlert.objects.create(run=run, **fields)
    except IntegrityError:
        key = {k: fields[k] for k in ("contender", "metric", "rule")}
        return MonitorAlert.objects.get(run=run, **key)
    alerts = run.monitor.alerts or {}
    if alerts.get("webhook"):
        delivery = AlertDelivery.objects.create(
            alert=alert, channel=AlertDelivery.Channel.WEBHOOK, target=alerts["webhook"]
        )
        transaction.on_commit(lambda pk=delivery.pk: _send(pk))
    if alerts.get("email"):
        delivery = AlertDelivery.objects.create(
            alert=alert, channel=AlertDelivery.Channel.EMAIL, target=", ".join(alerts["email"])
        )
        transaction.on_commit(lambda pk=delivery.pk: _send(pk))
    return alert


# The delivery job (jobs.py, which calls alert_deliver below) is sent by its registered name:
# the job module imports this one, so importing the job here would close a circle.
ALERT_DELIVER_JOB = "tasks.alert_deliver"


def _send(delivery_id: int, countdown: float = 0.0) -> None:
    try:
        current_app.send_task(ALERT_DELIVER_JOB, (delivery_id,), countdown=countdown)
    except OperationalError:
        log.warning("broker unreachable: alert delivery %s left for the beat sweep", delivery_id)


def alert_json(alert: MonitorAlert) -> dict:
    return {
        "alert": alert.pk,
        "monitor": alert.run.monitor.slug,
        "run": alert.run.number,
        "contender": alert.contender,
        "metric": alert.metric,
        "rule": alert.rule,
        "threshold": alert.threshold,
        "baseline": alert.baseline_value,
        "value": alert.run_value,
        "baseline_run": alert.run.baseline_number,
        "at": alert.created_at.isoformat(),
        # A monitor grading with a judge let in uncalibrated says so on every alert.
        **({"note": note} if (note := judge_note(alert.run.monitor)) else {}),
    }


def _message(payload: dict) -> str:
    rule = payload["rule"]
    limit = payload["threshold"].get(rule)
    return (
        f"{payload['monitor']} run {payload['run']}, {payload['contender']}: {payload['metric']} "
        f"{payload['baseline']} -> {payload['value']} ({rule} {limit})"
        + (f" [{payload['note']}]" if payload.get("note") else "")
    )


class ResendRefused(Exception):
    """Nothing of this alert can be resent (delivered, or still being tried)."""


def _claim(delivery_id: int, now) -> bool:
    """Take the delivery for one try, if it is pending and due: attempts + 1 and a lease (the
    try's timeout and a margin) in `next_attempt_at`, in one conditional UPDATE."""
    lease = timedelta(seconds=settings.MONITOR_WEBHOOK_TIMEOUT + 30)
    due = Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now)
    return bool(
        AlertDelivery.objects.filter(due, pk=delivery_id, status=D.PENDING).update(
            attempts=F("attempts") + 1, last_attempt_at=now, next_attempt_at=now + lease
        )
    )


def webhook_body(delivery: AlertDelivery, now) -> bytes:
    """The signed body of one try: the alert, the delivery id and this try's time."""
    payload = {
        **alert_json(delivery.alert),
        "delivery": str(delivery.delivery_id),
        "sent_at": now.isoformat(),
    }
    return json.dumps(payload, sort_keys=True).encode()


def _post(delivery: AlertDelivery, now) -> tuple[bool, int | None, str]:
    body = webhook_body(delivery, now)
    response = httpx.post(
        delivery.target,
        content=body,
        headers={
            "Content-Type": "application/json",
            "X-Evalsite-Signature": signature(body),
            "X-Evalsite-Delivery": str(delivery.delivery_id),
            "User-Agent": "evalsite-monitor",
        },
        timeout=settings.MONITOR_WEBHOOK_TIMEOUT,
        follow_redirects=False,
    )
    code = response.status_code
    ok = 200 <= code < 300
    return ok, code, "" if ok else f"HTTP {code}: {response.text[:200]}"


def alert_deliver(*, delivery_id: int) -> tuple[str, float]:
    """One try at one delivery: ('sent' | 'failed' | 'skip', 0) or ('retry', seconds until
    the next try is due)."""
    now = timezone.now()
    if not _claim(delivery_id, now):
        return "skip", 0.0
    delivery = AlertDelivery.objects.select_related("alert__run__monitor").get(pk=delivery_id)
    code, error = None, ""
    try:
        if delivery.channel == AlertDelivery.Channel.WEBHOOK:
            ok, code, error = _post(delivery, now)
        else:
            payload = alert_json(delivery.alert)
            send_mail(
                subject=f"[evalsite] {_message(payload)}",
                message=json.dumps(payload, indent=2),
                from_email=None,
                recipient_list=[a.strip() for a in delivery.target.split(",")],
            )
            ok = True
    except (httpx.HTTPError, OSError) as exc:
        # A timeout included: the receiver may have got it; the next try carries the same id.
        ok, error = False, f"{type(exc).__name__}: {exc}"[:500]
    if ok:
        AlertDelivery.objects.filter(pk=delivery_id).update(
            status=D.SENT, response_code=code, error="", delivered_at=timezone.now(),
            next_attempt_at=None,
        )  # fmt: skip
        return "sent", 0.0
    if delivery.attempts >= settings.MONITOR_WEBHOOK_ATTEMPTS:
        AlertDelivery.objects.filter(pk=delivery_id).update(
            status=D.FAILED, response_code=code, error=error, next_attempt_at=None
        )
        return "failed", 0.0
    wait = retry_countdown(delivery.attempts)
    AlertDelivery.objects.filter(pk=delivery_id).update(
        response_code=code, error=error, next_attempt_at=timezone.now() + timedelta(seconds=wait)
    )
    return "retry", wait


def retry_countdown(attempts: int) -> float:
    """Exponential backoff with jitter after try `attempts`: about BASE, 2 x BASE, 4 x BASE
    ... seconds, at most MAX (between half and all of it, so receivers coming back are not
    hit by every sender at once)."""
    base, cap = settings.MONITOR_WEBHOOK_BACKOFF_BASE, settings.MONITOR_WEBHOOK_BACKOFF_MAX
    ceiling = min(cap, base * 2.0 ** max(attempts - 1, 0))
    return random.uniform(ceiling / 2, ceiling)


def alert_resend(*, alert: MonitorAlert) -> list[AlertDelivery]:
    """Send an alert's failed deliveries again (a new round of tries, the same delivery ids),
    to the monitor's current webhook and addresses when they changed since."""
    alerts = alert.run.monitor.alerts or {}
    targets = {
        AlertDelivery.Channel.WEBHOOK: alerts.get("webhook"),
        AlertDelivery.Channel.EMAIL: ", ".join(alerts.get("email") or []),
    }
    resent = []
    with transaction.atomic():
        rows = list(alert.deliveries.select_for_update().order_by("pk"))
        if not rows:
            raise ResendRefused("this alert has no delivery (the monitor had no webhook or e-mail)")
        for delivery in rows:
            if delivery.status != D.FAILED:
                continue
            AlertDelivery.objects.filter(pk=delivery.pk).update(
                status=D.PENDING, attempts=0, resends=F("resends") + 1, next_attempt_at=None,
                target=targets.get(delivery.channel) or delivery.target,
            )  # fmt: skip
            transaction.on_commit(lambda pk=delivery.pk: _send(pk))
            resent.append(delivery.pk)
        if not resent:
            states = ", ".join(f"{d.channel} {d.status}" for d in rows)
            raise ResendRefused(f"nothing failed to resend ({states})")
    return list(AlertDelivery.objects.filter(pk__in=resent).order_by("pk"))


def alert_deliveries_resend() -> int:
    """Beat sweep: send every pending delivery whose next try is due (a retry too far off for a
    Celery countdown, or a message that was lost); the claim keeps each try single."""
    now = timezone.now()
    first_try_lost = Q(
        next_attempt_at__isnull=True, alert__created_at__lt=now - timedelta(minutes=1)
    )
    ids = list(
        AlertDelivery.objects.filter(
            first_try_lost | Q(next_attempt_at__lte=now), status=D.PENDING
        ).values_list("pk", flat=True)[:500]
    )
    for pk in ids:
        _send(pk)
    return len(ids)
