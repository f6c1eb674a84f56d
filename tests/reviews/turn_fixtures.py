"""Conversation tasks scored turn by turn (a campaign's score_turns), for the per-turn tests.

A task with `turns` (its scripted user) and, per contender, a generation whose transcript has
one entry per user turn, in the shape the generation stores (tasks/checks/transcripts.py reads it).
"""

from tasks.blinding import render as blinding
from tests.factories import CampaignFactory, ReviewItemFactory, TaskFactory

SCORE_TURNS = {"dimension": "turn_quality", "min": 1, "max": 5}
USER_TURNS = [
    "I need a hotel in Lisbon for two nights.",
    "Actually make it three nights, from 4 May.",
    "It must have a pool.",
    "And breakfast included, please.",
    "Which one do you recommend, and why?",
]


def transcript(turns: list[str], voice: str) -> list[dict]:
    return [
        {
            "turn": n,
            "user": text,
            "steps": [
                {
                    "text": f"{voice} reply {n}",
                    "tool_calls": [],
                    "tool_results": [],
                    "latency_ms": 100,
                    "ttft_ms": 20,
                    "input_tokens": 50,
                    "output_tokens": 20,
                    "finish_reason": "stop",
                }
            ],
            "answer": f"{voice} reply {n}",
            "finish_reason": "stop",
        }
        for n, text in enumerate(turns, start=1)
    ]


def conversation_item(campaign, *, turns: int = 3, **task_fields):
    """A ready item of `campaign` on a conversation task with `turns` user turns."""
    task = TaskFactory(testset=campaign.testset, prompt="", turns=USER_TURNS[:turns], **task_fields)
    item = ReviewItemFactory(campaign=campaign, task=task)
    for i, output in enumerate(item.outputs.order_by("pk").select_related("generation")):
        generation = output.generation
        generation.transcript = transcript(USER_TURNS[:turns], f"voice-{i}")
        generation.output = generation.transcript[-1]["answer"]
        generation.save(update_fields=["transcript", "output"])
    return item


def turn_campaign(*, overlap: int = 2, score_turns: dict | None = None, **fields):
    return CampaignFactory(overlap=overlap, score_turns=dict(score_turns or SCORE_TURNS), **fields)


def turn_submit(assignment, per_turn: dict[str, list], value: int = 4, preference="A") -> dict:
    """A submit for the factories' rubric plus the turn scores `per_turn` ({"A": [4, 3, 5]})."""
    data = {"scores": {}, "preference": preference}
    for label in blinding.labels(len(assignment.order)):
        scores = {"accuracy": value, "completeness": value}
        for turn, score in enumerate(per_turn.get(label, []), start=1):
            scores[f"turn_quality@{turn}"] = score
        data["scores"][label] = scores
    return data
