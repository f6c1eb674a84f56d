"""The messages a judge is sent, from the reviewer's view of an item (pure).

`view` is exactly what the reviewer API hands a reviewer (reviews.review.selectors.review_api_payload's
shape, built by reviews/judges/screen.py): the masked task, the outputs under their labels
in the order drawn for this judgement, the rubric with its anchors, the preference choices
and the campaign's instructions. Nothing else reaches the judge: no contender, model, id or
order other than the labels, so the judge is as blind as a reviewer.
"""

from __future__ import annotations

import json

SYSTEM = (
    "You are a reviewer in a blind evaluation of AI answers. You see a task and the answers "
    "to it, labelled {labels}, in an order that means nothing. Judge each answer on its own "
    "merits against the rubric, using only the points of each scale. Answer with the "
    "structured output you are given and nothing else: first your reasoning, briefly, then "
    "the answer's fields."
)


def judge_messages(view: dict, *, judge_instructions: str = "") -> list[dict]:
    """[system, user] messages for one judgement of `view`."""
    labels = [c["label"] for c in view["candidates"]]
    parts = [_task_part(view["task"]), *(_candidate_part(c) for c in view["candidates"])]
    if view.get("rubric"):
        parts.append(_rubric_part(view["rubric"], labels))
    if view.get("preference_choices"):
        parts.append(_preference_part(view["preference_choices"], labels))
    if view.get("instructions"):
        parts.append("# The campaign's instructions to reviewers\n\n" + view["instructions"])
    if judge_instructions:
        parts.append("# Further guidance\n\n" + judge_instructions)
    return [
        {"role": "system", "content": SYSTEM.format(labels=", ".join(labels))},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def _task_part(task: dict) -> str:
    lines = [f"# The task (category: {task.get('category', '')})", ""]
    if "messages" in task:
        lines.append("The conversation so far, as JSON messages:")
        lines.append(json.dumps(task["messages"], ensure_ascii=False, indent=1))
    else:
        lines.append(task.get("prompt", ""))
    if task.get("turns"):
        lines += ["", "The user's turns, in order:"]
        lines += [f"{n}. {t}" for n, t in enumerate(task["turns"], start=1)]
    if task.get("reference"):
        lines += ["", "## Reference answer", "", task["reference"]]
    return "\n".join(lines)


def _candidate_part(candidate: dict) -> str:
    lines = [f"# Answer {candidate['label']}", ""]
    if candidate.get("transcript"):
        lines.append("Its steps (tool calls and results, turns), as JSON:")
        lines.append(json.dumps(candidate["transcript"], ensure_ascii=False, indent=1))
        lines += ["", "Its final answer:", ""]
    lines.append(candidate.get("text") or "(empty)")
    return "\n".join(lines)


def _rubric_part(rubric: list[dict], labels: list[str]) -> str:
    lines = [f"# The rubric: score every answer ({', '.join(labels)}) on every dimension", ""]
    for dim in rubric:
        scale = f"whole points from {dim['min']} to {dim['max']}"
        if dim.get("allow_na"):
            scale += ", or null when the dimension does not apply"
        lines.append(f"## {dim['key']}: {dim.get('label') or dim['key']} ({scale})")
        if dim.get("description"):
            lines.append(dim["description"])
        for point, anchor in sorted(dim.get("anchors", {}).items(), key=lambda a: float(a[0])):
            lines.append(f"- {point}: {anchor}")
        lines.append("")
    return "\n".join(lines).rstrip()


def _preference_part(choices: list[str], labels: list[str]) -> str:
    bad = "both_bad" if len(labels) == 2 else "both_bad (all are bad)"
    return (
        "# Preference\n\nWhich answer is better overall? One of "
        + ", ".join(c if c != "both_bad" else bad for c in choices)
        + "."
    )
