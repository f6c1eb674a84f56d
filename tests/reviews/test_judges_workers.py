"""Judging with real Celery workers on PostgreSQL and Redis: a SIGKILLed worker loses and
doubles nothing; the judge's concurrency limit holds across worker processes."""

import time

import pytest
from django.core.management import call_command

from reviews.judges.models import Judgement
from reviews.judges.services import judgement_reconcile, judging_enqueue
from tests.factories import personas
from tests.fake_llm import FakeLLM
from tests.reviews.test_judges import agreeing, build, make_judge
from tests.services import (
    Worker,
    need,
    postgres_available,
    purge_broker,
    redis_available,
    wait_until,
)

WORKER_ENV = {
    "GENERATION_READ_TIMEOUT": "3",
    "GENERATION_BACKOFF_BASE": "0.2",
    "GENERATION_BACKOFF_MAX": "2",
}


@pytest.fixture
def workers(transactional_db):
    need(postgres_available(), "real workers need PostgreSQL")
    need(redis_available(), "real workers need Redis")
    purge_broker()
    started = []

    def start(**kwargs):
        worker = Worker(extra_env={**WORKER_ENV, **kwargs.pop("extra_env", {})}, **kwargs)
        started.append(worker)
        wait_until(lambda: "ready" in worker.log(), timeout=60, message="worker ready")
        return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def fake():
    server = FakeLLM(slow_seconds=4)
    yield server
    server.close()


def finished(campaign, judge) -> bool:
    rows = Judgement.objects.filter(campaign=campaign, judge=judge)
    return rows.exists() and not rows.filter(status__in=["pending", "running"]).exists()


@pytest.mark.postgres
@pytest.mark.redis
def test_a_worker_killed_mid_judging_loses_and_doubles_nothing(workers, fake):
    campaign = build(personas(), items=4, slug="killed-judging")
    fake.judge("steady", agreeing)
    fake.set_delay("steady", 1.5)
    judge = make_judge(fake, "steady", max_concurrency=4)
    env = {"GENERATION_LEASE_SECONDS": "4", "JUDGE_MAX_ATTEMPTS": "4"}
    first = workers(concurrency=2, extra_env=env)
    assert judging_enqueue(campaign=campaign, judge=judge) == 8
    wait_until(
        lambda: Judgement.objects.filter(judge=judge, status="running").count() >= 2,
        timeout=30,
        message="judgements in flight",
    )
    first.kill()
    in_flight = set(
        Judgement.objects.filter(judge=judge, status="running").values_list("pk", flat=True)
    )
    assert in_flight
    workers(concurrency=2, extra_env=env)

    def reconciled():
        judgement_reconcile(requeue_after=3)  # what beat runs every minute
        return finished(campaign, judge)

    wait_until(reconciled, timeout=120, interval=2, message="judging finished after the kill")
    rows = list(Judgement.objects.filter(judge=judge))
    assert len(rows) == 8
    assert all(r.status == "done" for r in rows), [(r.pk, r.status, r.error) for r in rows]
    assert all(r.scores and r.preference for r in rows)
    assert all(r.attempts >= 2 for r in rows if r.pk in in_flight)
    assert all(1 <= r.attempts <= 4 for r in rows)
    # Every call the endpoint got was one attempt of one row (a killed attempt may die before
    # its call): nothing was asked twice for one attempt, and no answer was stored twice.
    assert 8 <= len(fake.calls_for("steady")) <= sum(r.attempts for r in rows)
    assert sum(r.discarded_calls for r in rows) == 0


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.timeout(180)
def test_a_judge_call_longer_than_the_lease_keeps_its_row_while_the_worker_lives(workers, fake):
    """The worker renews a judgement's lease while the judge's call runs (here an answer after
    8 s against a 3 s lease), as it does a generation's: the reconciler never takes it for a
    dead worker's, and nothing is asked twice or thrown away."""
    campaign = build(personas(), items=1, slug="renewed-judging")
    fake.judge("patient", agreeing)
    fake.set_delay("patient", 8.0)
    judge = make_judge(fake, "patient", position_swap=False)
    workers(
        concurrency=1,
        pool="threads",
        extra_env={"GENERATION_LEASE_SECONDS": "3", "GENERATION_READ_TIMEOUT": "20"},
    )
    assert judging_enqueue(campaign=campaign, judge=judge) == 1
    row = Judgement.objects.get(judge=judge)
    wait_until(lambda: len(fake.calls_for("patient")) == 1, timeout=60, message="the call started")
    swept = []
    while Judgement.objects.get(pk=row.pk).status == "running":
        swept.append(judgement_reconcile(requeue_after=3)["lapsed"])  # beat runs it every minute
        time.sleep(0.5)
    row.refresh_from_db()
    assert len(swept) >= 8 and sum(swept) == 0
    assert row.status == "done" and row.attempts == 1 and row.discarded_calls == 0
    assert len(fake.calls_for("patient")) == 1


@pytest.mark.postgres
@pytest.mark.redis
def test_the_judge_concurrency_limit_holds_across_workers(workers, fake):
    campaign = build(personas(), items=6, slug="limited-judging")
    fake.judge("narrow", agreeing)
    fake.set_delay("narrow", 0.3)
    judge = make_judge(fake, "narrow", max_concurrency=2)
    workers(concurrency=3)
    workers(concurrency=3)
    call_command(
        "judge_campaign",
        campaign.slug,
        "--judge",
        judge.name,
        "--wait",
        "--interval",
        "0.5",
        stdout=open("/dev/null", "w"),
    )
    assert finished(campaign, judge)
    assert Judgement.objects.filter(judge=judge, status="done").count() == 12
    assert fake.max_active["narrow"] == 2
    assert len(fake.calls_for("narrow")) == 12


@pytest.mark.postgres
def test_duplicated_messages_racing_for_one_judgement_make_one_call(transactional_db, fake):
    """Four deliveries of one judgement's message at once, in four threads with their own
    connections: one claims and calls, the others find it claimed; one answer stored."""
    import threading

    from django.db import connection

    from reviews.judges.services import judgement_run

    need(postgres_available(), "row locks need PostgreSQL")
    campaign = build(personas(), items=1, slug="dup-judging")
    fake.judge("dup", agreeing)
    fake.set_delay("dup", 0.5)
    judge = make_judge(fake, "dup", position_swap=False)
    judging_enqueue(campaign=campaign, judge=judge)
    row = Judgement.objects.get(judge=judge)
    outcomes, barrier = [], threading.Barrier(4)

    def deliver():
        barrier.wait()
        try:
            outcomes.append(judgement_run(judgement_id=row.pk).action)
        finally:
            connection.close()

    threads = [threading.Thread(target=deliver) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes) == ["done", "skip", "skip", "skip"]
    row.refresh_from_db()
    assert row.status == "done" and row.attempts == 1
    assert len(fake.calls_for("dup")) == 1
