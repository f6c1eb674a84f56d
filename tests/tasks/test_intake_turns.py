"""Test-set intake of scripted conversations and reference checks: turns,
single_turn, turn_checks, reference. Refusals name line and field and import nothing, in JSONL
and CSV; good rows are stored and round-trip."""

import json
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import TestCase

from tasks.intake import services
from tasks.intake.parse import parse_testset
from tasks.intake.services import TestSetImportError
from tasks.models import Task, TestSet
from tests.factories import personas
from tests.tasks.test_intake_tools import TOOLS, as_csv, jsonl

TURNS = [
    "I need a gift for my father.",
    "He likes hiking.",
    "Keep it under 50 euros.",
    "Actually, make that under 30.",
]
BASE = {
    "external_id": "T-1",
    "category": "shopping",
    "tier": "advanced",
    "case_type": "typical",
    "turns": TURNS,
}


def task(**overrides) -> dict:
    data = {**BASE, **overrides}
    return {k: v for k, v in data.items() if v is not None}


class RefusalTests(TestCase):
    def assert_refused(self, bad: dict, expected: str) -> None:
        good = task(external_id="T-0")
        for fmt, data, line in (("jsonl", jsonl(good, bad), 2), ("csv", as_csv(good, bad), 3)):
            with pytest.raises(TestSetImportError) as caught:
                services.testset_import(name="turns", data=data, filename=f"set.{fmt}")
            errors = caught.value.errors
            assert any(e.startswith(f"line {line}, field {expected}") for e in errors), (
                fmt,
                errors,
            )
            assert TestSet.objects.count() == 0 and Task.objects.count() == 0

    def test_it_rejects_turns_that_are_not_1_to_20_non_empty_strings(self):
        self.assert_refused(task(turns=[]), "turns: is an empty array; give 1 to 20 user messages")
        self.assert_refused(task(turns=["x"] * 21), "turns: has 21 turns; the limit is 20")
        self.assert_refused(task(turns=["ok", "  "]), "turns[1]: must be a non-empty string")
        self.assert_refused(
            task(turns=["ok", {"role": "user", "content": "x"}]),
            "turns[1]: must be a non-empty string",
        )
        self.assert_refused(task(turns={"1": "x"}), "turns: must be an array of 1 to 20")

    def test_it_rejects_turn_checks_and_single_turn_without_turns(self):
        plain = {"turns": None, "prompt": "Hi"}
        self.assert_refused(
            task(**plain, turn_checks={"1": {"max_chars": 10}}), "turn_checks: needs turns"
        )
        self.assert_refused(task(**plain, single_turn="All at once."), "single_turn: needs turns")

    def test_it_rejects_turn_checks_keys_that_are_not_turns(self):
        for key in ("0", "5", "01", "two", "-1", "1.0"):
            self.assert_refused(
                task(turn_checks={key: {"max_chars": 10}}),
                f"turn_checks: key {key!r} is not a turn: use 1 to 4 (1-based)",
            )

    def test_it_rejects_invalid_turn_checks(self):
        self.assert_refused(
            task(turn_checks={"3": {"regex": "(unclosed"}}),
            "turn_checks.3.regex: does not compile",
        )
        self.assert_refused(
            task(turn_checks={"2": {"spellcheck": True}}), "turn_checks.2: unknown check(s)"
        )
        self.assert_refused(
            task(turn_checks={"2": {}}), "turn_checks.2: must be a non-empty object"
        )
        # a turn's calls are those of one turn: max_steps of them at most
        self.assert_refused(
            task(
                tools=TOOLS,
                max_steps=1,
                turn_checks={"2": {"tool_calls": {"order": ["get_order", "refund"]}}},
            ),
            "turn_checks.2.tool_calls.order: has 2 entries, but at most 1 tool calls can be made",
        )

    def test_it_rejects_a_prompt_beside_turns_and_a_prefix_that_leaves_a_call_open(self):
        self.assert_refused(
            task(prompt="Hello"),
            "prompt: give turns (after an optional messages prefix) or a prompt, not both",
        )
        open_call = {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_order", "arguments": "{}"},
                }
            ],
        }
        self.assert_refused(
            task(messages=[{"role": "system", "content": "Be kind."}, open_call]),
            "messages[1].tool_calls: the call(s) 'c1' of messages[1] have no tool message",
        )

    def test_it_rejects_reference_checks_it_cannot_run(self):
        prompt = {"turns": None, "prompt": "Which is the capital of France? A) Lyon B) Paris"}
        self.assert_refused(
            task(**prompt, checks={"reference": "exact"}),
            "checks.reference: compares the answer with the task's reference, which is empty",
        )
        self.assert_refused(
            task(**prompt, reference="Paris", checks={"reference": {"number": 0.5}}),
            "checks.reference: the task's reference has no number to compare with",
        )
        for bad in ("fuzzy", {"number": -1}, {"number": True}, {"numbers": 1}, 3):
            self.assert_refused(
                task(**prompt, reference="B", checks={"reference": bad}), "checks.reference"
            )
        self.assert_refused(
            task(**prompt, reference="?!", checks={"reference": "choice"}),
            "checks.reference: the task's reference is neither an option letter nor a label",
        )


