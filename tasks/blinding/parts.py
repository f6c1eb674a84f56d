"""The texts of one output that reviewers read, each named by its part: what the hold scans
(tasks/blinding/hold.py) and what an admin's hand mask names (docs/blinding.md, "Masking by
hand").

A part is "answer" (the final answer), "reasoning" (where the campaign shows it) or a text of
the transcript by its path in the stored transcript, every index from 0:

    transcript/<turn>/answer                                a turn's answer
    transcript/<turn>/steps/<step>/text                     an intermediate assistant turn
    transcript/<turn>/steps/<step>/reasoning
    transcript/<turn>/steps/<step>/tool_calls/<call>/name
    transcript/<turn>/steps/<step>/tool_calls/<call>/arguments/<key>...
    transcript/<turn>/steps/<step>/tool_calls/<call>/raw    (arguments that are not an object)
    transcript/<turn>/steps/<step>/tool_results/<result>/result[/<key or index>...]
    transcript/<turn>/steps/<step>/tool_results/<result>/error

The hold scans each of these as reviewers read it (a JSON value as its indented text, keys
included; raw arguments with their \\u escapes written out). A hand mask names one string: in
a JSON value, a string inside it by its keys and indexes ("/" in a key written "~1", "~" as
"~0", as in a JSON pointer). A span masked in one text is masked in every text that reads the
same: the final answer is also the last turn's answer and its last step's text.

Everything here is pure: strings and lists in, strings and lists out.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tasks.blinding.render import MASK

ANSWER = "answer"
REASONING = "reasoning"
_JSON_ESCAPE = re.compile(
    r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|\\u([0-9a-fA-F]{4})"
)


def unescaped(raw: str) -> str:
    """JSON's \\uXXXX escapes written out, so that text which is not valid JSON is masked (and
    read) as the characters it stands for: `\\u0043laude` is "Claude"."""

    def one(m: re.Match) -> str:
        if m.group(3):
            code = int(m.group(3), 16)
            return m.group(0) if 0xD800 <= code < 0xE000 else chr(code)
        high, low = int(m.group(1), 16), int(m.group(2), 16)
        return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))

    return _JSON_ESCAPE.sub(one, raw)


def _indexed(value) -> Iterator[tuple[int, dict]]:
    """The dicts of a list with their index in it (odd entries skipped, their index kept)."""
    if isinstance(value, list):
        yield from ((i, v) for i, v in enumerate(value) if isinstance(v, dict))


def _escaped(key) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def _shown_values(transcript, *, reasoning: bool) -> Iterator[tuple[str, Any]]:
    """(part, value) of every value of a transcript the review screens show, in reading
    order (reviews/transcript_shown.py reads the same fields)."""
    for t, turn in _indexed(transcript):
        for s, step in _indexed(turn.get("steps")):
            at = f"transcript/{t}/steps/{s}"
            yield f"{at}/text", step.get("text")
            if reasoning:
                yield f"{at}/reasoning", step.get("reasoning")
            for c, call in _indexed(step.get("tool_calls")):
                yield f"{at}/tool_calls/{c}/name", call.get("name")
                # An object is shown as such; only other arguments are shown as written.
                if isinstance(call.get("arguments"), dict):
                    yield f"{at}/tool_calls/{c}/arguments", call["arguments"]
                else:
                    yield f"{at}/tool_calls/{c}/raw", call.get("raw")
            for r, result in _indexed(step.get("tool_results")):
                yield f"{at}/tool_results/{r}/result", result.get("result")
                yield f"{at}/tool_results/{r}/error", result.get("error")
        yield f"transcript/{t}/answer", turn.get("answer")


def _read(part: str, value) -> str:
    """A value as a reviewer reads it, for the scan."""
    if isinstance(value, str):
        return unescaped(value) if part.endswith("/raw") else value
    if value is None or value == "":
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, indent=2)
    return str(value)


def shown_texts(
    *, output: str, transcript, reasoning: str = "", show_reasoning: bool = False
) -> list[tuple[str, str]]:
    """[(part, text)] of every text of an output reviewers read, as they read it: the answer
    first, then the reasoning (where the campaign shows it: pass `show_reasoning`), then the
    transcript, each value of it as a whole (a tool's result object as its indented JSON)."""
    parts = [(ANSWER, output or "")]
    if show_reasoning and reasoning:
        parts.append((REASONING, reasoning))
    for part, value in _shown_values(transcript, reasoning=show_reasoning):
        parts.append((part, _read(part, value)))
    return parts


def scanned(
    *, output: str, transcript, reasoning: str = "", show_reasoning: bool = False
) -> list[tuple[str, str]]:
    """shown_texts without empty texts, a text read twice (the answer is the last turn's too)
    listed once: what the hold checks."""
    parts = shown_texts(
        output=output, transcript=transcript, reasoning=reasoning, show_reasoning=show_reasoning
    )
    seen, out = set(), []
    for part, text in parts:
        if text.strip() and text not in seen:
            seen.add(text)
            out.append((part, text))
    return out


def _leaves(value, at: str) -> Iterator[tuple[str, str]]:
    """(path, string) of every string inside a JSON value (keys are not leaves)."""
    if isinstance(value, str):
        yield at, value
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{at}/{i}")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{at}/{_escaped(k)}")


