"""Outputs produced elsewhere, uploaded for an `imported` contender (tasks/generation/providers/imported.py
parses the file; docs/campaigns.md, "Imported outputs").

An output may carry its transcript (docs/tools.md): its calls are judged again against the
task's tools, its turns get the task's turn checks, and everything it shows is searched for
model names, exactly as for a generated one. The single-turn answer of a conversation task is
a line with "single_turn": true.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from evalsite.bulk import rows_update
from evalsite.text import counted
from tasks import review_side
from tasks.checks.tools import call_record
from tasks.generation.grading import graded_fields
from tasks.generation.prices import Usage, call_costs, table_of
from tasks.generation.providers.imported import (
    MAX_INT,
    ImportedOutput,
    ImportErrors,
    capped,
    parse_outputs_collect,
)
from tasks.generation.services import campaign_status_refresh, generation_rows_create
from tasks.images.parts import content_text
from tasks.models import Campaign, Contender, Generation, Provider, Task

S = Generation.Status


def outputs_import(*, campaign: Campaign, contender_name: str, raw: bytes) -> dict:
    """Store uploaded outputs for an `imported` contender: all or nothing.

    Rows already done with the same text are left alone (re-importing is idempotent); a
    different text for a done row is an error, so reviewed outputs never change under reviewers.
    """
    contender = _imported_contender(campaign=campaign, contender_name=contender_name)
    generation_rows_create(campaign=campaign)
    existing = {
        (g.task.external_id, g.sample_index, g.single_turn): g
        for g in Generation.objects.filter(campaign=campaign, contender=contender).select_related(
            "task"
        )
    }
    tasks = {g.task.external_id: g.task for g in existing.values()}

    target = ImportTarget(campaign=campaign, contender=contender, existing=existing, tasks=tasks)

    def check(line: int, fields: dict) -> list[str]:
        return _line_problems(line, fields, target)

    rows, errors = parse_outputs_collect(raw, check=check)
    if errors:
        raise ImportErrors(*capped(errors))
    stored, unchanged = _rows_store(
        rows=rows, existing=existing, campaign=campaign, contender=contender
    )
    sync = review_side.review_items_sync(campaign=campaign)
    campaign_status_refresh(campaign_id=campaign.pk)
    missing = (
        Generation.objects.filter(campaign=campaign, contender=contender)
        .exclude(status=S.DONE)
        .count()
    )
    return {
        "stored": stored,
        "unchanged": unchanged,
        "missing": missing,
        "items_ready": sync.get("ready", 0),
    }


def _imported_contender(*, campaign: Campaign, contender_name: str):
    """The campaign's contender of that name, if it is an imported one; else ImportErrors."""
    contender = campaign.contenders.filter(name=contender_name).first()
    if contender is None:
        raise ImportErrors(
            [f"contender {contender_name!r} is not part of campaign {campaign.slug}"]
        )
    if contender.provider != Provider.IMPORTED:
        raise ImportErrors([f"contender {contender_name!r} is not an imported contender"])
    return contender


@dataclass
class ImportTarget:
    """What an import's lines are checked against: the campaign, its imported contender, that
    contender's rows by (task external id, sample, single_turn) and the tasks by external id."""

    campaign: Campaign
    contender: Contender
    existing: dict[tuple, Generation]
    tasks: dict[str, Task]


def _line_problems(line: int, fields: dict, target: ImportTarget) -> list[str]:
    """A line's problems against the campaign: its contender, task, sample, single-turn
    answer, transcript, and a done output it would change."""
    # Only the fields that parsed are here: every problem of a line in one run, no knock-ons.
    campaign, contender = target.campaign, target.contender
    existing, tasks = target.existing, target.tasks
    problems = []
    named = fields.get("contender", contender.name)
    if named != contender.name:
        problems.append(f"line {line}, field contender: {named!r} is not {contender.name!r}")
    task_id, sample = fields.get("task_id"), fields.get("sample")
    single = fields.get("single_turn", False)
    task = tasks.get(task_id)
    if task_id is not None and task is None:
        problems.append(f"line {line}, field task_id: no task {task_id!r} in {campaign.testset}")
    if sample is not None and sample >= campaign.samples_per_task:
        problems.append(
            f"line {line}, field sample: the campaign has "
            f"{counted(campaign.samples_per_task, 'sample')} per task"
        )
    if task is not None and single and not (task.turns and task.single_turn):
        problems.append(
            f"line {line}, field single_turn: task {task_id} has no single-turn statement"
        )
    elif task is not None and fields.get("transcript"):
        problems += _transcript_problems(line, task, fields["transcript"], single)
    gen = existing.get((task_id, sample, single))
    output = fields.get("output")
    if (
        named == contender.name
        and gen
        and gen.status == S.DONE
        and output not in (None, gen.output)
    ):
        problems.append(
            f"line {line}, field output: {task_id} sample {sample} already has a different output"
        )
    return problems


