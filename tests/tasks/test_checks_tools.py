"""The tool_calls and reference checks on hand-made transcripts, the turn checks
of a conversation, and the shared one-second budget."""

import time

import pytest

from tasks.checks.automatic import CHECKS_TIMEOUT_SECONDS, run_checks, turn_checks_run
from tasks.checks.tools import args_match, call_record

ORDER = {
    "type": "object",
    "properties": {"order_id": {"type": "string", "pattern": "^[A-Z]-[0-9]+$"}},
    "required": ["order_id"],
    "additionalProperties": False,
}
TOOLS = [
    {"name": "get_order", "description": "", "parameters": ORDER},
    {"name": "refund", "description": "", "parameters": ORDER},
    {"name": "send_email", "description": "", "parameters": {"type": "object"}},
]


def call(name: str, raw: str, id_: str = "c") -> dict:
    return call_record(call_id=id_, name=name, raw=raw, tools=TOOLS)


def turn(*steps_calls: list[dict], answer: str = "Done.", number: int = 1) -> dict:
    """A transcript turn whose steps make the given calls, then answer."""
    steps = [
        {
            "text": "",
            "tool_calls": calls,
            "tool_results": [
                {"id": c["id"], "name": c["name"], "result": {}, "error": "", "unmocked": False}
                for c in calls
            ],
            "finish_reason": "tool_calls",
        }
        for calls in steps_calls
    ]
    steps.append({"text": answer, "tool_calls": [], "tool_results": [], "finish_reason": "stop"})
    return {"turn": number, "user": None, "steps": steps, "answer": answer, "finish_reason": "stop"}


def tool_check(spec: dict, transcript: list | None, output: str = "Done.") -> dict:
    results, passed = run_checks(output, {"tool_calls": spec}, transcript=transcript, tools=TOOLS)
    assert passed is results["tool_calls"]["passed"]
    return results["tool_calls"]


def test_the_right_tool_with_the_right_arguments_passes_every_condition():
    transcript = [turn([call("get_order", '{"order_id": "A-17"}')])]
    result = tool_check(
        {
            "called": ["get_order"],
            "not_called": ["refund"],
            "called_with": [{"tool": "get_order", "args": {"order_id": "A-17"}}],
            "order": ["get_order"],
            "max_calls": 1,
            "valid_args": True,
        },
        transcript,
    )
    assert result == {"passed": True, "detail": "1 call: get_order; every condition met"}


def test_the_wrong_tool_fails_called_not_called_and_called_with_and_says_which():
    transcript = [turn([call("refund", '{"order_id": "A-17"}')])]
    result = tool_check(
        {
            "called": ["get_order"],
            "not_called": ["refund"],
            "called_with": [{"tool": "get_order", "args": {"order_id": "A-17"}}],
        },
        transcript,
    )
    assert result["passed"] is False
    assert result["detail"] == (
        "not called: get_order; called though it must not be: refund (1x); "
        'no get_order call with {"order_id": "A-17"} (1 call)'
    )


def test_called_with_is_a_subset_and_names_the_arguments_it_saw():
    transcript = [turn([call("get_order", '{"order_id": "A-18"}')])]
    result = tool_check(
        {"called_with": [{"tool": "get_order", "args": {"order_id": "A-17"}}]}, transcript
    )
    assert result["detail"] == (
        'no get_order call with {"order_id": "A-17"} (first get_order call had '
        '{"order_id": "A-18"}) (1 call)'
    )
    email = [turn([call("send_email", '{"to": "a@b.c", "body": {"lang": "en", "text": "hi"}}')])]
    subset = {"tool": "send_email", "args": {"body": {"lang": "en"}}}
    assert tool_check({"called_with": [subset]}, email)["passed"] is True
    assert tool_check({"called_with": [{"tool": "send_email", "args": {}}]}, email)["passed"]


