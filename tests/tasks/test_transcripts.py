"""tasks.checks.transcripts: calls, steps, invalid, unmocked and mocked errors of a scripted transcript."""

from tasks.checks import transcripts


def call(id_, name, *, valid=True, unknown=False, args=None):
    return {
        "id": id_,
        "name": name,
        "arguments": args if valid else None,
        "raw": "{}" if valid else "{order_id: A-17",
        "valid": valid,
        "unknown": unknown,
    }


def result(id_, name, *, error="", unmocked=False):
    return {
        "id": id_,
        "name": name,
        "result": None if error else {"ok": 1},
        "error": error,
        "unmocked": unmocked,
    }


# Turn 1: get_order times out (a mock's error), then succeeds, then the answer.
# Turn 2: a bad-JSON call (a catch-all mock answers it), a call to an undeclared tool (unmocked), then the answer.
TRANSCRIPT = [
    {
        "turn": 1,
        "user": None,
        "steps": [
            {
                "text": "",
                "tool_calls": [call("c1", "get_order")],
                "tool_results": [result("c1", "get_order", error="timeout")],
            },
            {
                "text": "",
                "tool_calls": [call("c2", "get_order")],
                "tool_results": [result("c2", "get_order")],
            },
            {"text": "Your order ships today.", "tool_calls": [], "tool_results": []},
        ],
        "answer": "Your order ships today.",
        "checks_passed": None,
    },
    {
        "turn": 2,
        "user": "And the refund?",
        "steps": [
            {
                "text": "",
                "tool_calls": [
                    call("c3", "refund", valid=False),
                    call("c4", "cancel", valid=False, unknown=True),
                ],
                "tool_results": [
                    result("c3", "refund"),
                    result("c4", "cancel", error="no mocked result for this call", unmocked=True),
                ],
            },
            {"text": "Done.", "tool_calls": [], "tool_results": []},
        ],
        "answer": "Done.",
        "checks_passed": False,
    },
]


def test_it_counts_every_model_call_of_every_turn():
    assert transcripts.step_count(TRANSCRIPT) == 5
    assert [c["id"] for c in transcripts.calls(TRANSCRIPT)] == ["c1", "c2", "c3", "c4"]
    assert [(c["turn"], c["step"]) for c in transcripts.calls(TRANSCRIPT)] == [
        (1, 0),
        (1, 1),
        (2, 0),
        (2, 0),
    ]


def test_it_joins_each_call_with_its_result_by_id():
    joined = {c["id"]: c["result"]["error"] for c in transcripts.calls(TRANSCRIPT)}
    assert joined == {"c1": "timeout", "c2": "", "c3": "", "c4": "no mocked result for this call"}


def test_it_tells_invalid_unmocked_and_mocked_errors_apart():
    assert [c["id"] for c in transcripts.invalid(TRANSCRIPT)] == ["c3", "c4"]
    assert [c["id"] for c in transcripts.unmocked(TRANSCRIPT)] == ["c4"]
    assert [c["id"] for c in transcripts.errors(TRANSCRIPT)] == ["c1"]
    assert [c["id"] for c in transcripts.errors(TRANSCRIPT, include_unmocked=True)] == ["c1", "c4"]


def test_the_loop_s_own_refusal_of_a_bad_json_call_is_no_tool_error():
    # what the real loop stores for arguments that are not a JSON object: no mock saw the call
    refused = [
        {
            "turn": 1,
            "steps": [
                {
                    "text": "",
                    "tool_calls": [call("c1", "refund", valid=False)],
                    "tool_results": [result("c1", "refund", error=transcripts.NOT_AN_OBJECT)],
                },
            ],
        }
    ]
    assert transcripts.errors(refused) == [] and len(transcripts.invalid(refused)) == 1
    assert transcripts.call_counts(refused)["errors"] == 0
    assert transcripts.turn_checks(TRANSCRIPT) == {2: False}
    assert transcripts.call_counts(TRANSCRIPT) == {
        "calls": 4,
        "invalid": 2,
        "unmocked": 1,
        "errors": 1,
    }


def test_it_skips_what_is_not_a_transcript_instead_of_raising():
    for odd in (None, "text", [1, None, {"steps": "x"}], [{"steps": [{"tool_calls": 3}]}]):
        assert transcripts.calls(odd) == []
        assert transcripts.step_count(odd) in (0, 1)
    assert transcripts.step_count([]) == 0
