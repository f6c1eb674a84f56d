"""Generation while the broker (or the database) is down: queued rows are kept, the user is
told, and the reconciler sends them within a minute or two of the broker answering again. A
worker killed mid-call frees its slots and its rows run again within a minute; a store that
fails on the database releases its row at once."""

import time
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import TestCase, TransactionTestCase, override_settings
from django.utils import timezone

from evalsite.broker import broker_queued
from evalsite.models import ApiToken
from tasks.campaigns.selectors import campaign_progress
from tasks.generation.reconcile import generation_lapsed_requeue, generation_reconcile
from tasks.generation.run import generation_run
from tasks.generation.services import GenerationNotSent, generation_enqueue
from tasks.models import Generation
from tests.factories import PASSWORD, personas
from tests.services import CLOSED_REDIS_URL, broker_at, purge_broker, wait_until
from tests.tasks.test_generation import _finished, make_campaign, workers  # noqa: F401


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
        with broker_at(CLOSED_REDIS_URL), self.assertLogs("tasks.generation.services", "WARNING"):
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


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.timeout(300)
def test_a_worker_killed_mid_stream_frees_its_slots_and_its_rows_finish_within_a_minute(
    workers,  # noqa: F811 - the fixture imported above
):
    """With the shipped lease and sweep (no lease setting here): the old 390 s lease held
    both slots of the contender for six and a half minutes after the kill."""
    from tests.fake_llm import FakeLLM

    fake = FakeLLM(chunk_delay=1.5)  # five words: a 7.5 s stream, killed in its middle
    try:
        campaign = make_campaign(
            fake,
            tasks=4,
            slug="sigkill",
            contenders=[{"name": "k1", "provider": "openai", "model": "k1", "max_concurrency": 2}],
        )
        # Beat runs in the worker, as in `./dev run`: the lapsed-lease sweep is its own.
        env = {"GENERATION_READ_TIMEOUT": "20"}
        first = workers(concurrency=2, pool="threads", beat=True, extra_env=env)
        generation_enqueue(campaign=campaign)
        rows = Generation.objects.filter(campaign=campaign)
        wait_until(
            lambda: rows.filter(status="running").count() == 2 and len(fake.calls) == 2,
            timeout=60,
            message="two calls streaming",
        )
        time.sleep(2)
        killed = set(rows.filter(status="running").values_list("pk", flat=True))
        first.kill()
        # The campaign page names them stalled once their lease lapses, not "running".
        wait_until(
            lambda: campaign_progress(campaign=campaign)["totals"]["stalled"] >= 1,
            timeout=45,
            message="rows shown stalled",
        )
        workers(concurrency=2, pool="threads", beat=True, extra_env=env)
        # The two queued rows need the dead worker's slots; its two rows need the sweep.
        # Within ~a minute of the kill (30 s lease, 10 s sweep, a 7.5 s stream); the old lease
        # kept every slot for 390 s.
        wait_until(lambda: _finished(campaign), timeout=90, message="every row done after the kill")
        done = list(rows)
        assert all(r.status == "done" for r in done), [(r.pk, r.status, r.error) for r in done]
        assert all(r.attempts == 2 for r in done if r.pk in killed)
        assert len(fake.calls) == 6  # the two killed calls were made again, nothing else
    finally:
        fake.close()


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.timeout(180)
def test_a_call_longer_than_the_lease_keeps_its_row_while_the_worker_lives(workers):  # noqa: F811
    """The worker renews the lease while the call runs (here a single call that answers
    after 8 s against a 3 s lease): the lapsed-lease sweep never takes it for a dead one."""
    from tests.fake_llm import FakeLLM

    fake = FakeLLM(latency=8.0)
    try:
        campaign = make_campaign(
            fake,
            tasks=1,
            slug="renewed",
            contenders=[{"name": "r", "provider": "openai", "model": "r"}],
        )
        workers(
            concurrency=1,
            pool="threads",
            extra_env={"GENERATION_LEASE_SECONDS": "3", "GENERATION_READ_TIMEOUT": "20"},
        )
        generation_enqueue(campaign=campaign)
        row = Generation.objects.get(campaign=campaign)
        wait_until(lambda: len(fake.calls) == 1, timeout=60, message="the call started")
        swept = []
        while Generation.objects.get(pk=row.pk).status == "running":
            swept.append(generation_lapsed_requeue())  # what beat runs every 10 s
            time.sleep(0.5)
        row.refresh_from_db()
        assert len(swept) >= 8 and sum(swept) == 0
        assert row.status == "done" and row.attempts == 1 and len(fake.calls) == 1
    finally:
        fake.close()


