"""Properties of the intake: it never crashes, and what it exports it reads back unchanged."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.intake.parse import CASE_TYPES, TIERS, parse_testset

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Valid text: no unpaired surrogates, no NUL (no database stores either; intake refuses them).
text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=40,
).filter(str.strip)
json_value = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=8,
)
task = st.fixed_dictionaries(
    {
        "external_id": st.from_regex(r"T-[0-9]{1,6}", fullmatch=True),
        "category": text.map(str.strip),
        "tier": st.sampled_from(TIERS),
        "case_type": st.sampled_from(CASE_TYPES),
        "prompt": text,
    },
    optional={"reference": text, "metadata": st.dictionaries(text, json_value, max_size=3)},
)


@FAST
@given(st.binary(max_size=300), st.sampled_from(["a.jsonl", "a.csv"]))
def test_it_never_crashes_on_arbitrary_bytes(data, filename):
    result = parse_testset(data, filename=filename)
    assert result.ok or all(e.startswith("line ") for e in result.errors)


@FAST
@given(st.lists(st.text(max_size=30), max_size=6), st.sampled_from(["a.jsonl", "a.csv"]))
def test_it_never_crashes_on_arbitrary_text_lines(lines, filename):
    header = "external_id,category,tier,case_type,prompt\n" if filename.endswith(".csv") else ""
    result = parse_testset((header + "\n".join(lines)).encode(), filename=filename)
    assert result.ok or all(e.startswith("line ") for e in result.errors)


@FAST
@given(st.lists(task, min_size=1, max_size=5, unique_by=lambda t: t["external_id"]))
def test_it_reads_back_every_valid_task_list_unchanged(tasks):
    data = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tasks).encode()
    result = parse_testset(data, filename="a.jsonl")
    assert result.ok, result.errors
    assert [t["external_id"] for t in result.tasks] == [t["external_id"] for t in tasks]
    for parsed, original in zip(result.tasks, tasks, strict=True):
        assert parsed["prompt"] == original["prompt"]
        assert parsed["metadata"] == original.get("metadata", {})


tool = st.fixed_dictionaries(
    {"name": st.sampled_from(["get_order", "refund", "bad name", ""]) | text},
    optional={"description": json_value, "parameters": json_value},
)
conversation_values = {
    "tools": st.lists(tool | json_value, max_size=3) | json_value,
    "tool_mocks": st.lists(
        st.dictionaries(st.sampled_from(["tool", "match", "result", "error", "times"]), json_value)
        | json_value,
        max_size=3,
    ),
    "max_steps": st.integers(-2, 60) | json_value,
    "turns": st.lists(text | json_value, max_size=4) | json_value,
    "single_turn": json_value,
    "turn_checks": st.dictionaries(st.sampled_from(["1", "2", "03", "x"]), json_value, max_size=3),
    "checks": st.fixed_dictionaries(
        {},
        optional={
            "tool_calls": st.dictionaries(
                st.sampled_from(["called", "not_called", "called_with", "order", "max_calls"]),
                json_value | st.lists(st.sampled_from(["get_order", "refund"]), max_size=3),
            ),
            "reference": st.sampled_from(["exact", "choice", "normalized"]) | json_value,
        },
    ),
    "messages": st.lists(
        st.fixed_dictionaries(
            {"role": st.sampled_from(["user", "assistant", "tool", "system"])},
            optional={"content": json_value, "tool_calls": json_value, "tool_call_id": json_value},
        ),
        max_size=4,
    ),
}


@FAST
@given(task, st.fixed_dictionaries({}, optional=conversation_values))
def test_it_never_crashes_on_arbitrary_tool_and_turn_fields(base, extra):
    row = {**base, **extra}
    if "messages" in extra or "turns" in extra:
        row.pop("prompt")
    result = parse_testset((json.dumps(row) + "\n").encode(), filename="a.jsonl")
    assert result.ok or all(e.startswith("line 1, field ") for e in result.errors)
    if result.ok:  # what is accepted reads back the same
        again = parse_testset((json.dumps(result.tasks[0]) + "\n").encode(), filename="a.jsonl")
        assert again.ok and again.checksum == result.checksum, again.errors
