"""Transcripts (tool calls, results, conversation turns) as the review screens show them.

A generation of a tool-using or multi-turn task keeps its transcript (docs/reviewing.md,
"Transcripts and conversations"): per turn, the model's calls ("steps"), each step's text,
tool calls and the results the mocks gave. Reviewers and arbiters read it masked: every text
in it (assistant text, tool names, argument and result strings and keys, errors, user turns)
goes through tasks.blinding.render with the campaign's identity terms, as the outputs do. Leads
and admins (the item page) read it as it is.

What reviewers never get from a transcript: the provider's call ids (Anthropic's `toolu_...`
names the vendor: calls are numbered call_1, call_2, ... per output instead), finish reasons
(`end_turn` vs `stop` do too: only "cut off" is said, in neutral words), latencies and tokens
(a model's speed is a fingerprint of its own), and automatic check results.

Everything here is pure: dicts in, dicts out. Odd entries of an imported transcript (not a
dict, not a list) are skipped, as tasks/checks/transcripts.py skips them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tasks.blinding import render as blinding
from tasks.blinding.parts import unescaped
from tasks.images.parts import content_text, image_links

# How a turn that did not end with a final answer is described (the stored finish reasons
# differ by provider, so they are not shown as such).
CUT_OFF = {
    "max_steps": "max_steps",
    "length": "length",
    "max_tokens": "length",
}


@dataclass(frozen=True)
class Reader:
    """Who reads: `terms` are the campaign's identity terms (masked), None for leads and
    admins (as written). `html`: render Markdown (pages) or not (the API)."""

    terms: tuple[str, ...] | None
    html: bool = True
    # Show each step's reasoning (the campaign says show_reasoning); never otherwise.
    reasoning: bool = False

    # strict: a transcript's parts are not what an admin approves when an output is held (the
    # final answer is), so a possible model name in a tool's argument is masked, not held
    def mask(self, text: str) -> str:
        if self.terms is None or not text:
            return text or ""
        return blinding.mask_identity(text, self.terms, strict=True).text

    def shown(self, text: str) -> dict:
        """{"text", "html"} of a Markdown text (an assistant's or the user's words)."""
        text = text if isinstance(text, str) else ""
        if not text.strip():  # nothing to read (an assistant message that only calls tools)
            return {"text": text, "html": blinding.SanitizedHTML("") if self.html else None}
        if not self.html:
            return {"text": self.mask(text), "html": None}
        if self.terms is None:
            return {"text": text, "html": blinding.render_markdown(text)}
        masked, rendered, _ = blinding.render_output(text, self.terms, strict=True)
        return {"text": masked, "html": rendered}


def _dicts(value) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _masked_value(value: Any, reader: Reader) -> Any:
    """Every string of a JSON value masked, object keys too (two keys masked alike stay two)."""
    if isinstance(value, str):
        return reader.mask(value)
    if isinstance(value, list):
        return [_masked_value(v, reader) for v in value]
    if isinstance(value, dict):
        out: dict = {}
        for key, v in value.items():
            name = reader.mask(str(key))
            while name in out:
                name += " "
            out[name] = _masked_value(v, reader)
        return out
    return value


def json_shown(value: Any, reader: Reader) -> dict:
    """A JSON value as shown: {"value": masked value or None, "pretty": indented text}.

    Masked value by value, then the whole indented text once more: a name split over a key and
    its value (`{"Open": "AI"}`) is found only there. Then the value is withheld (None) and
    only the masked text is given, which a page shows and an API client can still read."""
    masked = _masked_value(value, reader)
    pretty = json.dumps(masked, ensure_ascii=False, indent=2)
    again = reader.mask(pretty)
    return {"value": masked if again == pretty else None, "pretty": again}


def _arguments(call: dict, reader: Reader) -> dict:
    """A call's arguments: formatted JSON when they are a JSON object, else the raw text."""
    arguments = call.get("arguments")
    raw = call.get("raw") if isinstance(call.get("raw"), str) else ""
    parsed = arguments
    if not isinstance(arguments, dict):
        try:
            parsed = json.loads(raw) if raw.strip() else None
        except ValueError:
            parsed = None
    if isinstance(parsed, dict):
        shown = json_shown(parsed, reader)
        # Withheld (a name across its parts): the API client gets the masked text as raw.
        raw_text = None if shown["value"] is not None else shown["pretty"]
        return {"json": True, "object": shown["value"], "text": shown["pretty"], "raw": raw_text}
    if parsed is not None:  # valid JSON, but not an object (an array, a number)
        text = json_shown(parsed, reader)["pretty"]
        return {"json": True, "object": None, "text": text, "raw": text, "not_object": True}
    text = reader.mask(unescaped(raw))
    return {"json": False, "object": None, "text": text, "raw": text}


