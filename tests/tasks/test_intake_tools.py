"""Test-set intake of tool tasks: tools, tool_mocks, max_steps, tool checks and tool
messages in histories. Every refusal names its line and field and imports nothing, in JSONL and
in CSV; a good file round-trips through the database and the download."""

import csv
import io
import json

import pytest
from django.test import TestCase

from tasks.intake import selectors, services
from tasks.intake.conversation import DEFAULT_MAX_STEPS
from tasks.intake.parse import parse_testset
from tasks.intake.services import TestSetImportError
from tasks.models import Task, TestSet

ORDER_SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string", "pattern": "^[A-Z]-[0-9]+$"}},
    "required": ["order_id"],
    "additionalProperties": False,
}
TOOLS = [
    {"name": "get_order", "description": "Look up an order.", "parameters": ORDER_SCHEMA},
    {"name": "refund", "description": "Refund an order.", "parameters": ORDER_SCHEMA},
]
MOCKS = [
    {"tool": "get_order", "error": "timeout", "times": 1},
    {"tool": "get_order", "match": {"order_id": "A-17"}, "result": {"status": "shipped"}},
    {"tool": "refund", "result": {"ok": True}},
]
BASE = {
    "external_id": "T-1",
    "category": "orders",
    "tier": "advanced",
    "case_type": "typical",
    "prompt": "Where is my order A-17?",
}
HISTORY = [
    {"role": "system", "content": "You are a support agent."},
    {"role": "user", "content": "Where is A-17?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_order", "arguments": '{"order_id": "A-17"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"status": "shipped"}'},
    {"role": "assistant", "content": "It has shipped."},
    {"role": "user", "content": "Then refund the other one, B-2."},
]


def task(**overrides) -> dict:
    data = {**BASE, "tools": TOOLS, **overrides}
    return {k: v for k, v in data.items() if v is not None}


def jsonl(*rows: dict) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


def as_csv(*rows: dict) -> bytes:
    """The rows as a CSV file with JSON columns, as a spreadsheet would hold them."""
    names = list(dict.fromkeys(k for r in rows for k in r))
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(names)
    for r in rows:
        writer.writerow(
            [json.dumps(r[n]) if isinstance(r.get(n), list | dict) else r.get(n, "") for n in names]
        )
    return out.getvalue().encode()