def test_bad_json_arguments_are_an_invalid_call_and_match_no_arguments():
    bad = call("get_order", '{"order_id": "A-17"')
    assert bad["arguments"] is None and bad["valid"] is False and bad["unknown"] is False
    transcript = [turn([bad])]
    result = tool_check({"valid_args": True, "called": ["get_order"]}, transcript)
    assert result["passed"] is False
    assert result["detail"] == (
        'invalid: call 1 (get_order): arguments are not a JSON object: {"order_id": "A-17" (1 call)'
    )
    with_args = tool_check(
        {"called_with": [{"tool": "get_order", "args": {"order_id": "A-17"}}]}, transcript
    )
    assert "(first get_order call had bad JSON)" in with_args["detail"]
    # an array is JSON, but not arguments
    assert call("get_order", '["A-17"]')["valid"] is False


def test_order_is_a_subsequence_with_other_calls_between():
    transcript = [
        turn(
            [call("get_order", '{"order_id": "A-1"}', "c1")],
            [call("send_email", "{}", "c2"), call("get_order", '{"order_id": "A-2"}', "c3")],
            [call("refund", '{"order_id": "A-2"}', "c4")],
        )
    ]
    assert tool_check({"order": ["get_order", "refund"]}, transcript)["passed"] is True
    assert tool_check({"order": ["get_order", "get_order", "refund"]}, transcript)["passed"]
    result = tool_check({"order": ["refund", "get_order"]}, transcript)
    assert result == {
        "passed": False,
        "detail": "order refund > get_order not followed (calls: get_order, send_email, "
        "get_order, refund) (4 calls)",
    }
    assert tool_check({"order": ["refund", "refund"]}, transcript)["passed"] is False


def test_max_calls_counts_every_call_of_every_turn():
    calls = [call("get_order", '{"order_id": "A-1"}', f"c{i}") for i in range(3)]
    transcript = [turn(calls[:2]), turn([calls[2]], number=2)]
    assert tool_check({"max_calls": 3}, transcript)["passed"] is True
    result = tool_check({"max_calls": 2}, transcript)
    assert result == {"passed": False, "detail": "3 calls, more than max_calls 2 (3 calls)"}


def test_valid_args_fails_an_unknown_tool_and_arguments_that_break_the_schema():
    unknown = call("delete_all", "{}", "c1")
    assert unknown["unknown"] is True and unknown["valid"] is False
    transcript = [
        turn(
            [unknown],
            [call("get_order", '{"order_id": "a17"}', "c2")],
            [call("refund", '{"order_id": "A-1", "note": "x"}', "c3")],
            [call("get_order", '{"order_id": "B-2"}', "c4")],
        )
    ]
    result = tool_check({"valid_args": True}, transcript)
    assert result["passed"] is False
    assert result["detail"] == (
        "invalid: call 1 (delete_all): unknown tool 'delete_all'; call 2 (get_order): "
        "$.order_id: 'a17' does not match '^[A-Z]-[0-9]+$'; call 3 (refund): $: Additional "
        "properties are not allowed ('note' unexpected) (4 calls)"
    )
    good = [turn([call("get_order", '{"order_id": "B-2"}')])]
    assert tool_check({"valid_args": True}, good)["passed"] is True


# What Pydantic (v2) writes for `class Refund(BaseModel): order: Order; lines: list[Line]`: the
# nested models under $defs, reached only through $ref.
PYDANTIC_REFUND = {
    "$defs": {
        "Line": {
            "properties": {
                "sku": {"pattern": "^SKU-[0-9]{4}$", "title": "Sku", "type": "string"},
                "qty": {"exclusiveMinimum": 0, "title": "Qty", "type": "integer"},
            },
            "required": ["sku", "qty"],
            "title": "Line",
            "type": "object",
        },
        "Order": {
            "properties": {"order_id": {"title": "Order Id", "type": "string"}},
            "required": ["order_id"],
            "title": "Order",
            "type": "object",
        },
    },
    "properties": {
        "order": {"$ref": "#/$defs/Order"},
        "lines": {"items": {"$ref": "#/$defs/Line"}, "title": "Lines", "type": "array"},
    },
    "required": ["order", "lines"],
    "title": "Refund",
    "type": "object",
}