def maskable(*, output: str, transcript, reasoning: str = "") -> dict[str, str]:
    """{part: text} of every string of an output a hand mask may name: the answer, the
    reasoning and each string of the transcript the review screens show."""
    texts = {ANSWER: output or ""}
    if reasoning:
        texts[REASONING] = reasoning
    for part, value in _shown_values(transcript, reasoning=True):
        texts.update(_leaves(value, part))
    return texts


def mask_part(mask: dict) -> str:
    """The part a stored hand mask names (a mask from before parts: the answer)."""
    return mask.get("part") or ANSWER


def spans_masked(text: str, spans) -> str:
    """`text` with each (start, end) span written as the mask; overlaps masked once."""
    out, last = [], 0
    for start, end in sorted(spans):
        start = max(start, last)
        if end <= start:
            continue
        out += [text[last:start], MASK]
        last = end
    out.append(text[last:])
    return "".join(out)


@dataclass(frozen=True)
class HandMasked:
    """An output with an admin's hand masks applied: what the screens then mask further."""

    text: str
    reasoning: str | None
    transcript: Any


def _rebuilt(value, at: str, masked: dict[str, str]):
    if isinstance(value, str):
        return masked.get(at, value)
    if isinstance(value, list):
        return [_rebuilt(v, f"{at}/{i}", masked) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _rebuilt(v, f"{at}/{_escaped(k)}", masked) for k, v in value.items()}
    return value


def _raw_follows(transcript, masked: dict[str, str]) -> None:
    """A call whose arguments object was masked gets its raw text from the masked object, so
    no reader of the raw text finds what the mask hid."""
    for t, turn in _indexed(transcript):
        for s, step in _indexed(turn.get("steps")):
            for c, call in _indexed(step.get("tool_calls")):
                prefix = f"transcript/{t}/steps/{s}/tool_calls/{c}/arguments/"
                if isinstance(call.get("arguments"), dict) and any(
                    p.startswith(prefix) for p in masked
                ):
                    call["raw"] = json.dumps(call["arguments"], ensure_ascii=False)


def hand_masked(*, output: str, transcript, reasoning: str | None, masks) -> HandMasked:
    """The output's answer, reasoning and transcript with every hand mask applied (each to
    its part and to every text that reads the same); unchanged without masks."""
    if not masks:
        return HandMasked(output or "", reasoning, transcript)
    texts = maskable(output=output, transcript=transcript, reasoning=reasoning or "")
    spans: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for mask in masks:
        source = texts.get(mask_part(mask))
        if source is not None:
            spans[source].append((mask["start"], mask["end"]))
    masked = {
        part: spans_masked(text, spans[text]) for part, text in texts.items() if text in spans
    }
    shown_transcript = transcript
    if any(part.startswith("transcript/") for part in masked):
        shown_transcript = _rebuilt(transcript, "transcript", masked)
        _raw_follows(shown_transcript, masked)
    return HandMasked(
        text=masked.get(ANSWER, output or ""),
        reasoning=masked.get(REASONING, reasoning),
        transcript=shown_transcript,
    )


# How a part's words read (tasks.blinding.parts paths): its lists, then its field.
_LISTS = {
    "transcript": "turn",
    "steps": "step",
    "tool_calls": "call",
    "tool_results": "tool result",
}
_FIELDS = {"result": "", "raw": "arguments", "name": "tool name", "text": "text"}


def part_label(part: str) -> str:
    """A part in words for admins: "turn 1, step 2, tool result 1, forecast"."""
    if part in (ANSWER, REASONING):
        return "final answer" if part == ANSWER else "reasoning"
    bits, words, i = part.split("/"), [], 0
    while i + 1 < len(bits) and bits[i] in _LISTS and bits[i + 1].isdigit():
        words.append(f"{_LISTS[bits[i]]} {int(bits[i + 1]) + 1}")
        i += 2
    if i < len(bits):
        words.append(_FIELDS.get(bits[i], bits[i]))
    words += [b.replace("~1", "/").replace("~0", "~") for b in bits[i + 1 :]]
    return ", ".join(w for w in words if w)