class RefusalTests(TestCase):
    """Each bad row goes through the import service, as JSONL and as CSV: the message names
    the row's line and the field, and nothing is written."""

    def assert_refused(self, bad: dict, expected: str) -> None:
        for fmt, data, line in (
            ("jsonl", jsonl(task(external_id="T-0"), bad), 2),
            ("csv", as_csv(task(external_id="T-0"), bad), 3),
        ):
            with pytest.raises(TestSetImportError) as caught:
                services.testset_import(name="tools", data=data, filename=f"set.{fmt}")
            errors = caught.value.errors
            assert any(e.startswith(f"line {line}, field {expected}") for e in errors), (
                fmt,
                errors,
            )
            assert TestSet.objects.count() == 0 and Task.objects.count() == 0

    def test_it_rejects_a_tool_schema_that_is_not_a_valid_json_schema(self):
        bad = {**TOOLS[0], "parameters": {"type": "object", "properties": {"x": {"minLength": -1}}}}
        self.assert_refused(
            task(tools=[bad]),
            "tools[0].parameters: not a valid JSON Schema: at $.properties.x.minLength",
        )
        broken = {
            **TOOLS[0],
            "parameters": {"type": "object", "properties": {"x": {"pattern": "("}}},
        }
        self.assert_refused(
            task(tools=[broken]), "tools[0].parameters: pattern '(' does not compile"
        )

    def test_it_rejects_tool_parameters_that_do_not_describe_an_object(self):
        bad = {**TOOLS[0], "parameters": {"type": "string"}}
        self.assert_refused(
            task(tools=[bad]), 'tools[0].parameters: must be a schema with "type": "object"'
        )

    def test_it_rejects_more_than_64_tools(self):
        many = [{"name": f"t{i}", "parameters": {"type": "object"}} for i in range(65)]
        self.assert_refused(task(tools=many), "tools: has 65 tools; the limit is 64")

    def test_it_rejects_duplicate_tool_names(self):
        self.assert_refused(
            task(tools=[TOOLS[0], TOOLS[1], {**TOOLS[1], "description": "again"}]),
            "tools[2].name: duplicate tool name 'refund' (first declared at tools[1])",
        )

    def test_it_rejects_tool_names_outside_the_allowed_characters(self):
        for name in ("get order", "", "x" * 65, "naïve", 7):
            self.assert_refused(
                task(tools=[{**TOOLS[0], "name": name}]),
                "tools[0].name: must be 1 to 64 letters, digits, '_' or '-'",
            )

    def test_it_rejects_a_mock_for_an_undeclared_tool(self):
        self.assert_refused(
            task(tool_mocks=[{"tool": "cancel", "result": {}}]),
            "tool_mocks[0].tool: 'cancel' is not a declared tool",
        )
        self.assert_refused(
            task(tools=None, tool_mocks=[{"tool": "get_order", "result": {}}]),
            "tool_mocks[0].tool: 'get_order' is not a declared tool",
        )

    def test_it_rejects_a_mock_without_a_result_or_an_error(self):
        self.assert_refused(
            task(tool_mocks=[MOCKS[0], {"tool": "refund", "match": {}}]),
            "tool_mocks[1]: has neither result nor error",
        )
        self.assert_refused(
            task(tool_mocks=[{"tool": "refund", "result": 1, "error": "x"}]),
            "tool_mocks[0]: has both result and error",
        )
        self.assert_refused(
            task(tool_mocks=[{"tool": "refund", "error": ""}]),
            "tool_mocks[0].error: must be a non-empty string",
        )

    def test_it_rejects_bad_times(self):
        for times in (0, -1, 1.5, True, "2"):
            self.assert_refused(
                task(tool_mocks=[{"tool": "refund", "error": "timeout", "times": times}]),
                "tool_mocks[0].times: must be a positive whole number",
            )

    def test_it_rejects_max_steps_out_of_range(self):
        for steps in (0, 51, 2.5, True, "many", -3):
            self.assert_refused(
                task(max_steps=steps), "max_steps: must be a whole number from 1 to 50"
            )

    def test_it_rejects_a_tool_check_naming_an_unknown_tool(self):
        for key, value in (
            ("called", ["get_order", "cancel"]),
            ("not_called", ["cancel"]),
            ("order", ["cancel", "refund"]),
        ):
            self.assert_refused(
                task(checks={"tool_calls": {key: value}}),
                f"checks.tool_calls.{key}: unknown tool 'cancel' (declared: get_order, refund)",
            )
        self.assert_refused(
            task(checks={"tool_calls": {"called_with": [{"tool": "cancel", "args": {}}]}}),
            "checks.tool_calls.called_with[0].tool: unknown tool 'cancel'",
        )
        self.assert_refused(
            task(tools=None, checks={"tool_calls": {"called": ["get_order"]}}),
            "checks.tool_calls.called: unknown tool 'get_order' (declared: none: the task has no tools)",
        )

    def test_it_rejects_an_order_longer_than_the_calls_the_task_can_make(self):
        self.assert_refused(
            task(
                max_steps=2, checks={"tool_calls": {"order": ["get_order", "refund", "get_order"]}}
            ),
            "checks.tool_calls.order: has 3 entries, but at most 2 tool calls can be made "
            "(max_steps 2 x 1 turn, one call per model call)",
        )
        # with turns, each turn may make max_steps calls
        order = ["get_order", "refund"] * 2 + ["get_order"]
        self.assert_refused(
            task(
                prompt=None, turns=["a", "b"], max_steps=2, checks={"tool_calls": {"order": order}}
            ),
            "checks.tool_calls.order: has 5 entries, but at most 4 tool calls can be made "
            "(max_steps 2 x 2 turns",
        )

    def test_it_rejects_a_bad_max_calls_and_checks_that_could_never_pass(self):
        for value in (0, -2, 1.5, True, "3"):
            self.assert_refused(
                task(checks={"tool_calls": {"max_calls": value}}),
                "checks.tool_calls.max_calls: must be a positive whole number",
            )
        self.assert_refused(
            task(checks={"tool_calls": {"order": ["get_order", "refund"], "max_calls": 1}}),
            "checks.tool_calls.max_calls: is 1, but the check needs at least 2 calls",
        )
        self.assert_refused(
            task(checks={"tool_calls": {"called": ["refund"], "not_called": ["refund"]}}),
            "checks.tool_calls.not_called: refund is also required by this check",
        )

    def test_it_rejects_malformed_tool_checks(self):
        for spec, expected in (
            ({}, "checks.tool_calls: is empty"),
            ({"calls": ["refund"]}, "checks.tool_calls: unknown key(s) calls"),
            ({"called": []}, "checks.tool_calls.called: must be a non-empty array of tool names"),
            (
                {"called_with": [{"tool": "refund", "args": [1]}]},
                "checks.tool_calls.called_with[0].args: must be an object",
            ),
            ({"valid_args": "yes"}, "checks.tool_calls.valid_args: must be true or false"),
            ([], "checks.tool_calls: must be an object"),
        ):
            self.assert_refused(task(checks={"tool_calls": spec}), expected)

    def test_it_rejects_a_tool_message_that_answers_no_earlier_call(self):
        stray = [*HISTORY[:2], {"role": "tool", "tool_call_id": "call_9", "content": "{}"}]
        self.assert_refused(
            task(prompt=None, messages=stray),
            "messages[2].tool_call_id: 'call_9' matches no call of the assistant message before it",
        )
        twice = [*HISTORY[:4], HISTORY[3], *HISTORY[4:]]
        self.assert_refused(
            task(prompt=None, messages=twice),
            "messages[4].tool_call_id: 'call_1' is answered twice",
        )
        wrong = [*HISTORY[:3], {**HISTORY[3], "tool_call_id": "call_2"}, *HISTORY[4:]]
        self.assert_refused(
            task(prompt=None, messages=wrong), "messages[3].tool_call_id: 'call_2' matches no call"
        )

    def test_it_rejects_a_call_left_unanswered_and_bad_call_shapes(self):
        unanswered = [*HISTORY[:3], HISTORY[4], HISTORY[5]]
        self.assert_refused(
            task(prompt=None, messages=unanswered),
            "messages[3]: the call(s) 'call_1' of messages[2] have no tool message answering them",
        )
        call = HISTORY[2]["tool_calls"][0]
        for bad, expected in (
            ({**call, "function": {"name": "get_order", "arguments": {"order_id": "A-17"}}},
             "messages[2].tool_calls[0].function.arguments: must be the arguments as JSON text"),
            ({**call, "function": {"name": "get_order", "arguments": "{order_id: A-17"}},
             "messages[2].tool_calls[0].function.arguments: is not a JSON object"),
            ({**call, "function": {"name": "get order", "arguments": "{}"}},
             "messages[2].tool_calls[0].function.name: must be 1 to 64 letters"),
            ({**call, "type": "code"}, "messages[2].tool_calls[0].type: must be 'function'"),
            ({**call, "id": ""}, "messages[2].tool_calls[0].id: must be a non-empty string"),
        ):  # fmt: skip
            history = [*HISTORY[:2], {**HISTORY[2], "tool_calls": [bad]}, *HISTORY[3:]]
            self.assert_refused(task(prompt=None, messages=history), expected)

    def test_it_reports_every_bad_tool_field_of_a_row_at_once(self):
        bad = task(
            tools=[{"name": "a b"}],
            tool_mocks="nope",
            max_steps=99,
            checks={"tool_calls": {"called": ["cancel"]}},
        )
        result = parse_testset(jsonl(bad), filename="a.jsonl")
        assert result.errors == [
            "line 1, field tools[0].name: must be 1 to 64 letters, digits, '_' or '-', not \"a b\"",
            'line 1, field tool_mocks: must be an array of {"tool", "match", "result" or '
            '"error"}, not a string',
            "line 1, field max_steps: must be a whole number from 1 to 50, not 99",
        ]  # the check's tool names are not judged against tools that have a problem