def test_valid_args_follows_the_refs_of_a_pydantic_schema():
    # the hand-written validator ignored $ref: every argument under $defs passed unchecked
    tools = [{"name": "refund", "description": "", "parameters": PYDANTIC_REFUND}]
    raw = '{"order": {"order_id": "A-1"}, "lines": [{"sku": "SKU-0001", "qty": 2}]}'
    good = call_record(call_id="c1", name="refund", raw=raw, tools=tools)
    assert good["valid"] is True
    wrong = '{"order": {"id": "A-1"}, "lines": [{"sku": "sku-1", "qty": 0}]}'
    bad = call_record(call_id="c2", name="refund", raw=wrong, tools=tools)
    assert bad["valid"] is False
    results, passed = run_checks(
        "Done.",
        {"tool_calls": {"valid_args": True}},
        transcript=[turn([bad])],
        tools=tools,
    )
    assert passed is False
    assert results["tool_calls"]["detail"] == (
        "invalid: call 1 (refund): $.order: 'order_id' is a required property; "
        "$.lines[0].sku: 'sku-1' does not match '^SKU-[0-9]{4}$'; "
        "$.lines[0].qty: 0 is less than or equal to the minimum of 0 (1 call)"
    )


@pytest.mark.timeout(60)
def test_a_pattern_behind_a_ref_or_a_property_name_pattern_stops_at_the_budget():
    # the library's own `pattern` and `patternProperties` run Python's re, which never stops
    # on (a|a)+$; here they run on the checks' engine under the shared budget
    hostile = "a" * 40 + "b"
    slow = "pattern took too long (stopped after 1 s on this output): (a|a)+$"
    behind_ref = {"$defs": {"Id": {"pattern": "(a|a)+$"}}, "items": {"$ref": "#/$defs/Id"}}
    names = {"patternProperties": {"(a|a)+$": {}}, "additionalProperties": False}
    for schema, value in ((behind_ref, f'["{hostile}"]'), (names, f'{{"{hostile}": 1}}')):
        results, passed = run_checks(value, {"json_schema": schema})
        assert passed is False and results["json_schema"]["detail"] == slow


def test_a_generation_without_a_transcript_made_no_calls():
    for transcript in (None, []):
        assert tool_check({"called": ["get_order"]}, transcript) == {
            "passed": False,
            "detail": "not called: get_order (0 calls)",
        }
        assert tool_check(
            {"not_called": ["refund"], "max_calls": 1, "valid_args": True}, transcript
        ) == {
            "passed": True,
            "detail": "0 calls: none; every condition met",
        }


def test_run_checks_still_takes_output_and_checks_alone():
    results, passed = run_checks("Refund issued", {"must_include": ["refund"], "max_chars": 5})
    assert passed is False and set(results) == {"must_include", "max_chars"}
    assert run_checks("x", None) == ({}, None)
    # the list form names the new checks too
    results, passed = run_checks("B", [{"type": "reference", "value": "choice"}], reference="B")
    assert passed is True


def test_turn_checks_judge_each_turn_on_its_own_answer_and_calls():
    transcript = [
        turn(
            [call("get_order", '{"order_id": "A-1"}', "c1")],
            answer="Shipped, under 50 euros.",
            number=1,
        ),
        turn(answer="It is 45 euros.", number=2),
        turn([call("refund", '{"order_id": "A-1"}', "c2")], answer="Refunded.", number=3),
    ]
    before = [dict(t) for t in transcript]
    filled = turn_checks_run(
        transcript,
        {
            "1": {"tool_calls": {"called": ["get_order"]}, "must_include": ["50"]},
            "3": {"tool_calls": {"called": ["get_order"]}, "must_include": ["refund"]},
        },
        tools=TOOLS,
    )
    assert filled[0]["checks_passed"] is True
    assert filled[0]["checks"]["tool_calls"]["detail"] == "1 call: get_order; every condition met"
    assert filled[1]["checks_passed"] is None and "checks" not in filled[1]
    # turn 3 made no get_order call of its own: turn 1's does not count for it
    assert filled[2]["checks_passed"] is False
    assert filled[2]["checks"]["tool_calls"]["detail"] == "not called: get_order (1 call)"
    assert filled[2]["checks"]["must_include"]["passed"] is True
    assert transcript == before  # the transcript passed in is unchanged


