"""Generation while the broker (or the database) is down: queued rows are kept, the user is
told, and the reconciler sends them within a minute or two of the broker answering again."""

from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.test import TestCase, TransactionTestCase, override_settings
from django.utils import timezone

from evalsite.celery import broker_queued
from evalsite.models import ApiToken
from tasks.generation import GenerationNotSent, generation_enqueue, generation_reconcile
from tasks.models import Generation
from tests.factories import PASSWORD, personas
from tests.services import CLOSED_REDIS_URL, broker_at, purge_broker, wait_until
from tests.tasks.test_generation import _finished, make_campaign


def _queued(campaign) -> int:
    return Generation.objects.filter(
        campaign=campaign, status="pending", queued_at__isnull=False
    ).count()


class BrokerDownTests(TransactionTestCase):
    """Real commits: the messages are sent after the commit, where the failure shows."""

    def setUp(self):
        self.users = personas()
        self.campaign = make_campaign(tasks=2)  # 2 tasks x 2 contenders

    def test_the_api_answers_503_and_keeps_the_rows_queued(self):
        token = ApiToken.issue(self.users["admin"])
        with broker_at(CLOSED_REDIS_URL):
            response = self.client.post(
                f"/api/v1/campaigns/{self.campaign.slug}/generate",
                headers={"Authorization": f"Bearer {token}"},
            )
        assert response.status_code == 503
        body = response.json()
        assert body["queued"] == 4
        assert "broker (Redis) is unreachable" in body["error"]
        assert "6390" not in body["error"]  # no host or URL in the answer
        assert _queued(self.campaign) == 4

    def test_the_page_says_what_happened(self):
        self.client.post("/login/", {"username": "admin", "password": PASSWORD})
        with broker_at(CLOSED_REDIS_URL):
            response = self.client.post(f"/campaigns/{self.campaign.slug}/generate", follow=True)
        assert response.status_code == 200
        assert b"4 generations queued but not yet sent to the workers" in response.content
        assert _queued(self.campaign) == 4

    def test_the_command_exits_non_zero_with_the_message(self):
        with broker_at(CLOSED_REDIS_URL), pytest.raises(CommandError) as raised:
            call_command("generate", self.campaign.slug)
        assert "4 generations queued but not yet sent" in str(raised.value)
        assert _queued(self.campaign) == 4

    def test_the_reconciler_keeps_the_rows_queued_while_the_broker_is_still_down(self):
        past = timezone.now() - timedelta(seconds=90)
        Generation.objects.filter(campaign=self.campaign).update(queued_at=past)
        with broker_at(CLOSED_REDIS_URL), self.assertLogs("tasks.generation", "WARNING"):
            assert generation_reconcile(broker_idle=True)["requeued"] == 4
        assert _queued(self.campaign) == 4  # for its next run


class ReconcilerTests(TestCase):
    def setUp(self):
        self.campaign = make_campaign(tasks=3)  # 6 rows
        rows = list(Generation.objects.filter(campaign=self.campaign).order_by("pk"))
        now = timezone.now()
        # Queued 90 s ago and never sent (the broker was down) / queued 10 s ago.
        self.lost = [r.pk for r in rows[:2]]
        Generation.objects.filter(pk__in=self.lost).update(queued_at=now - timedelta(seconds=90))
        self.recent = rows[2].pk
        Generation.objects.filter(pk=self.recent).update(queued_at=now - timedelta(seconds=10))

    def _reconcile(self, **kwargs) -> tuple[dict, list[int]]:
        with self.captureOnCommitCallbacks(execute=False) as callbacks:
            result = generation_reconcile(**kwargs)
        return result, sorted(c.args[0] for c in callbacks)

    def test_it_requeues_rows_lost_over_a_minute_ago_when_the_broker_queue_is_empty(self):
        assert self._reconcile(broker_idle=True) == ({"lapsed": 0, "requeued": 2}, self.lost)

    def test_it_leaves_a_backlog_alone_until_the_long_threshold(self):
        # Messages wait in the broker: these rows may be among them, not lost.
        assert self._reconcile(broker_idle=False) == ({"lapsed": 0, "requeued": 0}, [])

    @override_settings(GENERATION_REQUEUE_IDLE_AFTER=120)
    def test_the_idle_threshold_is_a_setting(self):
        assert self._reconcile(broker_idle=True) == ({"lapsed": 0, "requeued": 0}, [])


@pytest.mark.redis
def test_it_counts_the_messages_waiting_in_the_broker():
    from evalsite.celery import app

    purge_broker()
    assert broker_queued() == 0
    app.send_task("evalsite.health", args=[1])  # no worker listens in this test
    assert broker_queued() == 1
    purge_broker()
    with broker_at(CLOSED_REDIS_URL), pytest.raises(Exception, match="6390"):
        broker_queued()


@pytest.mark.postgres
@pytest.mark.redis
def test_rows_queued_while_the_broker_was_down_run_once_it_is_back(celery_worker):
    from tests.fake_llm import FakeLLM

    fake = FakeLLM()
    try:
        campaign = make_campaign(fake, tasks=2, slug="outage")
        with broker_at(CLOSED_REDIS_URL), pytest.raises(GenerationNotSent):
            generation_enqueue(campaign=campaign)
        assert _queued(campaign) == 4
        # A minute later, with the broker back and its queue empty: beat's next reconcile.
        Generation.objects.filter(campaign=campaign).update(
            queued_at=timezone.now() - timedelta(seconds=61)
        )
        assert generation_reconcile()["requeued"] == 4
        wait_until(lambda: _finished(campaign), timeout=90, message="campaign finished")
        rows = Generation.objects.filter(campaign=campaign)
        assert all(r.status == "done" and r.attempts == 1 for r in rows)
        assert len(fake.calls) == 4  # each row called once: nothing was sent twice
    finally:
        fake.close()
