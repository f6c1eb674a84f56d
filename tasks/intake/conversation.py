"""Intake of a task's conversation and tool fields (docs/testsets.md, "Tools", "Conversations").

- `messages`: system / user / assistant / tool messages. An assistant message may carry
  OpenAI-shape `tool_calls` ({"id", "type": "function", "function": {"name", "arguments":
  "<JSON text>"}}); each call is answered by a `tool` message ({"tool_call_id", "content"})
  before the next message, as the providers require.
- `tools` (up to 64, OpenAI function format), `tool_mocks`, `max_steps` (1-50).
- `turns` (1-20 user messages after an optional `messages` prefix), `single_turn`, and
  `turn_checks` (validated in tasks/intake/parse.py, which knows the reference).

The fields left at their defaults stay out of the normalized task, so a test set that does not
use them keeps the checksum it had before they existed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from evalsite.uploads import RowError, kind, strict_json
from tasks.images.parts import parts_value
from tasks.intake.checks import CheckContext, checks_value, positive_int, schema_value

MAX_TEXT_CHARS = 100_000  # prompt, reference, each message's content, each turn
MAX_MESSAGES = 200
ROLES = ("system", "user", "assistant", "tool")
MAX_TOOLS = 64
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_TOOLS_CHARS = 100_000  # tools as compact JSON
MAX_DESCRIPTION_CHARS = 10_000
MAX_MOCKS = 200
MAX_MOCKS_CHARS = 100_000  # tool_mocks as compact JSON
MAX_MOCK_ERROR_CHARS = 1_000
MAX_CALL_ID_CHARS = 100
MAX_STEPS = 50
DEFAULT_MAX_STEPS = 8  # Task.max_steps's default
MAX_TURNS = 20
CONVERSATION_FIELDS = ("tools", "tool_mocks", "max_steps", "turns", "single_turn", "turn_checks")
DEFAULTS = {
    "tools": [],
    "tool_mocks": [],
    "max_steps": DEFAULT_MAX_STEPS,
    "turns": [],
    "single_turn": "",
    "turn_checks": {},
}
_KEYS = {
    "system": ({"role", "content"}, "only role and content"),
    "user": ({"role", "content"}, "only role and content"),
    "assistant": ({"role", "content", "tool_calls"}, "only role, content and tool_calls"),
    "tool": ({"role", "tool_call_id", "content", "name"}, "only role, tool_call_id, content, name"),
}


def conversation_values(task) -> dict:
    """The conversation fields of a stored task (any object with those attributes) that
    differ from their defaults: what intake keeps in a normalized task."""
    values = {name: getattr(task, name) for name in CONVERSATION_FIELDS}
    return {name: v for name, v in values.items() if v != DEFAULTS[name]}


def _content(value: Any, where: str, *, blank: bool) -> str:
    if value is None and blank:
        return ""
    if isinstance(value, list):
        raise RowError(f"{where}.content", "content parts (text, image) are taken in user "
                       "messages only; give this message's content as a string")  # fmt: skip
    if not isinstance(value, str) or (not blank and not value.strip()):
        raise RowError(f"{where}.content", "must be a non-empty string" if not blank else (
            f"must be a string, not {kind(value)}"
        ))  # fmt: skip
    if len(value) > MAX_TEXT_CHARS:
        raise RowError(
            f"{where}.content",
            f"is {len(value):,} characters long; the limit is {MAX_TEXT_CHARS:,}",
        )
    return value


def messages_value(value: Any, *, prefix: bool = False) -> list[dict]:
    """A conversation (or, with turns, the context before the first turn: then it needs no
    user message). Every tool call is answered by a tool message before the next message."""
    if not isinstance(value, list):
        raise RowError(
            "messages", f"must be an array of {{role, content}} objects, not {kind(value)}"
        )
    if not value:
        raise RowError("messages", "is an empty array")
    if len(value) > MAX_MESSAGES:
        raise RowError("messages", f"has {len(value)} messages; the limit is {MAX_MESSAGES}")
    out: list[dict] = []
    open_calls: dict[str, str] = {}  # id -> tool name, of the last assistant message's calls
    asked_at, answered = 0, set()
    ids: set[str] = set()
    for i, message in enumerate(value):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise RowError(where, f"must be an object with role and content, not {kind(message)}")
        role = message.get("role")
        if role not in ROLES:
            raise RowError(f"{where}.role", f"must be one of {', '.join(ROLES)}, not {role!r}")
        allowed, words = _KEYS[role]
        extra = set(message) - allowed
        if extra:
            raise RowError(where, f"unknown key(s) {', '.join(sorted(extra))}; {words}")
        if role == "system" and i != 0:
            raise RowError(f"{where}.role", "a system message may only come first")
        if open_calls and role != "tool":
            raise RowError(where, _unanswered(open_calls, asked_at))
        if role == "tool":
            out.append(_tool_message(message, where, open_calls, answered))
        elif role == "assistant" and message.get("tool_calls") is not None:
            calls = _history_calls(message["tool_calls"], f"{where}.tool_calls", ids)
            content = _content(message.get("content"), where, blank=True)
            out.append({"role": "assistant", "content": content, "tool_calls": calls})
            open_calls = {c["id"]: c["function"]["name"] for c in calls}
            asked_at = i
        elif role == "user" and isinstance(message.get("content"), list):
            # Text and image parts (tasks/images/parts.py); only a user message shows images.
            content = parts_value(message["content"], f"{where}.content", limit=MAX_TEXT_CHARS)
            out.append({"role": role, "content": content})
        else:
            out.append(
                {"role": role, "content": _content(message.get("content"), where, blank=False)}
            )
    if open_calls:
        raise RowError(f"messages[{asked_at}].tool_calls", _unanswered(open_calls, asked_at))
    if not prefix and not any(m["role"] == "user" for m in out):
        raise RowError("messages", "has no user message")
    return out


def _unanswered(open_calls: dict[str, str], asked_at: int) -> str:
    ids = ", ".join(repr(i) for i in open_calls)
    return (
        f"the call(s) {ids} of messages[{asked_at}] have no tool message answering them "
        "(each call needs its tool message before the next message)"
    )


def _tool_message(message: dict, where: str, open_calls: dict[str, str], answered: set) -> dict:
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise RowError(f"{where}.tool_call_id", "must be the id of the call this message answers")
    if call_id in answered:
        raise RowError(f"{where}.tool_call_id", f"{call_id!r} is answered twice")
    if call_id not in open_calls:
        raise RowError(
            f"{where}.tool_call_id",
            f"{call_id!r} matches no call of the assistant message before it",
        )
    name = message.get("name")
    if name is not None and name != open_calls[call_id]:
        raise RowError(
            f"{where}.name", f"is {name!r}, but call {call_id!r} is to {open_calls[call_id]!r}"
        )
    out = {"role": "tool", "tool_call_id": call_id,
           "content": _content(message.get("content"), where, blank=True)}  # fmt: skip
    if name is not None:
        out["name"] = name
    del open_calls[call_id]
    answered.add(call_id)
    return out


def _history_calls(value: Any, where: str, ids: set[str]) -> list[dict]:
    if not isinstance(value, list) or not value:
        raise RowError(where, "must be a non-empty array of calls (or left out)")
    if len(value) > MAX_TOOLS:
        raise RowError(where, f"has {len(value)} calls; the limit is {MAX_TOOLS}")
    out = []
    for j, call in enumerate(value):
        at = f"{where}[{j}]"
        if not isinstance(call, dict) or set(call) - {"id", "type", "function"}:
            raise RowError(
                at, 'must be {"id", "type": "function", "function": {"name", "arguments"}}'
            )
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id.strip() or len(call_id) > MAX_CALL_ID_CHARS:
            raise RowError(
                f"{at}.id", f"must be a non-empty string up to {MAX_CALL_ID_CHARS} characters"
            )
        if call_id in ids:
            raise RowError(f"{at}.id", f"{call_id!r} is used by an earlier call")
        ids.add(call_id)
        if call.get("type", "function") != "function":
            raise RowError(f"{at}.type", f"must be 'function', not {call.get('type')!r}")
        function = call.get("function")
        if not isinstance(function, dict) or set(function) - {"name", "arguments"}:
            raise RowError(f"{at}.function", 'must be an object with "name" and "arguments"')
        name = function.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            raise RowError(f"{at}.function.name", _name_rule(name))
        arguments = function.get("arguments", "{}")
        if not isinstance(arguments, str):
            raise RowError(
                f"{at}.function.arguments",
                f"must be the arguments as JSON text (a string, as OpenAI logs it), not {kind(arguments)}",
            )
        try:
            parsed = strict_json(arguments)
        except ValueError as exc:
            raise RowError(f"{at}.function.arguments", f"is not a JSON object: {exc}") from None
        if not isinstance(parsed, dict):
            raise RowError(f"{at}.function.arguments", f"must encode an object, not {kind(parsed)}")
        out.append(
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        )
    return out


def _name_rule(name: Any) -> str:
    return f"must be 1 to 64 letters, digits, '_' or '-', not {json.dumps(name, ensure_ascii=False)[:80]}"


def _sized(value: Any, name: str, limit: int) -> None:
    size = len(json.dumps(value, ensure_ascii=False))
    if size > limit:
        raise RowError(name, f"is {size:,} characters long as JSON; the limit is {limit:,}")


def tools_value(value: Any) -> list[dict]:
    """[{"name", "description", "parameters"}] (the OpenAI {"type": "function", "function":
    {...}} wrapper is accepted and removed). Missing parameters: an object with no properties."""
    if value is None or value == "" or value == []:
        return []
    if not isinstance(value, list):
        raise RowError(
            "tools",
            f'must be an array of {{"name", "description", "parameters"}}, not {kind(value)}',
        )
    if len(value) > MAX_TOOLS:
        raise RowError("tools", f"has {len(value)} tools; the limit is {MAX_TOOLS}")
    _sized(value, "tools", MAX_TOOLS_CHARS)
    out: list[dict] = []
    first: dict[str, int] = {}
    for i, tool in enumerate(value):
        where = f"tools[{i}]"
        if (
            isinstance(tool, dict)
            and tool.get("type") == "function"
            and set(tool) == {"type", "function"}
        ):
            tool = tool["function"]
        if not isinstance(tool, dict):
            raise RowError(
                where,
                f'must be an object with "name", "description", "parameters", not {kind(tool)}',
            )
        extra = set(tool) - {"name", "description", "parameters"}
        if extra:
            raise RowError(
                where,
                f"unknown key(s) {', '.join(sorted(extra))}; only name, description, parameters",
            )
        name = tool.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            raise RowError(f"{where}.name", _name_rule(name))
        if name in first:
            raise RowError(
                f"{where}.name",
                f"duplicate tool name {name!r} (first declared at tools[{first[name]}])",
            )
        first[name] = i
        description = tool.get("description", "")
        if not isinstance(description, str) or len(description) > MAX_DESCRIPTION_CHARS:
            raise RowError(
                f"{where}.description", f"must be text up to {MAX_DESCRIPTION_CHARS:,} characters"
            )
        parameters = tool.get("parameters", {"type": "object", "properties": {}})
        schema_value(parameters, f"{where}.parameters")
        if parameters.get("type") != "object":
            raise RowError(
                f"{where}.parameters",
                'must be a schema with "type": "object" (a tool\'s arguments are one JSON object)',
            )
        out.append({"name": name, "description": description, "parameters": parameters})
    return out


def tool_mocks_value(value: Any, tool_names: frozenset[str] | None) -> list[dict]:
    """[{"tool", "match"?, "result" | "error", "times"?}], each for a declared tool (not
    checked when tool_names is None: the tools field has a problem of its own)."""
    if value is None or value == "" or value == []:
        return []
    if not isinstance(value, list):
        raise RowError(
            "tool_mocks",
            f'must be an array of {{"tool", "match", "result" or "error"}}, not {kind(value)}',
        )
    if len(value) > MAX_MOCKS:
        raise RowError("tool_mocks", f"has {len(value)} mocks; the limit is {MAX_MOCKS}")
    _sized(value, "tool_mocks", MAX_MOCKS_CHARS)
    for i, mock in enumerate(value):
        where = f"tool_mocks[{i}]"
        if not isinstance(mock, dict):
            raise RowError(where, f"must be an object, not {kind(mock)}")
        extra = set(mock) - {"tool", "match", "result", "error", "times"}
        if extra:
            raise RowError(
                where,
                f"unknown key(s) {', '.join(sorted(extra))}; only tool, match, result, error, times",
            )
        tool = mock.get("tool")
        if not isinstance(tool, str):
            raise RowError(
                f"{where}.tool", f"must be the name of a declared tool, not {kind(tool)}"
            )
        if tool_names is not None and tool not in tool_names:
            raise RowError(
                f"{where}.tool", f"{tool!r} is not a declared tool (declare it in tools)"
            )
        if "match" in mock and not isinstance(mock["match"], dict):
            raise RowError(
                f"{where}.match",
                f"must be an object (a subset of the arguments), not {kind(mock['match'])}",
            )
        if ("result" in mock) == ("error" in mock):
            both = (
                "has both result and error" if "result" in mock else "has neither result nor error"
            )
            raise RowError(where, f"{both}; give the tool's result, or the error it returns")
        error = mock.get("error")
        if "error" in mock and (
            not isinstance(error, str) or not error.strip() or len(error) > MAX_MOCK_ERROR_CHARS
        ):
            raise RowError(
                f"{where}.error",
                f"must be a non-empty string up to {MAX_MOCK_ERROR_CHARS:,} characters",
            )
        if "times" in mock and not positive_int(mock["times"]):
            raise RowError(
                f"{where}.times",
                "must be a positive whole number (how many calls this mock answers)",
            )
    return value


def max_steps_value(value: Any) -> int:
    if value is None or value == "":
        return DEFAULT_MAX_STEPS
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_STEPS:
        raise RowError(
            "max_steps",
            f"must be a whole number from 1 to {MAX_STEPS}, not {json.dumps(value)[:40]}",
        )
    return value


def turns_value(value: Any) -> list[str | list[dict]]:
    if value is None or value == "":
        return []
    if not isinstance(value, list):
        raise RowError(
            "turns", f"must be an array of 1 to {MAX_TURNS} user messages, not {kind(value)}"
        )
    if not value:
        raise RowError("turns", f"is an empty array; give 1 to {MAX_TURNS} user messages")
    if len(value) > MAX_TURNS:
        raise RowError("turns", f"has {len(value)} turns; the limit is {MAX_TURNS}")
    out: list[str | list[dict]] = []
    for i, text in enumerate(value):
        if isinstance(text, list):  # text and image parts, as a user message's content
            out.append(parts_value(text, f"turns[{i}]", limit=MAX_TEXT_CHARS))
            continue
        if not isinstance(text, str) or not text.strip():
            raise RowError(
                f"turns[{i}]", "must be a non-empty string or a list of parts (the user's message)"
            )
        if len(text) > MAX_TEXT_CHARS:
            raise RowError(
                f"turns[{i}]", f"is {len(text):,} characters long; the limit is {MAX_TEXT_CHARS:,}"
            )
        out.append(text)
    return out


def single_turn_value(value: Any) -> str:
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or not value.strip():
        raise RowError(
            "single_turn", "must be a non-empty string (the whole request in one message)"
        )
    if len(value) > MAX_TEXT_CHARS:
        raise RowError(
            "single_turn", f"is {len(value):,} characters long; the limit is {MAX_TEXT_CHARS:,}"
        )
    return value


@dataclass
class ConversationFields:
    """The tool and turn fields of one row: those that differ from their defaults, the
    problems found, and what the checks need to know (None: that field has a problem)."""

    values: dict = field(default_factory=dict)
    problems: list[RowError] = field(default_factory=list)
    tool_names: frozenset[str] | None = frozenset()
    max_steps: int | None = DEFAULT_MAX_STEPS
    turns: int | None = 0

    def context(self, *, reference: str | None, per_turn: bool = False) -> CheckContext:
        """For the task's checks (every call of every turn), or for one turn's checks."""
        turns = 1 if per_turn else self.turns
        possible, limit = None, ""
        if self.max_steps is not None and turns is not None:
            turns = max(turns, 1)
            possible = self.max_steps * turns
            limit = f"max_steps {self.max_steps} x {turns} turn{'' if turns == 1 else 's'}"
        return CheckContext(
            tools=self.tool_names, possible_calls=possible, limit=limit, reference=reference
        )


def conversation_fields(row: dict) -> ConversationFields:
    """Validate tools, tool_mocks, max_steps, turns and single_turn of a raw row."""
    out = ConversationFields()

    def take(name: str, fn, *args):
        try:
            value = fn(*args)
        except RowError as exc:
            out.problems.append(exc)
            return None
        if value != DEFAULTS[name]:
            out.values[name] = value
        return value

    tools = take("tools", tools_value, row.get("tools"))
    out.tool_names = None if tools is None else frozenset(t["name"] for t in tools)
    take("tool_mocks", tool_mocks_value, row.get("tool_mocks"), out.tool_names)
    out.max_steps = take("max_steps", max_steps_value, row.get("max_steps"))
    turns = take("turns", turns_value, row.get("turns"))
    out.turns = None if turns is None else len(turns)
    single = take("single_turn", single_turn_value, row.get("single_turn"))
    if single and turns == []:
        out.problems.append(
            RowError("single_turn", "needs turns: it states the turns' request in one message")
        )
    return out


def turn_checks_value(value: Any, *, fields: ConversationFields, reference: str | None) -> dict:
    """{"3": {...checks...}} for turns 1..len(turns), keys in turn order."""
    if value is None or value == "" or value == {}:
        return {}
    if fields.turns == 0:
        raise RowError(
            "turn_checks", "needs turns (checks on the answers of a scripted conversation)"
        )
    if not isinstance(value, dict):
        raise RowError(
            "turn_checks", f'must be an object such as {{"3": {{...checks...}}}}, not {kind(value)}'
        )
    context = fields.context(reference=reference, per_turn=True)
    out = {}
    for key, checks in value.items():
        number = int(key) if key.isascii() and key.isdigit() and key == str(int(key)) else 0
        if number < 1 or (fields.turns is not None and number > fields.turns):
            span = {None: "a turn number", 1: "1"}.get(fields.turns, f"1 to {fields.turns}")
            raise RowError("turn_checks", f"key {key!r} is not a turn: use {span} (1-based)")
        if not isinstance(checks, dict) or not checks:
            raise RowError(f"turn_checks.{key}", "must be a non-empty object of checks")
        out[number] = checks_value(checks, name=f"turn_checks.{key}", context=context)
    return {str(n): out[n] for n in sorted(out)}