def _result(result: dict | None, reader: Reader) -> dict:
    """A call's result: "ok" (formatted JSON), "error" (a mocked error), "unmocked" (no mock
    matched it) or "missing" (the loop stopped before it was answered)."""
    if result is None:
        return {"status": "missing", "value": None, "text": "", "error": "", "unmocked": False}
    error = result.get("error")
    unmocked = bool(result.get("unmocked"))
    if error or unmocked:
        return {
            "status": "unmocked" if unmocked else "error",
            "value": None,
            "text": "",
            "error": reader.mask(str(error or "")),
            "unmocked": unmocked,
        }
    value = result.get("result")
    if isinstance(value, str):
        return {
            "status": "ok",
            "value": reader.mask(value),
            "text": reader.mask(value),
            "error": "",
            "unmocked": False,
            "plain": True,
        }
    shown = json_shown(value, reader)
    return {
        "status": "ok",
        "value": shown["value"],
        "text": shown["pretty"],
        "error": "",
        "unmocked": False,
    }


def _joined(step: dict) -> list[tuple[dict, dict | None]]:
    """A step's calls, each with its result (by id, else by position)."""
    results = _dicts(step.get("tool_results"))
    by_id = {r.get("id"): r for r in results if r.get("id") is not None}
    out = []
    for position, call in enumerate(_dicts(step.get("tool_calls"))):
        result = by_id.get(call.get("id")) if call.get("id") is not None else None
        if result is None and position < len(results) and results[position].get("id") is None:
            result = results[position]
        out.append((call, result))
    return out


class _Numbers:
    """Neutral call ids, numbered per output in call order."""

    def __init__(self):
        self.n = 0

    def next(self) -> str:
        self.n += 1
        return f"call_{self.n}"


def _call(call: dict, result: dict | None, reader: Reader, numbers: _Numbers) -> dict:
    arguments = _arguments(call, reader)
    return {
        "id": numbers.next(),
        "name": reader.mask(str(call.get("name") or "")),
        "arguments": arguments,
        # Marks: the transcript says so (generation checks the schema and the declaration).
        "valid": call.get("valid") is not False
        and arguments["json"]
        and not arguments.get("not_object"),
        "unknown": call.get("unknown") is True,
        "result": _result(result, reader),
    }


def _step(step: dict, number: int, reader: Reader, numbers: _Numbers) -> dict:
    calls = [_call(c, r, reader, numbers) for c, r in _joined(step)]
    text = step.get("text") if isinstance(step.get("text"), str) else ""
    shown = reader.shown(text) if text.strip() else {"text": "", "html": None}
    return {
        "number": number,
        "text": shown["text"],
        "html": shown["html"],
        "calls": calls,
        "reasoning": _reasoning(step, reader),
    }


def _reasoning(step: dict, reader: Reader) -> dict | None:
    """A step's reasoning, masked like its text, where the reader is shown reasoning."""
    reasoning = step.get("reasoning")
    if not reader.reasoning or not isinstance(reasoning, str) or not reasoning.strip():
        return None
    return reader.shown(reasoning)


def turn_shown(turn: dict, number: int, reader: Reader, numbers: _Numbers) -> dict:
    """One turn of one output: its steps, the final answer, whether it was cut off."""
    raw_steps = _dicts(turn.get("steps"))
    answer = turn.get("answer") if isinstance(turn.get("answer"), str) else ""
    steps = [_step(s, n, reader, numbers) for n, s in enumerate(raw_steps, start=1)]
    # The last call's text is the answer, shown once, as the answer (its reasoning with it).
    reasoning = None
    if raw_steps and not steps[-1]["calls"] and (raw_steps[-1].get("text") or "") == answer:
        reasoning = steps.pop()["reasoning"]
    user = turn.get("user")
    return {
        "number": turn.get("turn") if isinstance(turn.get("turn"), int) else number,
        "user": user_shown(user, reader) if isinstance(user, str | list) else None,
        "steps": steps,
        "model_calls": len(raw_steps),
        "answer": reader.shown(answer),
        "reasoning": reasoning,
        "cut_off": CUT_OFF.get(str(turn.get("finish_reason") or "")),
    }


