"""Generation: services on any database; the real thing with Celery workers on Redis + PostgreSQL."""

import json
import threading
import time
from collections import Counter
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db.models import Count
from django.test import TestCase, override_settings
from django.utils import timezone

from reviews.models import ItemOutput, ReviewItem
from reviews.review.readiness import item_plan, pair_key, review_items_open_for, review_items_sync
from tasks.campaigns.definition import campaign_create
from tasks.checks.automatic import run_checks
from tasks.generation import claim_waits, providers
from tasks.generation import run as gen_run
from tasks.generation.reconcile import generation_reconcile
from tasks.generation.run import generation_run
from tasks.generation.services import (
    campaign_status_refresh,
    generation_cancel,
    generation_enqueue,
    generation_retry_failed,
)
from tasks.models import Campaign, Generation
from tests.factories import TaskFactory, TestSetFactory
from tests.fake_llm import FakeLLM
from tests.services import (
    Worker,
    need,
    postgres_available,
    purge_broker,
    redis_available,
    wait_until,
)


def make_campaign(
    fake=None,
    *,
    tasks=3,
    samples=1,
    contenders=None,
    slug="gen",
    mode="both",
    reviewed=1,
    checks=None,
    categories=("support",),
):
    ts = TestSetFactory(name=f"ts-{slug}", frozen=False, task_count=tasks)
    for i in range(tasks):
        TaskFactory(
            testset=ts,
            position=i,
            external_id=f"T-{i + 1}",
            category=categories[i % len(categories)],
            prompt=f"Question number {i + 1}?",
            checks=checks or {},
        )
    base = fake.base_url if fake else "http://127.0.0.1:9/v1"
    if contenders is None:
        contenders = [
            {"name": "oa", "provider": "openai", "model": "oa"},
            {"name": "an", "provider": "anthropic", "model": "an"},
        ]
    for c in contenders:
        if c.get("provider") in ("openai", "anthropic"):
            c.setdefault("base_url", base)
    definition = {
        "slug": slug,
        "testset": ts.name,
        "contenders": contenders,
        "samples_per_task": samples,
        "reviewed_samples": reviewed,
        "mode": mode,
        "rubric": [] if mode == "pairwise" else [{"key": "accuracy"}],
    }
    campaign, _ = campaign_create(definition=definition)
    return campaign


# -- services, on any database ------------------------------------------------------------------


