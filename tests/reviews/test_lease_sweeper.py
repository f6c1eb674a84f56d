"""The beat-driven lease sweeper, run by a real Celery worker on real Redis and PostgreSQL."""

from datetime import timedelta

import pytest
from django.utils import timezone

from evalsite.celery import app
from reviews import review as services
from reviews.models import Assignment, ReviewItem
from tests.factories import UserFactory, campaign_ready
from tests.services import wait_until


def test_the_beat_schedule_runs_the_sweeper_every_minute():
    entry = app.conf.beat_schedule["review-lease-sweep"]
    assert entry["task"] == "reviews.sweep_expired_leases" and entry["schedule"] == 60.0


@pytest.mark.postgres
@pytest.mark.redis
def test_a_worker_returns_abandoned_slots_to_the_pool(celery_worker):
    campaign = campaign_ready(items=2, overlap=2)
    users = [UserFactory(username=f"sweep-{i}", roles=["reviewer"]) for i in range(3)]
    held = [services.assignment_claim_next(campaign=campaign, reviewer=u).assignment for u in users]
    Assignment.objects.filter(pk__in=[held[0].pk, held[1].pk]).update(
        lease_expires_at=timezone.now() - timedelta(minutes=1)
    )
    app.send_task("reviews.sweep_expired_leases")
    wait_until(
        lambda: Assignment.objects.filter(state="expired").count() == 2,
        timeout=90,
        message=f"the sweeper (worker log: {celery_worker.log_path})",
    )
    assert Assignment.objects.get(pk=held[2].pk).state == "active"
    live = sum(ReviewItem.objects.filter(campaign=campaign).values_list("live_count", flat=True))
    assert live == 1
