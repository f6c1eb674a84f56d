"""Tool loops and conversations in generation, against the local endpoint (tests/fake_llm.py)
scripting tool calls and answers per model: what is stored (docs/tools.md, "Transcripts") and
what the endpoint was sent."""

import json
from decimal import Decimal

from django.test import TestCase, override_settings
from django.utils import timezone

from reviews.models import ItemOutput, ReviewItem
from tasks.campaigns.definition import campaign_create
from tasks.generation.conversation import UNMOCKED
from tasks.generation.prices import Usage
from tasks.generation.providers.base import cost_of
from tasks.generation.run import generation_run
from tasks.generation.services import generation_rows_create
from tasks.models import Campaign, Generation
from tests.factories import TaskFactory, TestSetFactory
from tests.fake_llm import FakeLLM, request_view

ORDER_SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}},
    "required": ["order_id"],
    "additionalProperties": False,
}
TOOLS = [
    {"name": "get_order", "description": "Look an order up.", "parameters": ORDER_SCHEMA},
    {"name": "refund", "parameters": ORDER_SCHEMA},
]
MOCKS = [
    {"tool": "get_order", "match": {"order_id": "A-17"}, "result": {"status": "shipped"}},
    {"tool": "refund", "error": "timeout", "times": 1},
    {"tool": "refund", "result": {"refunded": True}},
]
TIMING = ("latency_ms", "ttft_ms", "input_tokens", "output_tokens")


def campaign_for(fake, *, slug, tasks, contenders, samples=1, reviewed=1):
    """A campaign over one test set of tasks (each a dict of Task fields)."""
    ts = TestSetFactory(name=f"ts-{slug}", frozen=False, task_count=len(tasks))
    for i, fields in enumerate(tasks):
        TaskFactory(testset=ts, position=i, external_id=f"T-{i + 1}", **fields)
    for contender in contenders:
        if contender["provider"] != "imported":
            contender.setdefault("base_url", fake.base_url)
            contender.setdefault("model", contender["name"])
    campaign, _ = campaign_create(
        definition={
            "slug": slug,
            "testset": ts.name,
            "contenders": contenders,
            "samples_per_task": samples,
            "reviewed_samples": reviewed,
            "mode": "both",
            "rubric": [{"key": "accuracy"}],
        }
    )
    return campaign


def run_all(campaign, **filters):
    rows = Generation.objects.filter(campaign=campaign, **filters).order_by("pk")
    for row in rows:
        assert generation_run(generation_id=row.pk).action == "done", row.pk
    return {
        (r.contender.name, r.sample_index, r.single_turn): r
        for r in Generation.objects.filter(campaign=campaign).select_related("contender")
    }


def timings(transcript):
    """The transcript without its measured figures, and those figures per step."""
    measured, shape = [], []
    for turn in transcript:
        steps = []
        for step in turn["steps"]:
            measured.append({key: step[key] for key in TIMING})
            steps.append({k: v for k, v in step.items() if k not in TIMING})
        shape.append({**turn, "steps": steps})
    return shape, measured


def call(call_id, name, arguments, raw=None, *, valid=True, unknown=False):
    return {
        "id": call_id,
        "name": name,
        "arguments": arguments,
        "raw": json.dumps(arguments) if raw is None else raw,
        "valid": valid,
        "unknown": unknown,
    }


def result(call_id, name, value=None, error="", unmocked=False):
    return {"id": call_id, "name": name, "result": value, "error": error, "unmocked": unmocked}


