"""reviews/transcript_shown.py on hand-made transcripts: what a step, a call and a turn show."""

from reviews.transcript_shown import Reader, conversation_rows, json_shown, transcript_shown
from tests.factories import tool_call, transcript_step, transcript_turn

TERMS = ("zz-secret-model-9",)
MASKED = Reader(TERMS, html=False)


def test_a_turn_cut_off_at_max_steps_says_so_and_keeps_its_last_calls():
    turn = transcript_turn(
        "",
        transcript_step("", tool_call("search", {"q": "a"}, result=[1, 2])),
        transcript_step("", tool_call("search", {"q": "b"})),  # never answered
        finish="max_steps",
    )
    [shown] = transcript_shown([turn], MASKED)
    assert shown["cut_off"] == "max_steps"
    assert [s["calls"][0]["result"]["status"] for s in shown["steps"]] == ["ok", "missing"]
    assert shown["steps"][0]["calls"][0]["result"]["text"] == "[\n  1,\n  2\n]"


def test_a_provider_finish_reason_is_never_shown_as_such():
    for reason, shown in (
        ("stop", None),
        ("end_turn", None),
        ("length", "length"),
        ("max_tokens", "length"),
    ):
        turn = {**transcript_turn("ok"), "finish_reason": reason}
        assert transcript_shown([turn], MASKED)[0]["cut_off"] == shown


def test_arguments_that_are_json_but_not_an_object_are_marked_not_valid():
    turn = transcript_turn("ok", transcript_step("", tool_call("f", raw="[1, 2]", result=None)))
    call = transcript_shown([turn], MASKED)[0]["steps"][0]["calls"][0]
    assert call["arguments"]["json"] and call["arguments"]["not_object"]
    assert call["valid"] is False and call["arguments"]["object"] is None


def test_masking_reaches_json_escapes_in_text_that_is_not_json():
    raw = '{"who": "\\u007a\\u007a-secret-model-9", broken'
    turn = transcript_turn("ok", transcript_step("", tool_call("f", raw=raw)))
    call = transcript_shown([turn], MASKED)[0]["steps"][0]["calls"][0]
    assert call["arguments"]["json"] is False
    assert call["arguments"]["text"] == '{"who": "[redacted]", broken'


def test_keys_masked_alike_stay_two_keys():
    shown = json_shown({"zz-secret-model-9": 1, "zz_secret_model_9": 2}, MASKED)
    assert sorted(shown["value"].values()) == [1, 2]
    assert "secret" not in shown["pretty"]


def test_an_output_without_a_turn_the_others_have_says_so():
    users = ["one", "two"]
    a = transcript_shown([transcript_turn(f"a{n}", user=u) for n, u in enumerate(users)], MASKED)
    b = transcript_shown([transcript_turn("b0", user="one")], MASKED)
    rows = conversation_rows(labels=["A", "B"], transcripts=[a, b], task_turns=users, reader=MASKED)
    assert [r["user"]["text"] for r in rows] == users
    assert rows[1]["replies"][1] == {"label": "B", "turn": None}
    assert rows[1]["replies"][0]["turn"]["answer"]["text"] == "a1"