@pytest.mark.postgres
class StoreFailureTests(TransactionTestCase):
    """The database refuses the store (a trigger raising a connection-failure error, which
    the driver reports as it reports a lost server): the row is released for a retry at once,
    not left running under a lease."""

    def setUp(self):
        from tests.fake_llm import FakeLLM
        from tests.services import need, postgres_available

        need(postgres_available(), "the failing store is a PostgreSQL trigger")
        self.fake = FakeLLM()
        self.addCleanup(self.fake.close)
        self.campaign = make_campaign(
            self.fake,
            tasks=1,
            slug="store",
            contenders=[{"name": "s", "provider": "openai", "model": "s"}],
        )
        table = Generation._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                "CREATE FUNCTION refuse_store() RETURNS trigger AS $$ BEGIN "
                "RAISE EXCEPTION 'server closed the connection' USING ERRCODE = '08006'; "
                "END $$ LANGUAGE plpgsql"
            )
            cursor.execute(
                f"CREATE TRIGGER refuse_store BEFORE UPDATE ON {table} FOR EACH ROW "
                "WHEN (NEW.status = 'done') EXECUTE FUNCTION refuse_store()"
            )
        self.addCleanup(self._drop_trigger)

    def _drop_trigger(self):
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TRIGGER IF EXISTS refuse_store ON {Generation._meta.db_table}")
            cursor.execute("DROP FUNCTION IF EXISTS refuse_store()")

    def test_a_store_refused_by_the_database_releases_the_row_at_once(self):
        row = Generation.objects.get(campaign=self.campaign)
        Generation.objects.filter(pk=row.pk).update(queued_at=timezone.now())
        with self.assertLogs("tasks.generation.run", "WARNING"):
            outcome = generation_run(generation_id=row.pk)
        assert outcome.action == "retry" and outcome.countdown < 10
        row.refresh_from_db()
        assert (row.status, row.claim_token, row.lease_expires_at) == ("pending", "", None)
        assert row.error == "the result could not be stored: the database was unreachable"
        assert row.retries == 1 and row.attempts == 1
        self._drop_trigger()
        # its job comes back after the countdown: claimable at once, no lease to wait out
        time.sleep(outcome.countdown)
        assert generation_run(generation_id=row.pk).action == "done"
        row.refresh_from_db()
        assert row.status == "done" and row.attempts == 2 and len(self.fake.calls) == 2
        # both calls were paid: the first, whose answer was lost, is counted and shown apart
        first, second = (call["usage"] for call in self.fake.calls)
        assert (row.retried_input_tokens, row.retried_output_tokens) == first
        assert (row.input_tokens, row.output_tokens) == (first[0] + second[0], first[1] + second[1])


class StalledProgressTests(TestCase):
    def test_a_running_row_whose_lease_lapsed_is_shown_stalled_not_running(self):
        personas()
        campaign = make_campaign(tasks=2)  # 4 rows
        rows = list(Generation.objects.filter(campaign=campaign).order_by("pk"))
        now = timezone.now()
        Generation.objects.filter(pk=rows[0].pk).update(
            status="running", lease_expires_at=now + timedelta(seconds=20)
        )
        Generation.objects.filter(pk=rows[1].pk).update(
            status="running", lease_expires_at=now - timedelta(seconds=5)
        )
        totals = campaign_progress(campaign=campaign)["totals"]
        assert (totals["running"], totals["stalled"], totals["remaining"]) == (1, 1, 2)
        self.client.post("/login/", {"username": "lead", "password": PASSWORD})
        page = self.client.get(f"/campaigns/{campaign.slug}/").content.decode()
        assert "1 stalled:</strong> no worker has renewed its lease for over 30 seconds" in page