@override_settings(GENERATION_READ_TIMEOUT=3, GENERATION_MAX_ATTEMPTS=2)
class ToolLoopTests(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fake = FakeLLM()

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    def test_it_stores_the_transcript_as_scripted_for_both_providers(self):
        lookup = {"tool_calls": [{"name": "get_order", "arguments": {"order_id": "A-17"}}]}
        for model in ("oa-right", "an-right"):
            self.fake.steps(model, lookup, "Order A-17 has shipped.")
            self.fake.set_delay(model, 0.05)
        campaign = campaign_for(
            self.fake,
            slug="right",
            tasks=[{"prompt": "Where is order A-17?", "tools": TOOLS, "tool_mocks": MOCKS}],
            contenders=[
                {
                    "name": "oa-right",
                    "provider": "openai",
                    "price_in_per_mtok": 1,
                    "price_out_per_mtok": 3,
                },
                {"name": "an-right", "provider": "anthropic"},
            ],
        )
        rows = run_all(campaign)
        for name, prefix, finishes in (
            ("oa-right", "call", ("tool_calls", "stop")),
            ("an-right", "toolu", ("tool_use", "end_turn")),
        ):
            row = rows[name, 0, False]
            call_id = f"{prefix}_1_1_1"
            shape, measured = timings(row.transcript)
            assert shape == [
                {
                    "turn": 1,
                    "user": None,
                    "steps": [
                        {
                            "text": "",
                            "tool_calls": [call(call_id, "get_order", {"order_id": "A-17"})],
                            "tool_results": [result(call_id, "get_order", {"status": "shipped"})],
                            "finish_reason": finishes[0],
                        },
                        {
                            "text": "Order A-17 has shipped.",
                            "tool_calls": [],
                            "tool_results": [],
                            "finish_reason": finishes[1],
                        },
                    ],
                    "answer": "Order A-17 has shipped.",
                    "finish_reason": finishes[1],
                    "checks_passed": None,
                }
            ], name
            assert row.output == "Order A-17 has shipped." and row.finish_reason == finishes[1]
            # Per step: the endpoint's own usage and the 50 ms it waited; for the task: summed
            # tokens and cost, the first step's time to first token, the whole loop's time.
            usage = [c["usage"] for c in self.fake.calls_for(name)]
            assert [(m["input_tokens"], m["output_tokens"]) for m in measured] == usage
            assert all(m["latency_ms"] >= 50 and m["ttft_ms"] <= m["latency_ms"] for m in measured)
            assert row.input_tokens == sum(u[0] for u in usage)
            assert row.output_tokens == sum(u[1] for u in usage)
            assert row.cost == cost_of(
                row.contender,
                Usage(input_tokens=row.input_tokens, output_tokens=row.output_tokens),
            )
            assert row.ttft_ms == measured[0]["ttft_ms"]
            assert row.latency_ms >= sum(m["latency_ms"] for m in measured)
        assert (
            rows["oa-right", 0, False].cost
            == Decimal(
                rows["oa-right", 0, False].input_tokens * 1
                + rows["oa-right", 0, False].output_tokens * 3
            )
            / 10**6
        )
        # The second call carried the first call and the mock's result back.
        second = self.fake.calls_for("oa-right")[1]["body"]
        assert second["messages"][-2:] == [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_1_1_1",
                        "type": "function",
                        "function": {"name": "get_order", "arguments": '{"order_id": "A-17"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1_1_1", "content": '{"status": "shipped"}'},
        ]
        assert [t["function"]["name"] for t in second["tools"]] == ["get_order", "refund"]
        last = self.fake.calls_for("an-right")[1]["body"]["messages"][-1]
        assert last == {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1_1_1",
                    "content": '{"status": "shipped"}',
                }
            ],
        }

    def test_max_steps_cuts_a_loop_that_never_answers(self):
        def looping(request):
            return {
                "text": f"checking again ({request.step})",
                "tool_calls": [{"name": "get_order", "arguments": {"order_id": "A-17"}}],
            }

        self.fake.respond("looper", looping)
        campaign = campaign_for(
            self.fake,
            slug="loop",
            tasks=[
                {"prompt": "Where is A-17?", "tools": TOOLS, "tool_mocks": MOCKS, "max_steps": 3}
            ],
            contenders=[
                {"name": "looper", "provider": "openai"},
                {"name": "imp", "provider": "imported"},
            ],
        )
        row = run_all(campaign, contender__name="looper")["looper", 0, False]
        assert len(self.fake.calls_for("looper")) == 3
        (turn,) = row.transcript
        assert len(turn["steps"]) == 3 and turn["finish_reason"] == "max_steps"
        assert row.finish_reason == "max_steps" and row.output == "checking again (3)"
        # Every call was answered, the cut one's too: a next turn's history needs it.
        assert [s["tool_results"][0]["result"] for s in turn["steps"]] == [
            {"status": "shipped"}
        ] * 3

    def test_mocks_answer_by_match_error_and_times_and_flag_what_they_cannot(self):
        script = [
            {"tool_calls": [{"name": "refund", "arguments": {"order_id": "A-17"}}]},
            {"tool_calls": [{"name": "refund", "arguments": {"order_id": "A-17"}}]},
            {
                "tool_calls": [
                    {"name": "get_order", "arguments": {"order_id": "B-2"}},  # no mock matches
                    {"name": "cancel_order", "arguments": {"order_id": "A-17"}},  # not declared
                    {"name": "get_order", "arguments": '{"order_id": "A-'},  # not JSON
                    {"name": "get_order", "arguments": {"order_id": 17}},  # breaks the schema
                ]
            },
            "Refunded after a retry.",
        ]
        for model in ("oa-mocks", "an-mocks"):
            self.fake.steps(model, *script)
        campaign = campaign_for(
            self.fake,
            slug="mocks",
            tasks=[{"prompt": "Refund A-17.", "tools": TOOLS, "tool_mocks": MOCKS}],
            contenders=[
                {"name": "oa-mocks", "provider": "openai"},
                {"name": "an-mocks", "provider": "anthropic"},
            ],
        )
        rows = run_all(campaign)
        for name, prefix in (("oa-mocks", "call"), ("an-mocks", "toolu")):
            shape, _ = timings(rows[name, 0, False].transcript)
            steps = shape[0]["steps"]
            ids = [f"{prefix}_1_3_{i}" for i in range(1, 5)]
            assert steps[0]["tool_results"] == [
                result(f"{prefix}_1_1_1", "refund", error="timeout")
            ]
            assert steps[1]["tool_results"] == [
                result(f"{prefix}_1_2_1", "refund", {"refunded": True})
            ]
            assert steps[2]["tool_calls"] == [
                call(ids[0], "get_order", {"order_id": "B-2"}),
                call(ids[1], "cancel_order", {"order_id": "A-17"}, valid=False, unknown=True),
                call(ids[2], "get_order", None, '{"order_id": "A-', valid=False),
                call(ids[3], "get_order", {"order_id": 17}, valid=False),
            ], name
            assert steps[2]["tool_results"] == [
                result(ids[0], "get_order", error=UNMOCKED, unmocked=True),
                result(ids[1], "cancel_order", error=UNMOCKED, unmocked=True),
                result(ids[2], "get_order", error="the arguments are not a JSON object"),
                result(ids[3], "get_order", error=UNMOCKED, unmocked=True),
            ], name
            assert rows[name, 0, False].output == "Refunded after a retry."
        # The model was told of the error: as JSON for OpenAI, marked is_error for Anthropic.
        assert self.fake.calls_for("oa-mocks")[1]["body"]["messages"][-1] == {
            "role": "tool",
            "tool_call_id": "call_1_1_1",
            "content": '{"error": "timeout"}',
        }
        assert self.fake.calls_for("an-mocks")[1]["body"]["messages"][-1]["content"] == [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1_1_1",
                "content": '{"error": "timeout"}',
                "is_error": True,
            }
        ]

    def test_a_loop_resumes_from_its_last_saved_step_asking_again_only_for_the_failed_one(self):
        # The loop of four steps fails at its third call (HTTP 500): it used to start again
        # from the first, paying for every step twice (33% of calls at a 20% fault rate).
        script = [
            {"tool_calls": [{"name": "get_order", "arguments": {"order_id": "A-17"}}]},
            {"tool_calls": [{"name": "refund", "arguments": {"order_id": "A-17"}}]},
            {"tool_calls": [{"name": "refund", "arguments": {"order_id": "A-17"}}]},
            "Refunded A-17.",
        ]
        self.fake.steps("resumer", *script)
        self.fake.script("resumer", "ok", "ok", "500")
        campaign = campaign_for(
            self.fake,
            slug="resume",
            tasks=[{"prompt": "Refund order A-17.", "tools": TOOLS, "tool_mocks": MOCKS}],
            contenders=[
                {
                    "name": "resumer",
                    "provider": "openai",
                    "price_in_per_mtok": 2,
                    "price_out_per_mtok": 4,
                }
            ],
        )
        row = Generation.objects.get(campaign=campaign)
        assert generation_run(generation_id=row.pk).action == "retry"
        row.refresh_from_db()
        saved = row.loop_progress
        assert row.status == "pending" and [len(saved["steps"]), saved["turn"]] == [2, 1]
        assert saved["used"] == {"0": 1, "1": 1}  # the refund mock's one timeout was used
        Generation.objects.filter(pk=row.pk).update(queued_at=timezone.now())
        assert generation_run(generation_id=row.pk).action == "done"
        calls = self.fake.calls_for("resumer")
        # each step asked once, the failed third twice: the retry carried on from step 3
        assert [request_view("openai", c["body"]).step for c in calls] == [1, 2, 3, 3, 4]
        row.refresh_from_db()
        (turn,) = row.transcript
        assert [s["tool_results"][0]["error"] for s in turn["steps"][1:3]] == ["timeout", ""]
        assert turn["steps"][2]["tool_results"][0]["result"] == {"refunded": True}
        assert row.output == "Refunded A-17." and row.loop_progress is None
        kept = [c["usage"] for c in calls if c["usage"]]
        assert len(kept) == 4  # the 500 answered no tokens: nothing was paid for twice
        assert row.input_tokens == sum(u[0] for u in kept)
        assert row.output_tokens == sum(u[1] for u in kept)
        assert (row.retried_input_tokens, row.retried_output_tokens) == (0, 0)
        assert row.cost == cost_of(
            row.contender, Usage(input_tokens=row.input_tokens, output_tokens=row.output_tokens)
        )

    def test_a_plain_task_is_one_call_with_an_empty_transcript(self):
        campaign = campaign_for(
            self.fake,
            slug="one-call",
            tasks=[{"prompt": "Say hi."}],
            contenders=[
                {"name": "plain", "provider": "openai"},
                {"name": "imp", "provider": "imported"},
            ],
        )
        row = run_all(campaign, contender__name="plain")["plain", 0, False]
        assert row.transcript == [] and row.output == "plain answers: Say hi."
        (sent,) = self.fake.calls_for("plain")
        assert "tools" not in sent["body"]
        assert sent["body"]["messages"] == [{"role": "user", "content": "Say hi."}]

    def test_a_model_name_hidden_in_tool_arguments_or_results_is_found(self):
        self.fake.steps(
            "oa-leak",
            {"tool_calls": [{"name": "get_order", "arguments": {"order_id": "written by gpt-4o"}}]},
            "Done.",
        )
        campaign = campaign_for(
            self.fake,
            slug="leak",
            tasks=[
                {
                    "prompt": "Where is my order?",
                    "tools": TOOLS,
                    "tool_mocks": [{"tool": "get_order", "result": {"by": "Claude 3 Opus"}}],
                }
            ],
            contenders=[
                {"name": "oa-leak", "provider": "openai"},
                {"name": "imp", "provider": "imported"},
            ],
        )
        row = run_all(campaign, contender__name="oa-leak")["oa-leak", 0, False]
        assert row.output == "Done." and row.identity_leak and row.identity_held
        found = {f["text"].lower() for f in row.identity_findings}
        assert any("gpt-4o" in text for text in found), found
        assert any("claude" in text for text in found), found


