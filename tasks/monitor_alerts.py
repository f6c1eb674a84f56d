"""Alerts: every crossed threshold recorded once per run, contender and rule, then delivered.

Webhook: one POST per crossed threshold, JSON signed with
`X-Evalsite-Signature: sha256=<hex HMAC-SHA256 of the raw body with MONITOR_WEBHOOK_SECRET>`,
retried with exponential backoff by its Celery job (MONITOR_WEBHOOK_ATTEMPTS, counted on the
delivery row, which records the last response code). Email through Django's backend. The
monitor page shows the alerts of the latest run as a banner.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import random
from datetime import timedelta

import httpx
from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from .models import AlertDelivery, MonitorAlert, MonitorRun
from .monitors import threshold_crossed

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
            rule = next(k for k in threshold if k != "metric")
            alert = _alert_once(run, name, metric, rule, threshold, base_value, run_value)
            out.append(alert_json(alert))
    return out


def _alert_once(run, contender, metric, rule, threshold, base_value, run_value) -> MonitorAlert:
    try:
        with transaction.atomic():
            alert = MonitorAlert.objects.create(
                run=run,
                contender=contender,
                metric=metric,
                rule=rule,
                threshold=threshold,
                baseline_value=base_value,
                run_value=run_value,
            )
    except IntegrityError:
        return MonitorAlert.objects.get(run=run, contender=contender, metric=metric, rule=rule)
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


def _send(delivery_id: int, countdown: float = 0.0) -> None:
    from kombu.exceptions import OperationalError

    from .monitor_jobs import alert_deliver_job

    try:
        alert_deliver_job.apply_async((delivery_id,), countdown=countdown)
    except OperationalError:
        log.warning("broker unreachable: alert delivery %s left for the beat sweep", delivery_id)


def alert_json(alert: MonitorAlert) -> dict:
    return {
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
    }


def _message(payload: dict) -> str:
    rule = payload["rule"]
    limit = payload["threshold"].get(rule)
    return (
        f"{payload['monitor']} run {payload['run']}, {payload['contender']}: {payload['metric']} "
        f"{payload['baseline']} -> {payload['value']} ({rule} {limit})"
    )


def alert_deliver(*, delivery_id: int) -> str:
    """One attempt at one delivery: 'sent', 'retry' (with a countdown set), 'failed', 'skip'."""
    claimed = AlertDelivery.objects.filter(pk=delivery_id, status=D.PENDING).update(
        attempts=F("attempts") + 1
    )
    if not claimed:
        return "skip"
    delivery = AlertDelivery.objects.select_related("alert__run__monitor").get(pk=delivery_id)
    payload = alert_json(delivery.alert)
    code, error = None, ""
    try:
        if delivery.channel == AlertDelivery.Channel.WEBHOOK:
            body = json.dumps(payload, sort_keys=True).encode()
            response = httpx.post(
                delivery.target,
                content=body,
                headers={
                    "Content-Type": "application/json",
                    "X-Evalsite-Signature": signature(body),
                    "User-Agent": "evalsite-monitor",
                },
                timeout=settings.MONITOR_WEBHOOK_TIMEOUT,
                follow_redirects=False,
            )
            code = response.status_code
            ok = 200 <= code < 300
            error = "" if ok else f"HTTP {code}: {response.text[:200]}"
        else:
            send_mail(
                subject=f"[evalsite] {_message(payload)}",
                message=json.dumps(payload, indent=2),
                from_email=None,
                recipient_list=[a.strip() for a in delivery.target.split(",")],
            )
            ok = True
    except (httpx.HTTPError, OSError) as exc:
        ok, error = False, f"{type(exc).__name__}: {exc}"[:500]
    if ok:
        AlertDelivery.objects.filter(pk=delivery_id).update(
            status=D.SENT, response_code=code, error="", delivered_at=timezone.now()
        )
        return "sent"
    final = delivery.attempts >= settings.MONITOR_WEBHOOK_ATTEMPTS
    AlertDelivery.objects.filter(pk=delivery_id).update(
        status=D.FAILED if final else D.PENDING, response_code=code, error=error
    )
    return "failed" if final else "retry"


def retry_countdown(attempts: int) -> float:
    """Exponential backoff with jitter: about 2, 4, 8 ... seconds, at most 5 minutes."""
    ceiling = min(300.0, 2.0 ** max(attempts, 1))
    return random.uniform(ceiling / 2, ceiling)


def alert_deliveries_resend(*, older_than_seconds: int = 600) -> int:
    """Beat safety net: deliveries still pending long after their alert (a lost message)."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    ids = list(
        AlertDelivery.objects.filter(status=D.PENDING, alert__created_at__lt=cutoff).values_list(
            "pk", flat=True
        )[:500]
    )
    for pk in ids:
        _send(pk)
    return len(ids)
