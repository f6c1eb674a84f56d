"""The blinded screen: what a reviewer, an arbiter or a judge reads of one review item.

Every screen that shows an item to someone who must not learn the models (the review page and
API, the arbitration page and API, an arbiter's item page, a judge's view) builds its task, its
candidates and its rubric here, one function each, so a masking rule lands once:

- `task_shown`: category, conversation (tool calls and tool messages), reference where the
  campaign shows it, a conversation's scripted user turns; all masked.
- `candidates_shown`: the outputs under their labels, an admin's hand masks applied first,
  then the automatic masking; each output's transcript, its reasoning where the campaign shows
  it, and a conversation's rows turn by turn.
- `rubric_shown`: each dimension's label, description and anchors masked.

`task_json` is the task in the APIs' shape (reviewers and arbiters alike); `score_text` a score
as the pages write it.

Each function returns the review page's shape; a screen that words it differently (the
arbitration page) reshapes the result, never re-masks. Everything is pure: the callers read
the rows (in the queries their hot paths need) and pass them in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from reviews import transcript_shown
from reviews.rubric import Dimension
from tasks.blinding import render as blinding
from tasks.blinding.campaign_texts import (
    campaign_identity_terms,
    reasoning_shown,
    text_shown,
    words_shown,
)
from tasks.images.parts import content_text
from tasks.models import Campaign, Task


@dataclass(frozen=True)
class Viewer:
    """Who reads and how: the campaign's identity terms and what the campaign shows them;
    `html`: pages (Markdown rendered and sanitized) or the APIs (masked text only)."""

    terms: tuple[str, ...]
    show_reference: bool = False
    show_reasoning: bool = False
    html: bool = True

    @classmethod
    def of(cls, campaign: Campaign, *, html: bool = True) -> Viewer:
        return cls(
            terms=campaign_identity_terms(campaign),
            show_reference=campaign.show_reference,
            show_reasoning=campaign.show_reasoning,
            html=html,
        )


@dataclass(frozen=True)
class OutputRead:
    """One output as read for a screen, before any masking."""

    label: str
    # An admin's hand masks applied to all three (tasks.blinding.hold.generation_hand_masked).
    text: str
    reasoning: str | None = None
    transcript: Any = None  # as stored (hand masks applied): a list of turns, or None


def conversation_shown(task: Task, viewer: Viewer) -> list[dict]:
    """The task's messages (or its prompt as one), masked; tool calls in them with the tool
    messages that answered them, as generated steps are (reviews/transcript_shown.py). With
    scripted user turns, only the context before them (the turns go with the replies)."""
    reader = transcript_shown.Reader(viewer.terms, html=viewer.html)
    return transcript_shown.history_shown(transcript_shown.task_messages(task), reader)


def task_shown(task: Task, viewer: Viewer) -> dict:
    """The task as a reviewer sees it: category, conversation, reference ({"text", "html"},
    None where the campaign hides it or there is none) and turns, masked."""
    reference = None
    if viewer.show_reference and task.reference:
        reference = text_shown(task.reference, viewer.terms, html=viewer.html)
    return {
        "category": words_shown(task.category, viewer.terms),
        "multi_turn": bool(task.messages or task.turns),
        "conversation": conversation_shown(task, viewer),
        "reference": reference,
        "turns": [words_shown(content_text(t), viewer.terms) for t in task.turns or []],
    }


def candidates_shown(
    outputs: Sequence[OutputRead], task_turns: list | None, viewer: Viewer
) -> tuple[list[dict], list[dict] | None]:
    """The outputs in the order given, under their labels, masked: {label, text, html} (html
    None for the APIs), "reasoning" where the campaign shows it, and each output's transcript
    as "turns". Also returns a conversation's rows turn by turn (None: each output is shown
    whole, its steps above its answer)."""
    candidates = []
    for output in outputs:
        # The API sends text only: mask, but skip the Markdown rendering. (Flagging for
        # admins happens when the output is stored: tasks/blinding/hold.py.)
        if viewer.html:
            text, rendered, _ = blinding.render_output(output.text, viewer.terms)
        else:
            text, rendered = blinding.mask_identity(output.text, viewer.terms).text, None
        candidate = {"label": output.label, "text": text, "html": rendered}
        if viewer.show_reasoning:
            # A reasoning model often says who it is in its reasoning: masked as its answer.
            candidate["reasoning"] = reasoning_shown(
                output.reasoning or "", viewer.terms, html=viewer.html
            )
        candidates.append(candidate)
    turns = transcript_shown.attach(
        candidates=candidates,
        transcripts=[o.transcript for o in outputs],
        task_turns=task_turns,
        reader=transcript_shown.Reader(
            viewer.terms, html=viewer.html, reasoning=viewer.show_reasoning
        ),
    )
    return candidates, turns


def rubric_shown(dimensions: Iterable[Dimension], viewer: Viewer) -> list[dict]:
    """The rubric as reviewers read it: label, description and anchors masked (they end up in
    the page's text and in attributes: title=, aria-label=). The key is an identifier (form
    field names, the API): shown as written, so the campaign's definition warns about it."""
    rows = []
    for dim in dimensions:
        anchors = {k: words_shown(v, viewer.terms) for k, v in dim.anchors.items()}
        rows.append(
            {
                "key": dim.key,
                "label": words_shown(dim.label, viewer.terms),
                "description": words_shown(dim.description, viewer.terms),
                "min": dim.min,
                "max": dim.max,
                "allow_na": dim.allow_na,
                "anchors": anchors,
                "points": [{"value": v, "anchor": anchors.get(str(v), "")} for v in dim.points],
                "turn": dim.turn,
            }
        )
    return rows


def task_json(
    *,
    category: str,
    multi_turn: bool,
    conversation: list,
    reference: str | None,
    turns: list[str] | None = None,
):
    """A task as the API shows it, to reviewers and arbiters alike: `messages` for a multi-turn
    task (tool calls and tool messages included, masked), else `prompt`; `turns`, the scripted
    user's messages of a conversation; `reference` where the campaign shows it."""
    task = {"category": category}
    if multi_turn:
        task["messages"] = [m["json"] for m in conversation]
    else:
        task["prompt"] = conversation[0]["content"] if conversation else ""
    if turns:
        task["turns"] = turns
    if reference:
        task["reference"] = reference
    return task


def score_text(value) -> str:
    """A score as the pages write it: N/A, a whole number, or at most two decimals."""
    if value is None:
        return "N/A"
    value = float(value)
    return str(int(value)) if value.is_integer() else f"{value:.2f}".rstrip("0").rstrip(".")