@override_settings(
    GENERATION_READ_TIMEOUT=1, GENERATION_BACKOFF_BASE=0.1, GENERATION_MAX_ATTEMPTS=3
)
class ServiceTests(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fake = FakeLLM(slow_seconds=2)

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    def test_it_stores_one_output_with_metrics_checks_and_cost(self):
        campaign = make_campaign(
            self.fake,
            tasks=1,
            contenders=[
                {
                    "name": "oa",
                    "provider": "openai",
                    "model": "oa",
                    "price_in_per_mtok": 1,
                    "price_out_per_mtok": 2,
                    "params": {"seed": 3},
                },
                {"name": "imp", "provider": "imported"},
            ],
            checks={"must_include": ["question"], "max_chars": 10},
        )
        row = Generation.objects.get(campaign=campaign, contender__name="oa")
        outcome = generation_run(generation_id=row.pk)
        assert outcome.action == "done"
        row.refresh_from_db()
        assert row.output == "oa answers: Question number 1?" and row.attempts == 1
        assert (
            row.latency_ms is not None and row.ttft_ms is not None and row.finish_reason == "stop"
        )
        assert row.cost == Decimal(row.input_tokens * 1 + row.output_tokens * 2) / 1_000_000
        assert (
            row.check_results["must_include"]["passed"]
            and not row.check_results["max_chars"]["passed"]
        )
        assert row.checks_passed is False
        assert self.fake.calls_for("oa")[-1]["body"]["seed"] == 3
        # A second delivery of the same job is a no-op: no provider call, no second output.
        calls = len(self.fake.calls_for("oa"))
        assert generation_run(generation_id=row.pk).action == "skip"
        assert len(self.fake.calls_for("oa")) == calls

    def test_a_check_that_cannot_run_is_recorded_and_the_call_is_not_repeated(self):
        # an invalid stored schema used to raise after the call: retried to the attempt cap,
        # a paid call each time, and no cause shown
        campaign = make_campaign(self.fake, tasks=1, checks={"json_schema": {"properties": [1]}})
        row = Generation.objects.get(campaign=campaign, contender__name="oa")
        assert generation_run(generation_id=row.pk).action == "done"
        row.refresh_from_db()
        assert row.attempts == 1 and len(self.fake.calls_for("oa")) == 1
        assert row.checks_passed is False
        assert row.check_results["json_schema"]["detail"].startswith(
            "check could not run: not a valid JSON Schema: at $.properties"
        )

    def test_it_schedules_retries_and_fails_at_the_attempt_cap(self):
        campaign = make_campaign(
            self.fake,
            tasks=1,
            contenders=[
                {"name": "flaky", "provider": "openai", "model": "flaky"},
                {"name": "imp", "provider": "imported"},
            ],
        )
        self.fake.set_always("flaky", "503")
        row = Generation.objects.get(campaign=campaign, contender__name="flaky")
        outcomes = []
        for _ in range(5):
            Generation.objects.filter(pk=row.pk, status="pending").update(queued_at=timezone.now())
            outcomes.append(generation_run(generation_id=row.pk).action)
        assert outcomes == ["retry", "retry", "failed", "skip", "skip"]
        row.refresh_from_db()
        assert row.status == "failed" and row.attempts == 3 and row.retries == 2
        assert "HTTP 503" in row.error and "gave up after 3 attempts" in row.error
        assert len(self.fake.calls_for("flaky")) == 3

    def test_it_honours_retry_after_and_does_not_retry_a_400(self):
        campaign = make_campaign(
            self.fake,
            tasks=2,
            contenders=[
                {"name": "lim", "provider": "openai", "model": "lim"},
                {"name": "bad", "provider": "openai", "model": "bad"},
            ],
        )
        self.fake.script("lim", "429")
        self.fake.set_always("bad", "400")
        lim = Generation.objects.filter(campaign=campaign, contender__name="lim").first()
        outcome = generation_run(generation_id=lim.pk)
        assert outcome.action == "retry" and outcome.countdown >= 1.0
        lim.refresh_from_db()
        assert lim.status == "pending" and lim.queued_at > timezone.now()
        # The scheduled retry is not run early by a duplicate message.
        assert generation_run(generation_id=lim.pk).action == "skip"
        bad = Generation.objects.filter(campaign=campaign, contender__name="bad").first()
        assert generation_run(generation_id=bad.pk).action == "failed"
        bad.refresh_from_db()
        assert bad.attempts == 1 and bad.retries == 0 and "max_tokens is too large" in bad.error

    def test_a_late_duplicate_call_is_discarded_and_counted(self):
        campaign = make_campaign(self.fake, tasks=1)
        row = Generation.objects.filter(campaign=campaign, contender__name="oa").first()
        first, token, _ = gen_run._claim(row.pk)
        # The first worker stalls past its lease; the row is claimed again and finished.
        Generation.objects.filter(pk=row.pk).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
        assert generation_run(generation_id=row.pk).action == "done"
        from tasks.generation.conversation import RunResult

        late = RunResult(
            text="late text",
            input_tokens=1,
            output_tokens=1,
            latency_ms=1,
            ttft_ms=1,
            finish_reason="stop",
        )
        assert gen_run._store(first, token, late).action == "discarded"
        row.refresh_from_db()
        assert (
            row.output == "oa answers: Question number 1?"
            and row.discarded_calls == 1
            and row.attempts == 2
        )

    def test_cancel_discards_in_flight_results_and_generate_resumes(self):
        campaign = make_campaign(self.fake, tasks=2)
        with self.captureOnCommitCallbacks(execute=False) as callbacks:
            assert generation_enqueue(campaign=campaign) == 4
        assert len(callbacks) == 4
        row = Generation.objects.filter(campaign=campaign).first()
        claimed, token, _ = gen_run._claim(row.pk)
        assert generation_cancel(campaign=campaign) == 4
        assert Campaign.objects.get(pk=campaign.pk).status == "cancelled"
        from tasks.generation.conversation import RunResult

        result = RunResult(
            text="x", input_tokens=1, output_tokens=1, latency_ms=1, ttft_ms=1, finish_reason=""
        )
        assert gen_run._store(claimed, token, result).action == "discarded"
        assert not Generation.objects.filter(campaign=campaign, status="done").exists()
        with self.captureOnCommitCallbacks(execute=False) as callbacks:
            assert generation_enqueue(campaign=campaign) == 4
        assert (
            Generation.objects.filter(
                campaign=campaign, status="pending", queued_at__isnull=False
            ).count()
            == 4
        )
        assert Campaign.objects.get(pk=campaign.pk).status == "generating"

    def test_a_cancelled_call_still_in_flight_keeps_its_slot_until_it_ends(self):
        # Cancel, then Generate at once: the provider is still answering the cancelled call,
        # so the contender's limit (1) leaves no room for another one until that call ends.
        campaign = make_campaign(
            self.fake,
            tasks=2,
            contenders=[
                {"name": "one", "provider": "openai", "model": "one", "max_concurrency": 1},
                {"name": "imp", "provider": "imported"},
            ],
        )
        with self.captureOnCommitCallbacks(execute=False):
            generation_enqueue(campaign=campaign)
        rows = list(Generation.objects.filter(campaign=campaign, contender__name="one"))
        in_flight, token, _ = gen_run._claim(rows[0].pk)
        assert generation_cancel(campaign=campaign) == 2
        with self.captureOnCommitCallbacks(execute=False):
            assert generation_enqueue(campaign=campaign) == 2
        assert gen_run._claim(rows[1].pk)[2].action == "busy"
        assert gen_run._claim(rows[0].pk)[2].action == "busy"  # nor the same row again

        result = providers.generate(in_flight.contender, in_flight.task.conversation())
        assert gen_run._store(in_flight, token, result).action == "discarded"
        claimed, _, outcome = gen_run._claim(rows[1].pk)
        assert outcome is None and claimed.pk == rows[1].pk
        assert Generation.objects.get(pk=rows[0].pk).discarded_calls == 1

    def test_generate_wait_counts_rows_cancelled_while_it_waits(self):
        from io import StringIO
        from types import SimpleNamespace

        from django.core.management import CommandError, call_command

        from tasks.management.commands import generate

        campaign = make_campaign(self.fake, tasks=2)

        def cancel(seconds):  # someone cancels while the command waits
            generation_cancel(campaign=campaign)

        out = StringIO()
        with (
            pytest.MonkeyPatch.context() as mp,
            pytest.raises(CommandError, match="4 generations cancelled"),
        ):
            mp.setattr(generate, "time", SimpleNamespace(monotonic=time.monotonic, sleep=cancel))
            call_command("generate", "gen", "--wait", stdout=out)
        assert "] 4/4  done 0  failed 0  cancelled 4  running 0  queued 0" in out.getvalue()

    def test_cancel_with_nothing_queued_leaves_a_campaign_in_review_open(self):
        campaign = make_campaign(self.fake, tasks=2)
        assert generation_cancel(campaign=campaign) == 0  # never queued: not touched
        assert Campaign.objects.get(pk=campaign.pk).status == "draft"
        Generation.objects.filter(campaign=campaign).update(status="done", output="x")
        campaign_status_refresh(campaign_id=campaign.pk)
        assert Campaign.objects.get(pk=campaign.pk).status == "reviewing"
        assert generation_cancel(campaign=campaign) == 0
        # still open to its reviewers (a cancelled campaign is not reviewable)
        assert Campaign.objects.get(pk=campaign.pk).status == "reviewing"

    def test_retry_failed_gives_a_fresh_budget(self):
        campaign = make_campaign(self.fake, tasks=2)
        Generation.objects.filter(campaign=campaign, contender__name="oa").update(
            status="failed", attempts=3, error="HTTP 503"
        )
        with self.captureOnCommitCallbacks(execute=False) as callbacks:
            assert generation_retry_failed(campaign=campaign) == 2
        assert len(callbacks) == 2
        rows = Generation.objects.filter(campaign=campaign, contender__name="oa")
        assert all(r.status == "pending" and r.attempts == 0 and r.error == "" for r in rows)

    def test_the_reconciler_requeues_lapsed_and_lost_rows(self):
        campaign = make_campaign(self.fake, tasks=2)
        rows = list(Generation.objects.filter(campaign=campaign).order_by("pk"))
        past = timezone.now() - timedelta(minutes=30)
        Generation.objects.filter(pk=rows[0].pk).update(
            status="running", lease_expires_at=past, claim_token="x", attempts=1
        )
        Generation.objects.filter(pk=rows[1].pk).update(queued_at=past)
        Generation.objects.filter(pk=rows[2].pk).update(
            status="running",
            claim_token="y",
            attempts=1,
            lease_expires_at=timezone.now() + timedelta(minutes=5),
        )
        Campaign.objects.filter(pk=campaign.pk).update(status="generating")
        with self.captureOnCommitCallbacks(execute=False) as callbacks:
            assert generation_reconcile(requeue_after=600) == {"lapsed": 1, "requeued": 1}
        assert len(callbacks) == 2
        assert Generation.objects.get(pk=rows[0].pk).status == "pending"
        assert (
            Generation.objects.get(pk=rows[2].pk).status == "running"
        )  # a live lease is left alone

    def test_it_never_exceeds_the_contender_concurrency(self):
        campaign = make_campaign(
            self.fake,
            tasks=3,
            contenders=[
                {"name": "narrow", "provider": "openai", "model": "narrow", "max_concurrency": 2},
                {"name": "imp", "provider": "imported"},
            ],
        )
        rows = list(Generation.objects.filter(campaign=campaign, contender__name="narrow"))
        assert gen_run._claim(rows[0].pk)[2] is None
        assert gen_run._claim(rows[1].pk)[2] is None
        assert gen_run._claim(rows[2].pk)[2].action == "busy"
        assert Generation.objects.get(pk=rows[2].pk).status == "pending"


class ReadinessTests(TestCase):
    def test_an_item_with_a_missing_output_is_never_ready(self):
        campaign = make_campaign(
            tasks=2,
            contenders=[
                {"name": "a", "provider": "imported"},
                {"name": "b", "provider": "imported"},
            ],
        )
        review_items_sync(campaign=campaign)
        assert ReviewItem.objects.filter(campaign=campaign).count() == 2
        first = ReviewItem.objects.filter(campaign=campaign).first()
        Generation.objects.filter(campaign=campaign, task=first.task, contender__name="a").update(
            status="done"
        )
        Generation.objects.filter(campaign=campaign, task=first.task, contender__name="b").update(
            status="failed"
        )
        review_items_sync(campaign=campaign)
        assert not ReviewItem.objects.filter(campaign=campaign, ready=True).exists()
        assert set(
            ReviewItem.objects.filter(campaign=campaign).values_list("state", flat=True)
        ) == {"waiting"}
        Generation.objects.filter(campaign=campaign, task=first.task).update(status="done")
        # What a finishing generation runs: one UPDATE for the items that show it.
        last = Generation.objects.get(campaign=campaign, task=first.task, contender__name="b")
        assert review_items_open_for(generation_id=last.pk) == 1
        assert review_items_open_for(generation_id=last.pk) == 0
        first.refresh_from_db()
        assert first.ready and first.state == "open" and first.outputs.count() == 2

    def test_it_creates_items_only_for_reviewed_samples_with_overlap(self):
        campaign = make_campaign(
            tasks=2,
            samples=3,
            reviewed=2,
            contenders=[
                {"name": "a", "provider": "imported"},
                {"name": "b", "provider": "imported"},
            ],
        )
        # Items exist (waiting) from the campaign's creation; outputs done -> ready.
        assert ReviewItem.objects.filter(campaign=campaign, state="waiting").count() == 4
        Generation.objects.filter(campaign=campaign).update(status="done")
        assert review_items_sync(campaign=campaign) == {"created": 0, "ready": 4}
        assert set(ReviewItem.objects.values_list("sample_index", flat=True)) == {0, 1}
        assert set(ReviewItem.objects.values_list("overlap", flat=True)) == {campaign.overlap}
        assert review_items_sync(campaign=campaign) == {"created": 0, "ready": 0}

    def test_pairwise_with_three_contenders_builds_balanced_pairs(self):
        campaign = make_campaign(
            tasks=12,
            mode="pairwise",
            contenders=[{"name": n, "provider": "imported"} for n in ("a", "b", "c")],
        )
        Generation.objects.filter(campaign=campaign).update(status="done")
        review_items_sync(campaign=campaign)
        items = ReviewItem.objects.filter(campaign=campaign)
        assert items.count() == 12 and all(i.outputs.count() == 2 for i in items)
        pairs = {}
        for item in items:
            names = tuple(
                sorted(item.outputs.values_list("generation__contender__name", flat=True))
            )
            pairs[names] = pairs.get(names, 0) + 1
        assert pairs == {("a", "b"): 4, ("a", "c"): 4, ("b", "c"): 4}
        # each pair's order class (2 outputs: 4 classes) in equal shares, drawn at random
        assert sorted(Counter(items.values_list("rotation", flat=True)).values()) == [3] * 4
        per_contender = (
            ItemOutput.objects.filter(item__campaign=campaign)
            .values("generation__contender__name")
            .annotate(n=Count("pk"))
        )
        assert {r["n"] for r in per_contender} == {8}

    def test_it_deals_every_pair_in_every_category_not_by_file_order(self):
        # The file cycles its categories as often as there are pairs: dealt in file order,
        # each pair would meet only one category.
        categories = ("billing", "account_access", "shipping")
        campaign = make_campaign(
            tasks=12,
            mode="pairwise",
            categories=categories,
            contenders=[{"name": n, "provider": "imported"} for n in ("a", "b", "c")],
        )
        seen = Counter()
        for item in ReviewItem.objects.filter(campaign=campaign).select_related("task"):
            names = tuple(
                sorted(item.outputs.values_list("generation__contender__name", flat=True))
            )
            seen[item.task.category, names] += 1
        # 4 tasks of each category over 3 pairs: every pair once or twice in every category
        for category in categories:
            for pair in [("a", "b"), ("a", "c"), ("b", "c")]:
                assert seen[category, pair] in (1, 2), (category, pair, seen)
        assert sorted(Counter(pair for _, pair in seen.elements()).values()) == [4, 4, 4]

    def test_it_keeps_every_items_pair_when_synced_again(self):
        campaign = make_campaign(
            tasks=12,
            mode="pairwise",
            categories=("billing", "account_access", "shipping"),
            contenders=[{"name": n, "provider": "imported"} for n in ("a", "b", "c")],
        )
        items = ReviewItem.objects.filter(campaign=campaign)
        made = set(items.values_list("task_id", "sample_index", "pair_key"))
        plan = item_plan(campaign)
        assert {(t, s, key) for t, s, key, _ in plan} == made
        # the same plan when recomputed, for one task alone, and whatever outputs are done
        Generation.objects.filter(campaign=campaign, contender__name="a").update(status="done")
        assert item_plan(campaign) == plan
        task_id, _, key, pair = plan[5]
        assert item_plan(campaign, task_id=task_id) == [(task_id, 0, key, pair)]
        Generation.objects.filter(campaign=campaign).update(status="done")
        assert review_items_sync(campaign=campaign) == {"created": 0, "ready": 12}
        # an item dealt by an older rule keeps its pair: no second item for its sample
        other = next(p for *_, p in plan if p != pair)
        items.filter(task_id=task_id).update(pair_key=pair_key(campaign.pk, tuple(other)))
        assert review_items_sync(campaign=campaign) == {"created": 0, "ready": 0}
        assert items.filter(task_id=task_id).count() == 1


class CheckTests(TestCase):
    def test_json_schema_regex_max_chars_and_must_include(self):
        schema = {
            "type": "object",
            "required": ["answer", "confidence"],
            "additionalProperties": False,
            "properties": {
                "answer": {"type": "string", "minLength": 2},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            },
        }
        checks = {
            "json_schema": schema,
            "regex": r"^\{",
            "max_chars": 80,
            "must_include": ["answer"],
        }
        results, passed = run_checks('{"answer": "yes", "confidence": 0.9}', checks)
        assert passed is True and all(r["passed"] for r in results.values())
        results, passed = run_checks('{"answer": "y", "confidence": 2, "extra": 1}', checks)
        assert passed is False
        detail = results["json_schema"]["detail"]
        assert detail == (
            "$: Additional properties are not allowed ('extra' unexpected); "
            "$.answer: 'y' is too short; $.confidence: 2 is greater than the maximum of 1"
        )
        results, _ = run_checks(
            "```json\n" + '{"answer": "ok", "confidence": 1}' + "\n```", {"json_schema": schema}
        )
        assert results["json_schema"]["passed"]
        results, passed = run_checks("not json at all " * 10, checks)
        assert not results["json_schema"]["passed"] and not results["max_chars"]["passed"]
        assert (
            not results["regex"]["passed"]
            and results["must_include"]["detail"] == "missing: answer"
        )
        assert run_checks("anything", {}) == ({}, None)
        results, _ = run_checks("Refund issued", [{"type": "must_include", "terms": ["refund"]}])
        assert results["must_include"]["passed"]

    @pytest.mark.timeout(60)
    def test_it_fails_a_pattern_that_takes_too_long(self):
        # (a|a)+$ backtracks without end on a run of a's that does not end the text; the test
        # set's author wrote it, the output is the model's: a failed check, not a hung worker.
        slow = "pattern took too long (stopped after 1 s on this output): (a|a)+$"
        hostile = "a" * 40 + "b"
        results, passed = run_checks(hostile, {"regex": "(a|a)+$", "max_chars": 100})
        assert passed is False and results["regex"] == {"passed": False, "detail": slow}
        assert results["max_chars"]["passed"]
        # a schema's pattern shares the limit over every item, and a timeout under "not" is
        # a failure too, not a pass (the 'not' schema did not match)
        items = {"type": "array", "items": {"type": "string", "pattern": "(a|a)+$"}}
        for schema in (items, {"not": {"pattern": "(a|a)+$"}}):
            value = [hostile] * 20 if schema is items else hostile
            results, passed = run_checks(json.dumps(value), {"json_schema": schema})
            assert passed is False and results["json_schema"]["detail"] == slow

    @pytest.mark.timeout(60)
    def test_it_runs_patterns_as_before_and_fails_the_ones_it_cannot_run(self):
        # the textbook nested repeat, which hangs Python's re, is no trouble for this engine
        results, _ = run_checks("a" * 40 + "b", {"regex": "(a+)+$"})
        assert results["regex"] == {"passed": False, "detail": "no match for (a+)+$"}
        results, passed = run_checks("Hello\nRefund: 12", {"regex": r"(?i)^refund: \d+$"})
        assert passed is True and results["regex"]["detail"] == "matched"
        schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^A-"}}}
        results, _ = run_checks('{"code": "B-1"}', {"json_schema": schema})
        assert results["json_schema"]["detail"] == "$.code: 'B-1' does not match '^A-'"
        # a stored pattern the engine refuses is a failed check with the reason (an invalid
        # schema pattern used to stop the whole run with re.error)
        results, passed = run_checks('"x"', {"json_schema": {"not": {"pattern": "(x"}}})
        assert passed is False
        assert results["json_schema"]["detail"].startswith("invalid pattern (missing )")
        results, _ = run_checks("a", {"regex": "(?:a{100}){1000}"})
        assert results["regex"]["detail"] == (
            "invalid pattern (its counted repeats expand to over 10,000 items): (?:a{100}){1000}"
        )

    def test_it_fails_a_stored_schema_that_is_not_valid_with_the_reason(self):
        # a schema imported before intake checked the metaschema: a result, not an exception
        for schema, reason in (
            ({"properties": [1]}, "at $.properties: [1] is not of type 'object'"),
            ({"required": 5}, "at $.required: 5 is not of type 'array'"),
        ):
            results, passed = run_checks('{"a": 1}', {"json_schema": schema, "max_chars": 9})
            assert passed is False and results["max_chars"]["passed"]
            assert results["json_schema"] == {
                "passed": False,
                "detail": f"check could not run: not a valid JSON Schema: {reason}",
            }

    @pytest.mark.timeout(60)
    def test_all_the_checks_of_an_output_share_one_time_budget(self):
        # an allOf of many schemas walks a big output once per schema: this held a request
        # for minutes; it now stops at the budget and says so
        output = json.dumps([{"id": i, "name": "x" * 4} for i in range(40_000)])
        item = {"type": "object", "properties": {"id": {"type": "integer", "minimum": 0}}}
        schema = {"allOf": [{"type": "array", "items": item}] * 400}
        started = time.monotonic()
        results, passed = run_checks(output, {"json_schema": schema, "must_include": ["id"]})
        assert time.monotonic() - started < 5
        budget = "check could not run: time budget exceeded (1 s for all the checks of this output)"
        assert passed is False and results["json_schema"]["detail"] == budget
        assert results["must_include"]["passed"]
        # a pattern that used up the budget leaves the schema check as an error, not a hang
        hostile = "a" * 40 + "b"
        results, _ = run_checks(hostile, {"json_schema": {"allOf": [{}] * 9}, "regex": "(a|a)+$"})
        assert results["regex"]["detail"].startswith("pattern took too long")
        assert results["json_schema"] == {"passed": False, "detail": budget}


# -- real workers on Redis + PostgreSQL -------------------------------------------------------------

# Timeouts leave room for a loaded CI machine; the attempt caps leave room for a spurious
# timeout on top of the scripted faults, so the exact-count assertions below stay exact.
WORKER_ENV = {
    "GENERATION_READ_TIMEOUT": "2",
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
        env = {**WORKER_ENV, **kwargs.pop("extra_env", {})}
        worker = Worker(extra_env=env, **kwargs)
        started.append(worker)
        wait_until(lambda: "ready" in worker.log(), timeout=60, message="worker ready")
        return worker

    start.started = started
    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def fake():
    server = FakeLLM(slow_seconds=4)
    yield server
    server.close()


def _finished(campaign):
    waiting = Generation.objects.filter(campaign=campaign, status__in=["pending", "running"])
    return not waiting.exclude(contender__provider="imported").exists()


@pytest.mark.postgres
@pytest.mark.redis
def test_a_campaign_runs_to_completion_through_a_faulty_server(workers, fake):
    campaign = make_campaign(
        fake,
        tasks=3,
        samples=2,
        slug="faulty",
        contenders=[
            {
                "name": "oa",
                "provider": "openai",
                "model": "oa",
                "price_in_per_mtok": 1,
                "price_out_per_mtok": 1,
            },
            {"name": "an", "provider": "anthropic", "model": "an"},
            {"name": "bad", "provider": "openai", "model": "bad"},
            {"name": "down", "provider": "openai", "model": "down"},
        ],
    )
    fake.script("oa", "429", "500", "502", "503", "slow", "malformed")
    fake.script("an", "529", "malformed", "slow")
    fake.set_always("bad", "400")
    fake.set_always("down", "502")
    workers(concurrency=4, extra_env={"GENERATION_MAX_ATTEMPTS": "5"})
    assert generation_enqueue(campaign=campaign) == 4 * 3 * 2
    wait_until(lambda: _finished(campaign), timeout=120, message="campaign finished")

    rows = Generation.objects.filter(campaign=campaign).select_related("contender")
    for row in rows:
        name = row.contender.name
        if name in ("oa", "an"):
            assert row.status == "done", (name, row.error)
            assert row.output == f"{name} answers: {row.task.prompt}"
            assert (
                row.latency_ms is not None
                and row.ttft_ms is not None
                and row.ttft_ms <= row.latency_ms
            )
            assert row.input_tokens and row.output_tokens
            assert 1 <= row.attempts <= 5
        elif name == "bad":
            assert (
                row.status == "failed"
                and row.attempts == 1
                and "max_tokens is too large" in row.error
            )
        else:
            assert (
                row.status == "failed"
                and row.attempts == 5
                and row.retries == 4
                and "HTTP 502" in row.error
            )
    oa = rows.filter(contender__name="oa")
    # Every scripted fault cost one retry (a spurious timeout on a loaded machine may add one).
    assert sum(r.retries for r in oa) >= 6 and all(r.cost is not None for r in oa)
    assert sum(r.retries for r in rows.filter(contender__name="an")) >= 3
    assert sum(r.attempts for r in oa) == 6 + sum(r.retries for r in oa)
    # Every attempt is one provider call, and no stored result was dropped as a duplicate.
    for name in ("oa", "an"):
        named = rows.filter(contender__name=name)
        assert len(fake.calls_for(name)) == sum(r.attempts for r in named)
        assert sum(r.discarded_calls for r in named) == 0
    assert len(fake.calls_for("down")) == 6 * 5
    # Failed contenders keep their items waiting: a missing side is never offered.
    assert ReviewItem.objects.filter(campaign=campaign).count() == 3
    assert not ReviewItem.objects.filter(campaign=campaign, ready=True).exists()
    # The worker that stores the last row flips the campaign to reviewing right after.
    wait_until(
        lambda: Campaign.objects.get(pk=campaign.pk).status == "reviewing",
        timeout=10,
        message="campaign status reviewing",
    )


@pytest.mark.postgres
@pytest.mark.redis
def test_a_worker_killed_mid_job_loses_nothing(workers, fake):
    campaign = make_campaign(
        fake,
        tasks=4,
        slug="killed",
        contenders=[
            {"name": "s1", "provider": "openai", "model": "s1"},
            {"name": "s2", "provider": "anthropic", "model": "s2"},
        ],
    )
    fake.set_delay("s1", 1.5)
    fake.set_delay("s2", 1.5)
    env = {
        "GENERATION_LEASE_SECONDS": "4",
        "GENERATION_READ_TIMEOUT": "3",
        "GENERATION_MAX_ATTEMPTS": "5",
    }
    first = workers(concurrency=2, extra_env=env)
    generation_enqueue(campaign=campaign)
    wait_until(
        lambda: Generation.objects.filter(campaign=campaign, status="running").count() >= 2,
        timeout=30,
        message="jobs in flight",
    )
    first.kill()
    in_flight = set(
        Generation.objects.filter(campaign=campaign, status="running").values_list("pk", flat=True)
    )
    assert in_flight
    workers(concurrency=2, extra_env=env)

    def reconciled():
        generation_reconcile(requeue_after=3)  # what beat runs every minute
        return _finished(campaign)

    wait_until(reconciled, timeout=120, interval=2, message="campaign finished after the kill")
    rows = list(Generation.objects.filter(campaign=campaign).select_related("contender", "task"))
    assert all(r.status == "done" for r in rows), [(r.pk, r.status, r.error) for r in rows]
    assert all(r.output == f"{r.contender.name} answers: {r.task.prompt}" for r in rows)
    assert all(1 <= r.attempts <= 5 for r in rows)
    assert all(r.attempts >= 2 for r in rows if r.pk in in_flight)
    assert (
        ItemOutput.objects.filter(item__campaign=campaign).values("generation").distinct().count()
        == 8
    )
    # Each item opens right after its last output is stored, by the worker that stored it.
    wait_until(
        lambda: ReviewItem.objects.filter(campaign=campaign, ready=True, state="open").count() == 4,
        timeout=10,
        message="items open",
    )


@pytest.mark.postgres
@pytest.mark.redis
def test_duplicate_delivery_makes_one_call_and_one_output(workers, fake):
    from tasks.jobs import generation_run_job

    campaign = make_campaign(
        fake,
        tasks=1,
        slug="dup",
        contenders=[
            {"name": "d1", "provider": "openai", "model": "d1"},
            {"name": "imp", "provider": "imported"},
        ],
    )
    fake.set_delay("d1", 0.5)  # below the 1 s read timeout
    row = Generation.objects.get(campaign=campaign, contender__name="d1")
    Generation.objects.filter(pk=row.pk).update(queued_at=timezone.now())
    workers(concurrency=3)
    for _ in range(3):
        generation_run_job.delay(row.pk)
    wait_until(
        lambda: Generation.objects.get(pk=row.pk).status == "done", timeout=60, message="row done"
    )
    generation_run_job.delay(row.pk)  # a late redelivery after it finished
    wait_until(lambda: len(fake.calls) >= 1, timeout=5)

    time.sleep(2)
    row.refresh_from_db()
    assert len(fake.calls_for("d1")) == 1, (
        [c["at"] for c in fake.calls_for("d1")],
        row.attempts,
        row.status,
        [w.log() for w in workers.started],
    )
    assert (
        row.attempts == 1
        and row.discarded_calls == 0
        and row.output == "d1 answers: Question number 1?"
    )


@pytest.mark.postgres
@pytest.mark.redis
def test_the_concurrency_limit_holds_across_workers(workers, fake):
    campaign = make_campaign(
        fake,
        tasks=8,
        slug="sem",
        contenders=[
            {"name": "narrow", "provider": "openai", "model": "narrow", "max_concurrency": 2},
            {"name": "imp", "provider": "imported"},
        ],
    )
    fake.set_delay("narrow", 0.4)
    workers(concurrency=3)
    workers(concurrency=3)
    generation_enqueue(campaign=campaign)
    wait_until(lambda: _finished(campaign), timeout=90, message="campaign finished")
    assert (
        Generation.objects.filter(
            campaign=campaign, contender__name="narrow", status="done"
        ).count()
        == 8
    )
    assert fake.max_active["narrow"] == 2


def _in_thread(target, *args, **kwargs):
    """Run target in a thread with its own database connection; returns (thread, results)."""
    from django.db import connection

    results = []

    def run():
        try:
            results.append(target(*args, **kwargs))
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, results


def limited_campaign(fake, *, slug: str, name: str, limit: int, tasks: int):
    """One OpenAI-compatible contender with a concurrency limit (plus an imported one, so
    review items exist); returns the campaign and the limited contender's rows."""
    campaign = make_campaign(
        fake,
        tasks=tasks,
        slug=slug,
        contenders=[
            {"name": name, "provider": "openai", "model": name, "max_concurrency": limit},
            {"name": "imp", "provider": "imported"},
        ],
    )
    return campaign, Generation.objects.filter(campaign=campaign, contender__name=name)


@pytest.mark.postgres
def test_a_busy_claim_waits_for_the_slot_a_thread_releases(transactional_db, monkeypatch):
    # Only the wake-up can end this wait in time: the fallback poll is far longer.
    monkeypatch.setattr(gen_run, "CLAIM_POLL_SECONDS", 30)
    with FakeLLM() as fake:
        campaign, limited = limited_campaign(fake, slug="wait", name="w", limit=2, tasks=3)
        rows = list(limited)
        first, token, _ = gen_run._claim(rows[0].pk)
        assert gen_run._claim(rows[1].pk)[2] is None
        queued_at = rows[2].queued_at
        waiter, results = _in_thread(gen_run._claim, rows[2].pk, wait=20)
        time.sleep(0.5)
        assert results == [] and Generation.objects.get(pk=rows[2].pk).status == "pending"

        started = time.monotonic()
        result = providers.generate(first.contender, first.task.conversation())
        assert gen_run._store(first, token, result).action == "done"
        waiter.join(10)
        assert time.monotonic() - started < 5
        claimed, claimed_token, outcome = results[0]
        assert outcome is None and claimed.pk == rows[2].pk and claimed_token
        row = Generation.objects.get(pk=rows[2].pk)
        # Claimed in place: not bounced through the broker (queued_at untouched), one attempt.
        assert row.status == "running" and row.attempts == 1 and row.queued_at == queued_at
        running = Generation.objects.filter(campaign=campaign, status="running")
        assert running.count() == 2


@pytest.mark.postgres
def test_only_a_few_threads_per_process_wait_for_one_contender(transactional_db, monkeypatch):
    monkeypatch.setattr(gen_run, "CLAIM_POLL_SECONDS", 30)
    monkeypatch.setattr(claim_waits, "CLAIM_WAITERS", 2)
    with FakeLLM() as fake:
        _, limited = limited_campaign(fake, slug="waiters", name="one", limit=1, tasks=4)
        rows = list(limited)
        holder, token, _ = gen_run._claim(rows[0].pk)
        waiting = [_in_thread(gen_run._claim, row.pk, wait=20) for row in rows[1:3]]
        time.sleep(0.5)
        # A third thread does not park (its thread stays free for other contenders' jobs).
        started = time.monotonic()
        assert gen_run._claim(rows[3].pk, wait=20)[2].action == "busy"
        assert time.monotonic() - started < 5
        # Each released slot goes to one of the waiting threads.
        finished = []
        for _ in waiting:
            result = providers.generate(holder.contender, holder.task.conversation())
            assert gen_run._store(holder, token, result).action == "done"

            def newly_finished():
                return [(t, r) for t, r in waiting if not t.is_alive() and t not in finished]

            (thread, results), *_ = wait_until(newly_finished, timeout=10, message="a claim")
            finished.append(thread)
            holder, token, outcome = results[0]
            assert outcome is None
            assert Generation.objects.get(pk=holder.pk).status == "running"


def test_a_single_thread_worker_process_never_waits_at_a_claim():
    # A prefork child (or the solo pool) has one thread: were it to wait for a busy
    # contender's slot, nothing else would run in it meanwhile. It re-queues instead.
    releases = claim_waits._SlotReleases()
    releases.threads = 1
    assert releases.wait(7, releases.count(7), timeout=20) is False


def test_a_threads_worker_keeps_most_of_its_threads_free_of_waiting():
    releases = claim_waits._SlotReleases()
    releases.threads = 8  # one in CLAIM_THREADS_PER_WAITER (4) may wait: 2
    waiters = [threading.Thread(target=releases.wait, args=(1, 0, 30)) for _ in range(2)]
    for thread in waiters:
        thread.start()
    wait_until(lambda: releases._waiting.get(1) == 2, timeout=10, message="two waiters")
    # Another contender's claim finds the process's share taken: no third thread waits.
    assert releases.wait(2, 0, timeout=20) is False
    releases.released(1)
    releases.released(1)
    for thread in waiters:
        thread.join(10)
        assert not thread.is_alive()


def test_a_worker_tells_the_claim_how_many_threads_it_runs():
    from celery.concurrency.prefork import TaskPool as Prefork
    from celery.concurrency.thread import TaskPool as Threads

    from evalsite.celery import count_task_threads, one_task_thread

    try:
        for pool, concurrency, threads in [
            (Threads, 10, 10),
            ("threads", 8, 8),
            (Prefork, 2, 1),
            ("solo", 4, 1),
        ]:
            worker = type("W", (), {"pool_cls": pool, "concurrency": concurrency})()
            count_task_threads(sender=worker)
            assert claim_waits.slot_releases.threads == threads
        one_task_thread()
        assert claim_waits.slot_releases.threads == 1
    finally:
        claim_waits.slot_releases.threads = None


@pytest.mark.postgres
def test_waiting_claims_never_exceed_the_contender_concurrency(transactional_db, monkeypatch):
    # Many more threads than slots, all allowed to wait at the claim: none is re-queued as
    # busy, and the endpoint never sees more than the limit.
    monkeypatch.setattr(claim_waits, "CLAIM_WAITERS", 8)
    with FakeLLM() as fake:
        _, limited = limited_campaign(fake, slug="waitmany", name="m", limit=2, tasks=8)
        fake.set_delay("m", 0.2)
        rows = limited
        rows.update(queued_at=timezone.now())
        runs = [
            _in_thread(generation_run, generation_id=pk, claim_wait=20)
            for pk in rows.values_list("pk", flat=True)
        ]
        for thread, _ in runs:
            thread.join(30)
        assert [results[0].action for _, results in runs] == ["done"] * 8
        assert fake.max_active["m"] == 2 and len(fake.calls_for("m")) == 8
        assert all(row.attempts == 1 for row in rows)


@pytest.mark.postgres
@pytest.mark.redis
def test_a_contender_at_its_limit_does_not_hold_up_another(workers, fake):
    # The slow contender has one slot and a queue; the worker has two single-thread processes.
    # Its queued claims go back to the broker at once instead of parking the other process,
    # so every fast row is done while the slow contender has finished at most two of its own
    # (it used to be about one fast row per slow one).
    campaign = make_campaign(
        fake,
        tasks=10,
        slug="fair",
        mode="pairwise",
        contenders=[
            {"name": "slow", "provider": "openai", "model": "slow", "max_concurrency": 1},
            {"name": "fast", "provider": "openai", "model": "fast", "max_concurrency": 2},
        ],
    )
    fake.set_delay("slow", 2)
    fake.set_delay("fast", 0.1)
    workers(concurrency=2)
    generation_enqueue(campaign=campaign)
    rows = Generation.objects.filter(campaign=campaign)
    fast, slow = rows.filter(contender__name="fast"), rows.filter(contender__name="slow")
    wait_until(
        lambda: not fast.exclude(status="done").exists(), timeout=60, message="fast rows done"
    )
    last_fast = max(fast.values_list("finished_at", flat=True))
    slow_before = slow.filter(status="done", finished_at__lt=last_fast).count()
    generation_cancel(campaign=campaign)
    assert slow_before <= 2
    assert fake.max_active["slow"] == 1


@pytest.mark.postgres
@pytest.mark.redis
def test_a_worker_keeps_its_database_connections_across_jobs(workers, fake):
    from django.db import connection

    def sessions():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT sessions FROM pg_stat_database WHERE datname = current_database()"
            )
            return cursor.fetchone()[0]

    campaign = make_campaign(
        fake,
        tasks=12,
        slug="conns",
        contenders=[
            {"name": "c1", "provider": "openai", "model": "c1"},
            {"name": "imp", "provider": "imported"},
        ],
    )
    workers(concurrency=2)
    before = sessions()
    generation_enqueue(campaign=campaign)
    wait_until(lambda: _finished(campaign), timeout=60, message="campaign finished")
    # Celery's Django fixup alone would connect afresh for each of the 12 jobs.
    assert sessions() - before <= 4


@pytest.mark.postgres
@pytest.mark.redis
def test_generate_wait_shows_progress_and_a_summary(workers, fake):
    from io import StringIO

    from django.core.management import call_command

    make_campaign(
        fake,
        tasks=2,
        slug="cli",
        contenders=[
            {
                "name": "cli-a",
                "provider": "openai",
                "model": "cli-a",
                "price_in_per_mtok": 1,
                "price_out_per_mtok": 1,
            },
            {"name": "cli-b", "provider": "anthropic", "model": "cli-b"},
        ],
    )
    fake.script("cli-a", "503")
    workers(concurrency=2)
    out = StringIO()
    call_command("generate", "cli", "--wait", "--interval", "0.2", "--timeout", "60", stdout=out)
    text = out.getvalue()
    assert "Queued 4 generations for cli." in text
    assert "] 4/4  done 4  failed 0" in text  # the last progress line
    # Not a terminal (a CI log): a line each time the progress changes, no carriage returns.
    assert "\r" not in text
    assert "Status: reviewing." in text
    summary = {
        line.split()[0]: line.split() for line in text.splitlines() if line.startswith("cli-")
    }
    assert summary["cli-a"][1:3] == ["2", "0"] and summary["cli-b"][1:3] == ["2", "0"]
    assert int(summary["cli-a"][3]) >= 1  # the scripted 503 was retried


@pytest.mark.postgres
@pytest.mark.redis
def test_generate_wait_exits_non_zero_after_the_summary_when_a_generation_failed(workers, fake):
    from io import StringIO

    from django.core.management import CommandError, call_command

    make_campaign(
        fake,
        tasks=2,
        slug="cli-fail",
        contenders=[
            {"name": "ok-a", "provider": "openai", "model": "ok-a"},
            {"name": "bad-b", "provider": "openai", "model": "bad-b"},
        ],
    )
    fake.set_always("bad-b", "400")  # permanent: fails at once, no retries
    workers(concurrency=2)
    out = StringIO()
    with pytest.raises(CommandError, match=r"^cli-fail: 2 generations failed$"):
        call_command(
            "generate", "cli-fail", "--wait", "--interval", "0.2", "--timeout", "60", stdout=out
        )
    text = out.getvalue()
    assert "] 4/4  done 2  failed 2" in text
    assert "2 generations failed: see the campaign page" in text  # the summary came first


def test_the_reconciler_runs_every_minute_on_beat():
    import tasks.jobs  # noqa: F401 - what the worker's autodiscovery imports
    from evalsite.celery import app

    entry = app.conf.beat_schedule["generation-reconcile"]
    assert entry["task"] == "tasks.generation_reconcile" and entry["schedule"] == 60.0
    assert "tasks.generation_reconcile" in app.tasks
