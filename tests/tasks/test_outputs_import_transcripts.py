"""Imported outputs with transcripts (docs/tools.md, "Imported transcripts"): stored and judged
as generated ones, every problem of a file named by line and field."""

import json

import pytest
from django.test import TestCase

from tasks.generation.outputs_import import outputs_import
from tasks.generation.providers.imported import ImportErrors
from tasks.models import Generation
from tests.tasks.test_conversation import MOCKS, TOOLS, campaign_for


def line(**fields) -> str:
    return json.dumps({"task_id": "T-1", "sample": 0, **fields})


def step(text="", calls=(), results=(), **measures):
    return {"text": text, "tool_calls": list(calls), "tool_results": list(results), **measures}


TURNS = ["Find order A-17.", "Now refund it."]
TRANSCRIPT = [
    {
        "turn": 1,
        "user": TURNS[0],
        "steps": [
            step(
                calls=[
                    # what the file says of validity is judged again: this call is valid
                    {"id": "c1", "name": "get_order", "raw": '{"order_id": "A-17"}', "valid": False}
                ],
                results=[{"id": "c1", "result": {"status": "shipped"}}],
                input_tokens=10,
                output_tokens=4,
                ttft_ms=90,
            ),
            step("It has shipped.", input_tokens=20, output_tokens=3, ttft_ms=70),
        ],
        "answer": "It has shipped.",
        "finish_reason": "stop",
    },
    {
        "turn": 2,
        "user": TURNS[1],
        "steps": [
            step(
                calls=[{"id": "c2", "name": "refund", "arguments": {"order_id": 17}}],
                results=[{"id": "c2", "error": "timeout"}],
                output_tokens=5,
            ),
            step("Refund failed: timeout.", input_tokens=30, output_tokens=5),
        ],
        "answer": "Refund failed: timeout.",
    },
]


class ImportedTranscriptTests(TestCase):
    def campaign(self, slug, samples=1, **task):
        return campaign_for(
            None,
            slug=slug,
            samples=samples,
            tasks=[
                {
                    "prompt": "",
                    "turns": TURNS,
                    "tools": TOOLS,
                    "tool_mocks": MOCKS,
                    "turn_checks": {"1": {"must_include": ["shipped"]}},
                    "checks": {"tool_calls": {"called": ["refund"], "valid_args": True}},
                    **task,
                }
            ],
            contenders=[
                {"name": "outside", "provider": "imported"},
                {"name": "other", "provider": "imported"},
            ],
        )

    def test_it_stores_an_imported_transcript_judged_like_a_generated_one(self):
        campaign = self.campaign("imported-transcripts", single_turn="Find A-17 and refund it.")
        raw = "\n".join(
            [
                line(transcript=TRANSCRIPT),  # no output: the last answer
                line(single_turn=True, output="Refunded.", input_tokens=7),
            ]
        )
        result = outputs_import(campaign=campaign, contender_name="outside", raw=raw.encode())
        assert result["stored"] == 2
        row = Generation.objects.get(
            campaign=campaign, contender__name="outside", single_turn=False
        )
        assert row.output == "Refund failed: timeout." and row.status == "done"
        calls = [c for t in row.transcript for s in t["steps"] for c in s["tool_calls"]]
        assert calls == [
            {
                "id": "c1",
                "name": "get_order",
                "arguments": {"order_id": "A-17"},
                "raw": '{"order_id": "A-17"}',
                "valid": True,
                "unknown": False,
            },
            {
                "id": "c2",
                "name": "refund",
                "arguments": {"order_id": 17},
                "raw": '{"order_id": 17}',
                "valid": False,  # the schema wants a string
                "unknown": False,
            },
        ]
        assert row.transcript[1]["steps"][0]["tool_results"] == [
            {"id": "c2", "name": "", "result": None, "error": "timeout", "unmocked": False}
        ]
        # Tokens summed over the steps, the first step's TTFT; no completion time was given.
        assert (row.input_tokens, row.output_tokens, row.ttft_ms, row.latency_ms) == (
            60,
            17,
            90,
            None,
        )
        assert [t["checks_passed"] for t in row.transcript] == [True, None]
        assert row.check_results["tool_calls"]["passed"] is False  # refund's args are invalid
        assert row.finish_reason == ""  # the last turn gave none
        single = Generation.objects.get(
            campaign=campaign, contender__name="outside", single_turn=True
        )
        assert single.output == "Refunded." and single.input_tokens == 7 and single.transcript == []
        # Importing the same file again changes nothing.
        again = outputs_import(campaign=campaign, contender_name="outside", raw=raw.encode())
        assert again["stored"] == 0 and again["unchanged"] == 2

    def test_it_names_every_problem_of_a_transcript_by_line_and_field(self):
        campaign = self.campaign("bad-transcripts", samples=7)
        bad_step = {"text": 3, "tool_calls": [{"name": "", "raw": 5}], "extra": 1, "ttft_ms": -1}
        lines = [
            line(transcript="not turns"),
            line(sample=1, transcript=[{"turn": 1, "steps": [], "answer": 1}]),
            line(
                sample=2,
                transcript=[{"user": TURNS[0], "steps": [bad_step], "answer": "a"}, TRANSCRIPT[1]],
            ),
            line(sample=3, transcript=TRANSCRIPT[:1]),
            line(
                sample=4, transcript=[TRANSCRIPT[0], {**TRANSCRIPT[1], "user": "Something else."}]
            ),
            line(sample=5, transcript=TRANSCRIPT, output="Another answer."),
            line(sample=6, single_turn=True, output="x"),
        ]
        with pytest.raises(ImportErrors) as info:
            outputs_import(
                campaign=campaign, contender_name="outside", raw="\n".join(lines).encode()
            )
        assert info.value.errors == [
            "line 1, field transcript: must be a non-empty array of turns",
            "line 2, field transcript[0].answer: required, a string",
            "line 2, field transcript[0].steps: must be an array of 1 to 50 model calls",
            "line 3, field transcript[0].steps[0].extra: unknown field",
            "line 3, field transcript[0].steps[0].text: must be a string",
            "line 3, field transcript[0].steps[0].tool_calls[0].id: required, a non-empty string",
            "line 3, field transcript[0].steps[0].tool_calls[0].name: required, a non-empty string",
            "line 3, field transcript[0].steps[0].tool_calls[0].raw: must be a string",
            "line 3, field transcript[0].steps[0].ttft_ms: must be an integer from 0 to 2147483647",
            "line 4, field transcript: has 1 turn; task T-1 has 2",
            "line 5, field transcript[1].user: is not the task's turn 2",
            "line 6, field output: is not the transcript's last answer",
            "line 7, field single_turn: task T-1 has no single-turn statement",
        ]
        assert not Generation.objects.filter(campaign=campaign, status="done").exists()