class GoodInputTests(TestCase):
    def test_it_stores_tools_mocks_max_steps_and_tool_checks_from_jsonl_and_csv(self):
        checks = {
            "tool_calls": {
                "called": ["get_order"],
                "not_called": ["refund"],
                "called_with": [{"tool": "get_order", "args": {"order_id": "A-17"}}],
                "order": ["get_order"],
                "max_calls": 3,
                "valid_args": True,
            },
            "must_include": ["shipped"],
        }
        row = task(tool_mocks=MOCKS, max_steps=4, checks=checks)
        for fmt, data in (("jsonl", jsonl(row)), ("csv", as_csv(row))):
            result = services.testset_import(name=f"tools-{fmt}", data=data, filename=f"a.{fmt}")
            stored = result.testset.tasks.get()
            assert stored.tools == TOOLS and stored.tool_mocks == MOCKS
            assert stored.max_steps == 4 and stored.checks == checks
            assert stored.turns == [] and stored.single_turn == "" and stored.turn_checks == {}
        assert (
            TestSet.objects.get(name="tools-jsonl").checksum
            == TestSet.objects.get(name="tools-csv").checksum
        )

    def test_it_accepts_the_openai_wrapper_and_a_tool_without_parameters(self):
        tools = [{"type": "function", "function": TOOLS[0]}, {"name": "now"}]
        parsed = parse_testset(jsonl(task(tools=tools)), filename="a.jsonl")
        assert parsed.ok, parsed.errors
        assert parsed.tasks[0]["tools"] == [
            TOOLS[0],
            {"name": "now", "description": "", "parameters": {"type": "object", "properties": {}}},
        ]

    def test_it_stores_a_history_with_tool_calls_as_given_and_the_task_passes_it_on(self):
        row = task(prompt=None, messages=HISTORY)
        result = services.testset_import(name="logs", data=jsonl(row), filename="a.jsonl")
        stored = result.testset.tasks.get()
        expected = [*HISTORY[:2], {**HISTORY[2], "content": ""}, *HISTORY[3:]]
        assert stored.messages == expected
        assert stored.conversation() == expected

    def test_a_task_without_tools_keeps_the_checksum_it_had_before_tools_existed(self):
        plain = {**BASE, "checks": {"max_chars": 10}}
        parsed = parse_testset(jsonl(plain), filename="a.jsonl")
        assert set(parsed.tasks[0]) == {
            "external_id", "category", "tier", "case_type", "prompt", "messages",
            "reference", "checks", "metadata",
        }  # fmt: skip
        # the same with the defaults spelled out
        spelled = {**plain, "tools": [], "tool_mocks": [], "max_steps": DEFAULT_MAX_STEPS}
        assert parse_testset(jsonl(spelled), filename="a.jsonl").checksum == parsed.checksum
        assert parse_testset(jsonl(task()), filename="a.jsonl").checksum != parsed.checksum
        assert Task._meta.get_field("max_steps").default == DEFAULT_MAX_STEPS

    def test_a_change_to_a_tool_or_a_mock_changes_the_checksum(self):
        one = parse_testset(jsonl(task(tool_mocks=MOCKS)), filename="a.jsonl").checksum
        other_mock = [*MOCKS[:2], {"tool": "refund", "result": {"ok": False}}]
        two = parse_testset(jsonl(task(tool_mocks=other_mock)), filename="a.jsonl").checksum
        three = parse_testset(jsonl(task(tool_mocks=MOCKS, max_steps=3)), filename="a.jsonl")
        assert len({one, two, three.checksum}) == 3

    def test_the_download_reimports_as_identical(self):
        rows = [
            task(tool_mocks=MOCKS, max_steps=3),
            task(external_id="T-2", prompt=None, messages=HISTORY),
        ]
        result = services.testset_import(name="dl", data=jsonl(*rows), filename="a.jsonl")
        exported = list(selectors.testset_export_rows(testset=result.testset))
        again = services.testset_import(
            name="dl", data="".join(selectors.rows_as_jsonl(exported)).encode(), filename="b.jsonl"
        )
        assert not again.created and again.testset == result.testset
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(selectors.EXPORT_FIELDS)
        writer.writerows(selectors.rows_as_csv_cells(exported))
        parsed = parse_testset(out.getvalue().encode(), filename="c.csv")
        assert parsed.ok, parsed.errors
        assert parsed.checksum == result.testset.checksum