def _rows_store(
    *,
    rows: list[ImportedOutput],
    existing: dict[tuple, Generation],
    campaign: Campaign,
    contender,
) -> tuple[int, int]:
    """Write the parsed rows in one transaction; (stored, unchanged: already done)."""
    now = timezone.now()
    todo = [
        (row, existing[(row.task_id, row.sample, row.single_turn)])
        for row in rows
        if existing[(row.task_id, row.sample, row.single_turn)].status != S.DONE
    ]
    changes = [
        (gen.pk, _stored_fields(gen, row, campaign=campaign, contender=contender, now=now))
        for row, gen in todo
    ]
    with transaction.atomic():
        # A row another import finished meanwhile keeps its output (a conditional UPDATE).
        rows_update(Generation, changes, unless=("status", S.DONE))
    return len(todo), len(rows) - len(todo)


def _stored_fields(gen: Generation, row: ImportedOutput, *, campaign, contender, now) -> dict:
    """The columns an imported row sets on its generation: output, measures, grading, done."""
    return {
        "status": S.DONE,
        "output": row.output,
        **_measures(row, contender),
        "finish_reason": row.finish_reason or _last_finish(row.transcript),
        "error": "",
        **graded_fields(
            generation=gen,
            campaign=campaign,
            output=row.output,
            transcript=_judged(row.transcript, gen.task),
            reasoning=row.reasoning,
        ),
        "reasoning": row.reasoning,
        "attempts": 1,
        "started_at": now,
        "finished_at": now,
        "queued_at": None,
        "claim_token": "",
        "lease_expires_at": None,
    }


def _transcript_problems(line: int, task: Task, transcript: list, single: bool) -> list[str]:
    """A transcript must have the task's turns (one for a task without turns, or for its
    single-turn answer), with the task's own user messages where it gives them."""
    users = list(task.turns) if task.turns and not single else [None]
    if len(transcript) != len(users):
        return [
            f"line {line}, field transcript: has {counted(len(transcript), 'turn')}; "
            f"task {task.external_id} has {len(users)}"
        ]
    return [
        f"line {line}, field transcript[{i}].user: is not the task's turn {i + 1}"
        for i, (turn, user) in enumerate(zip(transcript, users, strict=True))
        if turn["user"] is not None and turn["user"] not in (user, content_text(user))
    ]


def _judged(transcript: list | None, task: Task) -> list:
    """The imported transcript with the task's user messages and each call judged against the
    task's tools (what the file says of a call's validity is not taken on trust)."""
    if not transcript:
        return []
    users = list(task.turns) if task.turns and len(task.turns) == len(transcript) else []
    return [
        {
            **turn,
            "user": users[i] if users else turn["user"],
            "steps": [
                {
                    **step,
                    "tool_calls": [
                        call_record(call_id=c["id"], name=c["name"], raw=c["raw"], tools=task.tools)
                        for c in step["tool_calls"]
                    ],
                }
                for step in turn["steps"]
            ],
        }
        for i, turn in enumerate(transcript)
    ]


def _measures(row: ImportedOutput, contender) -> dict:
    """Tokens, timings and cost as given, else what the transcript's steps say (tokens summed,
    the first step's time to first token); the completion time only as given."""
    steps = [step for turn in row.transcript or [] for step in turn["steps"]]

    def summed(key: str) -> int | None:
        known = [s[key] for s in steps if s.get(key) is not None]
        return min(sum(known), MAX_INT) if known else None

    input_tokens = row.input_tokens if row.input_tokens is not None else summed("input_tokens")
    output_tokens = row.output_tokens if row.output_tokens is not None else summed("output_tokens")
    ttft = row.ttft_ms if row.ttft_ms is not None or not steps else steps[0].get("ttft_ms")
    reasoning_tokens = (
        row.reasoning_tokens if row.reasoning_tokens is not None else summed("reasoning_tokens")
    )
    usage = Usage(
        input_tokens=input_tokens, output_tokens=output_tokens, reasoning_tokens=reasoning_tokens
    )
    computed, reasoning_cost = call_costs(table_of(contender), usage)
    cost = row.cost if row.cost is not None else computed
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "reasoning_tokens": reasoning_tokens,
        "reasoning_cost": reasoning_cost,
        "latency_ms": row.latency_ms,
        "ttft_ms": ttft,
        "cost": cost,
    }


def _last_finish(transcript: list | None) -> str:
    return transcript[-1]["finish_reason"] if transcript else ""