class GoodInputTests(TestCase):
    def test_it_stores_turns_single_turn_and_turn_checks_from_jsonl_and_csv(self):
        row = task(
            messages=[{"role": "system", "content": "You are a shop assistant."}],
            single_turn="A gift for my father, who likes hiking, under 30 euros.",
            turn_checks={"4": {"regex": "(?i)30"}, "3": {"must_include": ["50"]}},
            reference="B",
            checks={"reference": "choice", "max_chars": 2000},
        )
        for fmt, data in (("jsonl", jsonl(row)), ("csv", as_csv(row))):
            result = services.testset_import(name=f"conv-{fmt}", data=data, filename=f"a.{fmt}")
            stored = result.testset.tasks.get()
            assert stored.turns == TURNS and stored.prompt == ""
            assert stored.single_turn.startswith("A gift") and stored.reference == "B"
            assert list(stored.turn_checks) == ["3", "4"]  # in turn order
            assert stored.turn_checks["4"] == {"regex": "(?i)30"}
            assert stored.checks == {"reference": "choice", "max_chars": 2000}
            # a conversation's task messages are its prefix; the turns follow it
            assert stored.conversation() == [
                {"role": "system", "content": "You are a shop assistant."}
            ]
        checksums = {t.checksum for t in TestSet.objects.all()}
        assert len(checksums) == 1

    def test_a_task_with_turns_needs_no_prompt_nor_messages(self):
        parsed = parse_testset(jsonl(task()), filename="a.jsonl")
        assert parsed.ok, parsed.errors
        assert parsed.tasks[0]["turns"] == TURNS and parsed.tasks[0]["messages"] is None
        stored = services.testset_import(name="bare", data=jsonl(task()), filename="a.jsonl")
        assert stored.testset.tasks.get().conversation() == []  # no empty user message
        data = as_csv(task(max_steps=3, tools=TOOLS))
        assert b"prompt" not in data.split(b"\n")[0]
        parsed = parse_testset(data, filename="a.csv")
        assert parsed.ok, parsed.errors
        assert parsed.tasks[0]["max_steps"] == 3  # a plain CSV cell, read as a number

    def test_a_csv_without_prompt_messages_or_turns_columns_is_refused_at_the_header(self):
        parsed = parse_testset(
            b"external_id,category,tier,case_type\nT-1,a,base,edge\n", filename="a.csv"
        )
        assert parsed.errors == [
            "line 1, field prompt: missing column in the header (or a messages or turns column)"
        ]

    def test_a_turns_change_changes_the_checksum(self):
        one = parse_testset(jsonl(task()), filename="a.jsonl").checksum
        two = parse_testset(jsonl(task(turns=TURNS[:3])), filename="a.jsonl").checksum
        three = parse_testset(jsonl(task(single_turn="x")), filename="a.jsonl").checksum
        four = parse_testset(jsonl(task(turn_checks={"1": {"max_chars": 9}})), filename="a.jsonl")
        assert len({one, two, three, four.checksum}) == 4


def test_the_examples_in_the_test_set_guide_import():
    text = (Path(__file__).resolve().parents[2] / "docs" / "testsets.md").read_text()
    blocks = []
    for block in re.findall(r"```json\n(.*?)```", text, re.S):
        try:
            blocks.append(json.loads(block))
        except ValueError:  # the JSONL example: one task per line
            blocks.extend(json.loads(line) for line in block.splitlines())
    tasks = [b for b in blocks if isinstance(b, dict)]
    histories = [b for b in blocks if isinstance(b, list)]
    assert len(tasks) >= 4 and histories  # JSONL's two, the tool task, the conversation; a history
    rows = [{**t, "external_id": f"E-{i}"} for i, t in enumerate(tasks)]
    rows.append({**BASE, "turns": None, "messages": histories[0]})
    parsed = parse_testset(jsonl(*rows), filename="a.jsonl")
    assert parsed.ok, parsed.errors


class PageTests(TestCase):
    """The upload preview and the test-set page show a conversation's turns and its tools."""

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def test_the_preview_and_the_detail_page_show_turns_and_tools(self):
        self.client.force_login(self.users["admin"])
        row = task(
            messages=[{"role": "system", "content": "You are a shop assistant."}],
            tools=TOOLS,
            turn_checks={"2": {"must_include": ["boots"]}},
        )
        upload = SimpleUploadedFile("conv.jsonl", jsonl(row))
        html = self.client.post(
            "/testsets/upload/", {"name": "conv", "file": upload, "action": "validate"}
        ).content.decode()
        # a prefix without a user message: the preview shows the first turn
        assert '<span class="badge">4 turns</span> <span class="badge">2 tools</span>' in html
        assert "I need a gift for my father." in html
        services.testset_import(name="conv", data=jsonl(row), filename="conv.jsonl")
        html = self.client.get("/testsets/conv/v1/").content.decode()
        assert '<span class="badge">turn 4</span><pre>Actually, make that under 30.</pre>' in html
        assert "&quot;get_order&quot;" in html and "Turn checks" in html