def user_shown(content, reader: Reader) -> dict:
    """A user's message (a scripted turn): its text masked, its images beside it."""
    shown = reader.shown(content_text(content))
    images = image_links(content)
    return {**shown, "images": images} if images else shown


def transcript_shown(transcript, reader: Reader) -> list[dict]:
    """An output's transcript, turn by turn ([] for a plain single-call output)."""
    numbers = _Numbers()
    return [turn_shown(t, n, reader, numbers) for n, t in enumerate(_dicts(transcript), start=1)]


def is_conversation(task_turns, transcripts: list[list[dict]]) -> bool:
    """A scripted-user task: its user turns are shown once per turn, the replies side by side."""
    return bool(task_turns) or any(
        len(turns) > 1 or turns[0]["user"] is not None for turns in transcripts if turns
    )


def conversation_rows(
    *, labels: list[str], transcripts: list[list[dict]], task_turns, reader: Reader
) -> list[dict]:
    """Turn by turn: the user's message (the task's, shown once) and each output's reply
    under its label ({"label", "turn": None} where an output has no such turn)."""
    count = max([len(task_turns or [])] + [len(t) for t in transcripts])
    rows = []
    for index in range(count):
        if index < len(task_turns or []) and isinstance(task_turns[index], str | list):
            user = user_shown(task_turns[index], reader)
        else:
            user = next(
                (t[index]["user"] for t in transcripts if index < len(t) and t[index]["user"]),
                None,
            )
        replies = [
            {"label": label, "turn": turns[index] if index < len(turns) else None}
            for label, turns in zip(labels, transcripts, strict=True)
        ]
        rows.append({"number": index + 1, "count": count, "user": user, "replies": replies})
    return rows


def transcript_json(turns: list[dict]) -> list[dict]:
    """An output's transcript in the API: the stored shape, masked, without ids, timings,
    tokens or finish reasons (docs/api.md, "Transcripts")."""
    out = []
    for turn in turns:
        steps = []
        for step in turn["steps"]:
            steps.append(
                {
                    "text": step["text"],
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "name": c["name"],
                            "arguments": c["arguments"]["object"],
                            "raw": c["arguments"]["raw"],
                            "valid": c["valid"],
                            "unknown": c["unknown"],
                        }
                        for c in step["calls"]
                    ],
                    "tool_results": [
                        {
                            "id": c["id"],
                            "name": c["name"],
                            "result": c["result"]["value"],
                            **(
                                {"text": c["result"]["text"]}
                                if c["result"]["value"] is None and c["result"]["text"]
                                else {}
                            ),
                            "error": c["result"]["error"],
                            "unmocked": c["result"]["unmocked"],
                        }
                        for c in step["calls"]
                        if c["result"]["status"] != "missing"
                    ],
                    # only where the campaign shows reasoning
                    **({"reasoning": step["reasoning"]["text"]} if step.get("reasoning") else {}),
                }
            )
        shown = {
            "turn": turn["number"],
            "user": turn["user"]["text"] if turn["user"] else None,
            "steps": steps,
            "answer": turn["answer"]["text"],
            "cut_off": turn["cut_off"],
        }
        if turn.get("reasoning"):
            shown["reasoning"] = turn["reasoning"]["text"]
        out.append(shown)
    return out


# --- a task's own history (messages logged from production, OpenAI shape) -------------------


def _history_call(call: dict) -> dict:
    """An OpenAI-shape history call as a transcript call (arguments parsed when an object)."""
    function = call.get("function") if isinstance(call.get("function"), dict) else call
    raw = function.get("arguments", "")
    if not isinstance(raw, str):
        raw = json.dumps(raw, ensure_ascii=False)
    try:
        parsed = json.loads(raw) if raw.strip() else None
    except ValueError:
        parsed = None
    return {
        "id": call.get("id"),
        "name": str(function.get("name") or ""),
        "arguments": parsed if isinstance(parsed, dict) else None,
        "raw": raw,
    }


