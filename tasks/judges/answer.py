"""What a judge must answer, and the strict reading of what it did answer (pure).

The shape is the reviewer's: `{"scores": {"A": {"<dim>": n | null}}, "preference": "A" | ... |
"tie" | "both_bad", "reasoning": "..."}`, with only what the campaign's mode asks. The same
shape goes to the endpoint as a JSON Schema (OpenAI `response_format`, or the input schema of
the one tool an Anthropic judge must call), and every answer is checked against the rubric
here whatever the endpoint promised: an answer outside it (a score off the scale or between
points, a missing or unknown dimension or label, N/A where the rubric does not allow it, a
preference that is not a choice, not JSON at all) raises `AnswerError` with its cause. Nothing
is ever clamped, rounded or guessed: a judge's score is what it said, or the attempt failed.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

# How long the reasoning text may be before the answer is refused (about 5,000 words).
MAX_REASONING_CHARS = 40_000


class AnswerError(ValueError):
    """An answer outside the rubric: `cause` says what, in words."""

    def __init__(self, cause: str):
        super().__init__(cause)
        self.cause = cause


@dataclass(frozen=True)
class Scale:
    """One rubric dimension as a judge answers it."""

    key: str
    min: int
    max: int
    allow_na: bool = False

    @property
    def points(self) -> list[int]:
        return list(range(self.min, self.max + 1))


@dataclass(frozen=True)
class AnswerShape:
    """What one judgement asks: a score per label and dimension, and/or a preference."""

    labels: tuple[str, ...]
    scales: tuple[Scale, ...] = ()
    preference_choices: tuple[str, ...] = ()


@dataclass
class JudgeAnswer:
    scores: dict[str, dict[str, int | None]] = field(default_factory=dict)
    preference: str | None = None
    reasoning: str = ""


def answer_schema(shape: AnswerShape) -> dict:
    """The JSON Schema of a valid answer. Every property is required and no other is allowed
    (what OpenAI's strict structured output needs); scale points are an enum (strict mode does
    not take minimum/maximum), with null only where the rubric allows N/A. Reasoning comes
    first, so a model that writes in order reasons before it scores."""
    properties: dict = {"reasoning": {"type": "string"}}
    if shape.scales:
        per_label = {
            "type": "object",
            "properties": {s.key: _scale_schema(s) for s in shape.scales},
            "required": [s.key for s in shape.scales],
            "additionalProperties": False,
        }
        properties["scores"] = {
            "type": "object",
            "properties": {label: per_label for label in shape.labels},
            "required": list(shape.labels),
            "additionalProperties": False,
        }
    if shape.preference_choices:
        properties["preference"] = {"type": "string", "enum": list(shape.preference_choices)}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _scale_schema(scale: Scale) -> dict:
    if scale.allow_na:
        return {"type": ["integer", "null"], "enum": [*scale.points, None]}
    return {"type": "integer", "enum": scale.points}


def answer_read(raw: str, shape: AnswerShape) -> JudgeAnswer:
    """The answer in `raw` (a JSON text), or AnswerError naming the first thing wrong."""
    try:
        data = json.loads(raw)
    except ValueError:
        raise AnswerError(f"the answer is not JSON: {raw[:120]!r}") from None
    if not isinstance(data, dict):
        raise AnswerError("the answer is not a JSON object")
    expected = {"reasoning"} | ({"scores"} if shape.scales else set())
    expected |= {"preference"} if shape.preference_choices else set()
    unknown = sorted(set(data) - expected)
    if unknown:
        raise AnswerError(f"the answer has fields the rubric does not ask for: {unknown}")
    reasoning = data.get("reasoning", "")
    if not isinstance(reasoning, str):
        raise AnswerError("reasoning is not a text")
    if len(reasoning) > MAX_REASONING_CHARS:
        raise AnswerError(f"reasoning is longer than {MAX_REASONING_CHARS:,} characters")
    answer = JudgeAnswer(reasoning=reasoning)
    if shape.scales:
        answer.scores = _scores_read(data.get("scores"), shape)
    if shape.preference_choices:
        answer.preference = _preference_read(data.get("preference"), shape)
    return answer


def _scores_read(scores, shape: AnswerShape) -> dict[str, dict[str, int | None]]:
    if not isinstance(scores, dict):
        raise AnswerError("scores are missing (an object per label is required)")
    extra = sorted(set(scores) - set(shape.labels))
    if extra:
        raise AnswerError(f"scores for labels that were not shown: {extra}")
    read: dict[str, dict[str, int | None]] = {}
    for label in shape.labels:
        given = scores.get(label)
        if not isinstance(given, dict):
            raise AnswerError(f"no scores for {label}")
        unknown = sorted(set(given) - {s.key for s in shape.scales})
        if unknown:
            raise AnswerError(f"{label}: dimensions the rubric does not have: {unknown}")
        read[label] = {s.key: _score_read(given, label, s) for s in shape.scales}
    return read


def _score_read(given: dict, label: str, scale: Scale) -> int | None:
    if scale.key not in given:
        raise AnswerError(f"{label}: missing dimension {scale.key}")
    value = given[scale.key]
    if value is None:
        if not scale.allow_na:
            raise AnswerError(f"{label}.{scale.key}: N/A where the rubric does not allow it")
        return None
    number_like = isinstance(value, int | float) and not isinstance(value, bool)
    if not number_like or not math.isfinite(value):
        raise AnswerError(f"{label}.{scale.key}: {value!r} is not a score")
    if not float(value).is_integer() or not scale.min <= value <= scale.max:
        raise AnswerError(
            f"{label}.{scale.key}: {value!r} is outside the scale "
            f"({scale.min} to {scale.max}, whole points)"
        )
    return int(value)


def _preference_read(preference, shape: AnswerShape) -> str:
    if preference not in shape.preference_choices:
        raise AnswerError(
            f"preference {preference!r} is not one of {', '.join(shape.preference_choices)}"
        )
    return preference
