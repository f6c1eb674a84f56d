"""Monitors: a frozen test-set version re-run against contenders, graded, compared, alerted.

Imported by tasks/models.py (the app's models module); the services live in the other modules of this package.
"""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q


class Monitor(models.Model):
    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    testset = models.ForeignKey("tasks.TestSet", on_delete=models.PROTECT, related_name="+")
    contenders = models.ManyToManyField("tasks.Contender", related_name="monitors")
    samples_per_task = models.PositiveIntegerField(default=1)
    # 5-field cron in UTC; '' = runs only on demand.
    schedule = models.CharField(max_length=100, blank=True)
    # "first" | "previous" | a run number, as text
    baseline = models.CharField(max_length=20, default="first")
    thresholds = models.JSONField(default=list, blank=True)
    # {"webhook": url, "email": [addresses]}
    alerts = models.JSONField(default=dict, blank=True)
    # Grading with a judge (tasks/monitors/judging.py): the judge, the campaign whose panel it
    # was calibrated on (its rubric is what the judge scores), and whether an uncalibrated
    # judge was let in on purpose (then every chart, alert and comparison says so).
    judge = models.ForeignKey(
        "tasks.Judge", null=True, blank=True, on_delete=models.PROTECT, related_name="monitors"
    )
    calibration = models.ForeignKey(
        "tasks.Campaign", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    allow_uncalibrated = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Paused: the schedule starts nothing (runs by hand still work). Archived ("deleted"): gone
    # from the pages, the API and the schedule; its runs stay, `compare slug#n` still reads them.
    paused = models.BooleanField(default=False)
    archived_at = models.DateTimeField(null=True, blank=True)
    # The last scheduling failure (the tick goes on with the other monitors); '' = none.
    error = models.TextField(blank=True)
    error_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class MonitorRun(models.Model):
    """One run: its hidden campaign holds the generation rows (the ordinary pipeline)."""

    class Status(models.TextChoices):
        GENERATING = "generating"
        DONE = "done"
        FAILED = "failed"

    monitor = models.ForeignKey(Monitor, on_delete=models.CASCADE, related_name="runs")
    number = models.PositiveIntegerField()
    campaign = models.OneToOneField(
        "tasks.Campaign", on_delete=models.PROTECT, related_name="monitor_run"
    )
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.GENERATING, db_index=True
    )
    # The due time a scheduled run stands for (None: started by hand). Unique per monitor: two
    # beat processes (or workers) that both see a time due insert one row between them.
    scheduled_for = models.DateTimeField(null=True, blank=True)
    baseline_number = models.PositiveIntegerField(null=True, blank=True)
    metrics = models.JSONField(default=dict, blank=True)
    comparison = models.JSONField(null=True, blank=True)
    # With a judge: {"judge", "calibration", "judgements", "failed", "cost", "note"} once its
    # outputs are judged (what judging this run cost); {} without a judge.
    judging = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["monitor", "number"]
        constraints = [
            models.UniqueConstraint(fields=["monitor", "number"], name="monitor_run_number_unique"),
            models.UniqueConstraint(
                fields=["monitor", "scheduled_for"],
                condition=Q(scheduled_for__isnull=False),
                name="monitor_run_due_time_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.monitor.slug}#{self.number}"


class MonitorAlert(models.Model):
    """One crossed threshold of one run and contender: recorded once (the constraint)."""

    run = models.ForeignKey(MonitorRun, on_delete=models.CASCADE, related_name="alerts")
    contender = models.CharField(max_length=100)
    metric = models.CharField(max_length=100)
    rule = models.CharField(max_length=16)  # max_drop | max_rise | max | on_change
    threshold = models.JSONField()
    baseline_value = models.JSONField(null=True)
    run_value = models.JSONField(null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "contender", "metric", "rule"], name="monitor_alert_once"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}/{self.contender}/{self.metric}"


class AlertDelivery(models.Model):
    class Channel(models.TextChoices):
        WEBHOOK = "webhook"
        EMAIL = "email"

    class Status(models.TextChoices):
        PENDING = "pending"
        SENT = "sent"
        FAILED = "failed"

    alert = models.ForeignKey(MonitorAlert, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.CharField(max_length=16, choices=Channel.choices)
    target = models.CharField(max_length=500)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # The X-Evalsite-Delivery header and the body's "delivery": the same on every try and
    # resend of this delivery, so a receiver that got it already (it answered after our
    # timeout) can tell and drop the repeat.
    delivery_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    attempts = models.PositiveIntegerField(default=0)  # in the current round (since a resend)
    resends = models.PositiveIntegerField(default=0)
    # When the next try is due; while a try is under way, the end of its lease (so a second
    # message for the same delivery finds it taken and does nothing).
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    response_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["alert", "channel"], name="alert_delivery_once"),
        ]

    def __str__(self) -> str:
        return f"{self.alert_id}/{self.channel}"