def _history_result(message: dict) -> dict:
    content = message.get("content")
    if isinstance(content, str):
        try:
            content = json.loads(content)
        except ValueError:
            pass
    return {"id": message.get("tool_call_id"), "result": content, "error": "", "unmocked": False}


def history_shown(messages: list[dict], reader: Reader) -> list[dict]:
    """A task's messages, masked; an assistant message's tool calls are shown as a generated
    step's are, each with the tool message that answered it (that message is then `merged`:
    pages show it under its call, the API keeps it in place). Every row has `json`, the
    message as the API gives it."""
    numbers = _Numbers()
    rows: list[dict] = []
    pending: dict = {}  # a call's id in the test set -> (its row's call, its neutral id)
    for message in _dicts(messages):
        role = str(message.get("role", "user"))
        content = message.get("content")
        # Content parts: their text masked as one text, their images beside it.
        shown = reader.shown(content_text(content))
        row = {"role": role, "content": shown["text"], "html": shown["html"], "calls": []}
        row["json"] = {"role": role, "content": shown["text"]}
        images = image_links(content)
        if images:
            row["images"] = images
            row["json"]["images"] = [
                {k: image[k] for k in ("url", "width", "height")} for image in images
            ]
        if role == "assistant" and message.get("tool_calls"):
            for raw_call in _dicts(message.get("tool_calls")):
                call = _call(_history_call(raw_call), None, reader, numbers)
                call["result"] = None  # until its tool message comes
                row["calls"].append(call)
                pending[raw_call.get("id")] = call
            row["json"]["tool_calls"] = [
                {
                    "id": c["id"],
                    "name": c["name"],
                    "arguments": c["arguments"]["object"],
                    "raw": c["arguments"]["raw"],
                }
                for c in row["calls"]
            ]
        elif role == "tool":
            call = pending.pop(message.get("tool_call_id"), None)
            result = _result(_history_result(message), reader)
            if call is not None:
                call["result"] = result
                row["merged"] = True
            # The content as read back from its parsed, masked value: a name written with
            # JSON escapes ("\\u0043laude") is masked in the value, not in the escaped text.
            plain = result["status"] != "ok" or result.get("plain") or result["value"] is None
            row["json"] = {
                "role": "tool",
                "tool_call_id": call["id"] if call else None,
                "content": result["text"]
                if plain
                else json.dumps(result["value"], ensure_ascii=False),
            }
        rows.append(row)
    for row in rows:
        for call in row["calls"]:
            if call["result"] is None:
                call["result"] = _result(None, reader)
    return rows


def outputs_shown(
    *, labels: list[str], transcripts: list, task_turns, reader: Reader
) -> tuple[list[list[dict]], list[dict] | None]:
    """Each output's transcript shown, and the turn-by-turn rows when the task is a
    conversation (None: each output is shown whole, its steps above its answer)."""
    shown = [transcript_shown(t, reader) for t in transcripts]
    if not is_conversation(task_turns, shown):
        return shown, None
    return shown, conversation_rows(
        labels=labels, transcripts=shown, task_turns=task_turns, reader=reader
    )


def task_messages(task) -> list[dict]:
    """The messages a task's page shows above the outputs: with scripted user turns only the
    context before them (the turns are shown with the replies), else the conversation."""
    return list(task.messages or []) if task.turns else task.conversation()


def attach(
    *, candidates: list[dict], transcripts: list, task_turns, reader: Reader
) -> list[dict] | None:
    """Give each candidate ({"label", ...}) its transcript shown, as "turns", as `reader`
    reads it (masked or not, Markdown or not, each step's reasoning or not); return the
    conversation's rows turn by turn, or None when each output is shown whole."""
    shown, rows = outputs_shown(
        labels=[c["label"] for c in candidates],
        transcripts=transcripts,
        task_turns=task_turns or [],
        reader=reader,
    )
    for candidate, turns in zip(candidates, shown, strict=True):
        candidate["turns"] = turns
    return rows


def candidate_json(candidate: dict) -> dict:
    """A candidate in the reviewer and arbiter APIs: its label, final text and transcript."""
    shown = {
        "label": candidate["label"],
        "text": candidate["text"],
        "transcript": transcript_json(candidate.get("turns") or []),
    }
    if candidate.get("reasoning"):  # only where the campaign shows reasoning
        shown["reasoning"] = candidate["reasoning"]["text"]
    return shown