@override_settings(GENERATION_READ_TIMEOUT=3, GENERATION_MAX_ATTEMPTS=2)
class ConversationTests(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fake = FakeLLM()

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    TURNS = [
        "I need a hotel in Rome.",
        "Under 100 euros a night.",
        "Near the station.",
        "With breakfast.",
    ]

    def conversation_campaign(self, slug, **task):
        # The steady contender keeps the budget in every answer; the forgetful one drops it
        # after turn 3.
        self.fake.respond(
            f"steady-{slug}", lambda r: f"Hotel Roma, under 100 euros (turn {r.turn})"
        )
        self.fake.respond(
            f"forgetful-{slug}",
            lambda r: (
                f"Hotel Lusso (turn {r.turn})"
                if r.turn > 3
                else f"Hotel Roma, under 100 euros (turn {r.turn})"
            ),
        )
        return campaign_for(
            self.fake,
            slug=slug,
            tasks=[
                {
                    "prompt": "",
                    "messages": [{"role": "system", "content": "You are a travel agent."}],
                    "turns": self.TURNS,
                    "turn_checks": {str(n): {"must_include": ["100 euros"]} for n in (2, 3, 4)},
                    "checks": {"must_include": ["100 euros"]},
                    **task,
                }
            ],
            contenders=[
                {"name": f"steady-{slug}", "provider": "openai"},
                {"name": f"forgetful-{slug}", "provider": "anthropic"},
            ],
            samples=2,
            reviewed=1,
        )

    def test_each_turn_carries_the_contenders_own_answers_and_its_turn_checks(self):
        campaign = self.conversation_campaign("turns")
        rows = run_all(campaign, single_turn=False)
        forgetful = rows["forgetful-turns", 0, False]
        steady = rows["steady-turns", 0, False]
        # Turn 3 was asked with the contender's own answers to turns 1 and 2 in the history.
        third = [c for c in self.fake.calls_for("forgetful-turns")][2]["body"]
        assert third["system"] == "You are a travel agent."
        assert third["messages"] == [
            {"role": "user", "content": self.TURNS[0]},
            {"role": "assistant", "content": "Hotel Roma, under 100 euros (turn 1)"},
            {"role": "user", "content": self.TURNS[1]},
            {"role": "assistant", "content": "Hotel Roma, under 100 euros (turn 2)"},
            {"role": "user", "content": self.TURNS[2]},
        ]
        assert [t["user"] for t in forgetful.transcript] == self.TURNS
        assert [t["answer"] for t in forgetful.transcript][-2:] == [
            "Hotel Roma, under 100 euros (turn 3)",
            "Hotel Lusso (turn 4)",
        ]
        assert [t["checks_passed"] for t in forgetful.transcript] == [None, True, True, False]
        assert [t["checks_passed"] for t in steady.transcript] == [None, True, True, True]
        assert "checks" not in forgetful.transcript[0]
        assert forgetful.transcript[3]["checks"]["must_include"]["passed"] is False
        # The task's checks judge the last answer; the turn checks are not part of them.
        assert forgetful.output == "Hotel Lusso (turn 4)" and forgetful.checks_passed is False
        assert steady.checks_passed is True
        # Per turn: its one model call's tokens, as the endpoint counted them.
        usage = [c["usage"] for c in self.fake.calls_for("steady-turns")][:4]
        assert [
            (t["steps"][0]["input_tokens"], t["steps"][0]["output_tokens"])
            for t in steady.transcript
        ] == usage
        assert steady.input_tokens == sum(u[0] for u in usage)

    def test_a_task_with_a_single_turn_statement_gets_its_own_samples_never_reviewed(self):
        campaign = self.conversation_campaign(
            "single",
            single_turn="A hotel in Rome near the station, under 100 euros, with breakfast.",
        )
        single = Generation.objects.filter(campaign=campaign, single_turn=True)
        assert single.count() == 2 * 2 and campaign.generations.count() == 8
        assert sorted(single.values_list("sample_index", flat=True)) == [0, 0, 1, 1]
        run_all(campaign)
        sent = self.fake.calls_for("steady-single")
        statement = "A hotel in Rome near the station, under 100 euros, with breakfast."
        single_calls = [c for c in sent if c["body"]["messages"][-1]["content"] == statement]
        assert len(single_calls) == 2  # one per single-turn sample, one call each
        assert single_calls[0]["body"]["messages"] == [
            {"role": "system", "content": "You are a travel agent."},
            {
                "role": "user",
                "content": "A hotel in Rome near the station, under 100 euros, with breakfast.",
            },
        ]
        for row in single:
            assert row.status == "done" and row.transcript == [] and row.checks_passed is True
        # One item (one task, one reviewed sample) showing the two multi-turn outputs only.
        (item,) = ReviewItem.objects.filter(campaign=campaign)
        assert item.ready
        shown = Generation.objects.filter(
            pk__in=ItemOutput.objects.filter(item=item).values("generation_id")
        )
        assert sorted(shown.values_list("single_turn", "sample_index")) == [(False, 0), (False, 0)]

    def test_a_monitor_run_makes_no_single_turn_rows(self):
        campaign = self.conversation_campaign("monitored", single_turn="All at once.")
        ReviewItem.objects.filter(campaign=campaign).delete()
        Generation.objects.filter(campaign=campaign).delete()
        Campaign.objects.filter(pk=campaign.pk).update(kind=Campaign.Kind.MONITOR_RUN)
        campaign.refresh_from_db()
        assert generation_rows_create(campaign=campaign) == 2 * 2
        assert not Generation.objects.filter(campaign=campaign, single_turn=True).exists()
