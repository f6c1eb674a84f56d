"""One judgement: a judge's answer for one review item, sample and order."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from reviews.models import ReviewItem
from tasks.models import Campaign, Judge


class Judgement(models.Model):
    """(judge, item, sample, order) is unique: the row is made once, and claimed, called and
    stored like a generation row (reviews/judges/services.py), so a retry, a killed worker or
    a duplicated message never makes a second judgement."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="judgements")
    # The item's campaign, copied: progress and cost are one index range per (campaign, judge).
    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, related_name="judgements", db_index=False
    )
    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="judgements")
    sample = models.PositiveSmallIntegerField(help_text="which of the judge's samples")
    # 0: the order drawn at random for this (item, sample); 1: its reverse (position swap).
    swapped = models.BooleanField(default=False)
    # ItemOutput ids in the order the judge was shown them (A, B, ...). Server side only.
    order = models.JSONField(default=list)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    claim_token = models.CharField(max_length=32, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The answer, un-permuted: {"<ItemOutput id>": {dim: n | None}} and "<ItemOutput id>" |
    # "tie" | "both_bad" (None: the mode asks for no preference).
    scores = models.JSONField(null=True, blank=True)
    preference = models.CharField(max_length=32, blank=True)
    reasoning = models.TextField(blank=True)
    raw_answer = models.TextField(blank=True, help_text="the answer as the endpoint sent it")
    # Every failed attempt: [{"attempt": n, "cause": "..."}] (an answer outside the rubric,
    # a refused request, a timeout); the last one is `error` once the row has failed.
    failures = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    # Summed over every attempt, failed ones too: what judging really cost.
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=14, decimal_places=8, default=0)
    latency_ms = models.PositiveIntegerField(null=True, blank=True, help_text="the stored call's")
    discarded_calls = models.PositiveIntegerField(
        default=0, help_text="calls whose answer came after the row was no longer theirs"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "item", "sample", "swapped"], name="judgement_unique"
            ),
            models.CheckConstraint(
                condition=~Q(status="done") | Q(scores__isnull=False) | ~Q(preference=""),
                name="judgement_done_has_answer",
            ),
        ]
        indexes = [
            models.Index(fields=["campaign", "judge", "status"], name="judgement_progress_idx"),
            # The concurrency limit counts a judge's live leases on every claim.
            models.Index(
                fields=["judge", "lease_expires_at"],
                condition=Q(status="running"),
                name="judgement_live_lease_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"judgement {self.pk} ({self.status})"