def test_the_tool_check_shares_the_one_second_budget():
    hostile = {"type": "object", "properties": {"q": {"type": "string", "pattern": "(a|a)+$"}}}
    tools = [{"name": "search", "parameters": hostile}]
    raw = '{"q": "' + "a" * 40 + 'b"}'
    transcript = [turn([call_record(call_id="c1", name="search", raw=raw, tools=tools)])]
    started = time.monotonic()
    results, passed = run_checks(
        "x",
        {"tool_calls": {"valid_args": True}, "regex": "x"},
        transcript=transcript,
        tools=tools,
    )
    elapsed = time.monotonic() - started
    assert passed is False and elapsed < CHECKS_TIMEOUT_SECONDS + 4  # room for a loaded machine
    assert results["tool_calls"]["detail"].startswith("pattern took too long")
    assert "time budget exceeded" in results["regex"]["detail"]


def test_args_match_keeps_booleans_apart_from_numbers():
    assert args_match({"n": 1}, {"n": 1.0, "x": 2})
    assert not args_match({"n": 1}, {"n": True})
    assert not args_match({"flag": True}, {"flag": 1})
    assert args_match({"ids": [1, 2]}, {"ids": [1, 2]})
    assert not args_match({"ids": [1]}, {"ids": [1, 2]})
    assert not args_match({"a": {"b": 1}}, {"a": 1})
    assert not args_match({"a": 1}, None)


def reference(output: str, mode, ref: str | None) -> dict:
    results, passed = run_checks(output, {"reference": mode}, reference=ref)
    assert passed is results["reference"]["passed"]
    return results["reference"]


def test_reference_exact_and_normalized():
    assert reference("  Paris\n", "exact", "Paris")["passed"] is True
    assert reference("paris", "exact", "Paris") == {
        "passed": False,
        "detail": "differs from the reference: 'paris'",
    }
    assert reference("  PARIS!!  ", "normalized", "Paris.")["passed"] is True
    assert reference("It's   the\tEiffel-Tower.", "normalized", "its the eiffeltower")["passed"]
    assert reference("Lyon", "normalized", "Paris")["passed"] is False


def test_reference_choice_takes_the_first_option_the_answer_commits_to():
    for answer in ("B", "B) Paris", "(b)", "**B**", "The answer is B.", "Answer: (B) because",
                   "A good guess: the answer is B", "I'd say option B, not C"):  # fmt: skip
        assert reference(answer, "choice", "B")["passed"] is True, answer
    assert reference("C. Lyon, though B is close", "choice", "B") == {
        "passed": False,
        "detail": "answers C; the reference is B",
    }
    assert reference("I am not sure.", "choice", "B")["detail"] == (
        "states no option letter; the reference is B"
    )
    # a label reference, and a letter reference that carries its label
    assert reference("Yes, within 30 days.", "choice", "yes")["passed"] is True
    assert reference("No.", "choice", "yes") == {
        "passed": False,
        "detail": "answers 'no'; the reference is 'yes'",
    }
    assert reference("Paris, of course.", "choice", "B) Paris")["passed"] is True


def test_reference_number_reads_the_committed_number_within_the_tolerance():
    assert reference("3 boxes of 14 make 42.", {"number": 0}, "42")["passed"] is True
    assert reference("The answer is 1,234.5 (check: 2 x 617.25)", {"number": 0.01}, "1234.5")[
        "passed"
    ]
    assert reference("About 41.6", {"number": 0.5}, "42 apples") == {
        "passed": True,
        "detail": "answers 41.6; the reference is 42 (tolerance 0.5)",
    }
    assert reference("About 41.4", {"number": 0.5}, "42")["passed"] is False
    assert reference("0.30000000000000004", {"number": 0}, "0.3")["passed"] is True
    assert reference("No idea.", {"number": 1}, "42")["detail"] == (
        "states no number; the reference is 42"
    )


def test_a_reference_check_without_a_reference_fails_with_the_reason():
    assert reference("Paris", "exact", None) == {
        "passed": False,
        "detail": "check could not run: the task has no reference",
    }
