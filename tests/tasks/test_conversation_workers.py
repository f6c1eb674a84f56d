"""Tool loops on PostgreSQL: an attempt that loses its row mid-loop, and real Celery workers
(one killed mid-loop) running a tool task end to end: the next attempt resumes from the last
saved step, and every paid call is counted (docs/tools.md, "Resuming")."""

import time
from unittest import mock

import pytest

from reviews.models import ReviewItem
from tasks.generation.prices import Usage
from tasks.generation.providers.base import cost_of
from tasks.generation.reconcile import generation_reconcile
from tasks.generation.run import generation_run
from tasks.generation.services import generation_enqueue
from tasks.models import Generation
from tests.fake_llm import FakeLLM
from tests.services import wait_until
from tests.tasks.test_conversation import MOCKS, TOOLS, campaign_for
from tests.tasks.test_generation import _finished, _in_thread, workers  # noqa: F401 (fixture)

# Look the order up, try a refund (the mock times out once), try again, answer.
SCRIPT = [
    {"tool_calls": [{"name": "get_order", "arguments": {"order_id": "A-17"}}]},
    {"text": "Refunding.", "tool_calls": [{"name": "refund", "arguments": {"order_id": "A-17"}}]},
    {"tool_calls": [{"name": "refund", "arguments": {"order_id": "A-17"}}]},
    "Refunded A-17 after one timeout.",
]
TASK = {"prompt": "Refund order A-17.", "tools": TOOLS, "tool_mocks": MOCKS}


def one_loop(row, calls, spent: list[int]):
    """The row holds one whole loop: SCRIPT's four steps, each from the call that answered it
    first (the first attempt's first call, then the resumed attempt's three); its totals are
    every paid call's, the `spent` calls (indexes in calls) whose answers were not kept
    included and also shown apart."""
    (turn,) = row.transcript
    assert [s["text"] for s in turn["steps"]] == ["", "Refunding.", "", SCRIPT[3]]
    assert [s["tool_results"][0]["error"] for s in turn["steps"][1:3]] == ["timeout", ""]
    assert turn["steps"][2]["tool_results"][0]["result"] == {"refunded": True}
    kept = [calls[0]["usage"]] + [c["usage"] for c in calls[-3:]]
    assert [(s["input_tokens"], s["output_tokens"]) for s in turn["steps"]] == kept
    repeated = [calls[i]["usage"] for i in spent if calls[i]["usage"]]
    assert (row.retried_input_tokens, row.retried_output_tokens) == (
        sum(u[0] for u in repeated),
        sum(u[1] for u in repeated),
    )
    assert row.input_tokens == sum(u[0] for u in kept + repeated)
    assert row.output_tokens == sum(u[1] for u in kept + repeated)
    assert row.retried_cost == cost_of(
        row.contender,
        Usage(input_tokens=row.retried_input_tokens, output_tokens=row.retried_output_tokens),
    )
    assert row.cost == cost_of(
        row.contender, Usage(input_tokens=row.input_tokens, output_tokens=row.output_tokens)
    )
    assert row.output == SCRIPT[3] and row.status == "done" and row.loop_progress is None


@pytest.mark.postgres
def test_a_loop_that_lost_its_row_stops_and_the_new_attempt_stores_one_whole_loop(
    transactional_db, settings, monkeypatch
):
    settings.GENERATION_LEASE_SECONDS = 1
    settings.GENERATION_READ_TIMEOUT = 10
    with FakeLLM(slow_seconds=5) as fake, mock.patch("tasks.generation.services._send"):
        fake.steps("agent", *SCRIPT)
        fake.script("agent", "ok", "hang")  # the first attempt's second call hangs
        campaign = campaign_for(
            fake,
            slug="lapse",
            tasks=[TASK],
            contenders=[
                {
                    "name": "agent",
                    "provider": "openai",
                    "price_in_per_mtok": 2,
                    "price_out_per_mtok": 5,
                },
                {"name": "imp", "provider": "imported"},
            ],
        )
        row = Generation.objects.get(campaign=campaign, contender__name="agent")
        first, outcome = _in_thread(generation_run, generation_id=row.pk)
        wait_until(lambda: len(fake.calls_for("agent")) == 2, timeout=10, message="2nd call")
        time.sleep(1.2)  # the first attempt's lease lapses while its call hangs
        assert generation_reconcile(broker_idle=True)["lapsed"] == 1
        assert generation_run(generation_id=row.pk).action == "done"
        first.join(15)
        calls = fake.calls_for("agent")
    # The first attempt learnt its row was taken and made no third call; the second resumed
    # from the first attempt's saved first step, so it asked for steps 2 to 4 only. The first
    # attempt's second call (answered after the row was taken) was paid, and is counted.
    assert [o.action for o in outcome] == ["discarded"]
    assert len(calls) == 2 + 3
    row.refresh_from_db()
    assert row.attempts == 2 and row.discarded_calls == 1
    one_loop(row, calls, spent=[1])
    # shown apart on the campaign's progress (page and API): the repeated call's share
    from tasks.campaigns.selectors import campaign_progress

    (line,) = [
        c for c in campaign_progress(campaign=campaign)["contenders"] if c["name"] == "agent"
    ]
    assert line["retried_tokens"] == sum(calls[1]["usage"]) > 0
    assert line["retried_cost"] == row.retried_cost > 0


@pytest.mark.postgres
@pytest.mark.redis
def test_workers_run_a_tool_task_end_to_end_and_resume_a_loop_killed_midway(workers):  # noqa: F811
    fake = FakeLLM(slow_seconds=8)
    try:
        for model in ("oa-agent", "an-agent"):
            fake.steps(model, *SCRIPT)
            fake.script(model, "ok", "hang")  # the killed worker's second call
        campaign = campaign_for(
            fake,
            slug="agents",
            tasks=[TASK],
            contenders=[
                {
                    "name": "oa-agent",
                    "provider": "openai",
                    "price_in_per_mtok": 1,
                    "price_out_per_mtok": 2,
                },
                {
                    "name": "an-agent",
                    "provider": "anthropic",
                    "price_in_per_mtok": 3,
                    "price_out_per_mtok": 4,
                },
            ],
        )
        env = {"GENERATION_LEASE_SECONDS": "3", "GENERATION_READ_TIMEOUT": "20"}
        first = workers(concurrency=2, extra_env=env)
        generation_enqueue(campaign=campaign)
        wait_until(
            lambda: all(len(fake.calls_for(m)) == 2 for m in ("oa-agent", "an-agent")),
            timeout=60,
            message="both loops in their second call",
        )
        first.kill()
        workers(concurrency=2, extra_env=env)

        def reconciled():
            generation_reconcile(requeue_after=3)  # what beat runs every minute
            return _finished(campaign)

        wait_until(reconciled, timeout=120, interval=1, message="loops finished after the kill")
        rows = Generation.objects.filter(campaign=campaign).select_related("contender")
        for row in rows:
            calls = fake.calls_for(row.contender.name)
            # the killed call is asked again, not the first step the dead worker saved
            assert len(calls) == 2 + 3 and row.attempts == 2, (row.contender.name, row.error)
            one_loop(row, calls, spent=[])
        wait_until(
            lambda: ReviewItem.objects.filter(campaign=campaign, ready=True).count() == 1,
            timeout=10,
            message="the item opens",
        )
    finally:
        fake.close()
