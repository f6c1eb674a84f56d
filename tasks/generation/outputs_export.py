"""A campaign's outputs as a download: one JSON line per finished output, in the format
`outputs_import` takes (docs/campaigns.md, "Imported outputs"), with the contender's name.

It names the model behind every output, so only admins and leads download it. Rows are read
in chunks and leave as they are read: memory stays flat however large the campaign.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from tasks.models import Campaign, Generation

CHUNK_ROWS = 2000
CHUNK_CHARS = 1 << 16
COLUMNS = (
    "contender__name",
    "task__external_id",
    "sample_index",
    "single_turn",
    "output",
    "input_tokens",
    "output_tokens",
    "latency_ms",
    "ttft_ms",
    "cost",
    "finish_reason",
    "served_model",
    "transcript",
)


def outputs_jsonl(*, campaign: Campaign, contender: str | None = None) -> Iterator[str]:
    """The campaign's done outputs (of one contender when named), in task, contender and
    sample order, as JSONL text in chunks of about 64 KiB."""
    rows = Generation.objects.filter(campaign=campaign, status=Generation.Status.DONE)
    if contender is not None:
        rows = rows.filter(contender__name=contender)
    rows = rows.order_by("task__position", "contender__name", "single_turn", "sample_index")
    buffer: list[str] = []
    size = 0
    for values in rows.values_list(*COLUMNS).iterator(chunk_size=CHUNK_ROWS):
        line = json.dumps(_record(values), ensure_ascii=False) + "\n"
        buffer.append(line)
        size += len(line)
        if size >= CHUNK_CHARS:
            yield "".join(buffer)
            buffer, size = [], 0
    if buffer:
        yield "".join(buffer)


def _record(values: tuple) -> dict:
    """One output as an import line: keys left out where the output has no value."""
    (name, task_id, sample, single, output, tokens_in, tokens_out, latency, ttft, cost,
     finish, served, transcript) = values  # fmt: skip
    record = {"contender": name, "task_id": task_id, "sample": sample}
    if single:
        record["single_turn"] = True
    record["output"] = output
    measures = {
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "latency_ms": latency,
        "ttft_ms": ttft,
        # DecimalField(14, 8): at most 14 significant digits, which a float keeps exactly.
        "cost": float(cost) if cost is not None else None,
        "finish_reason": finish or None,
        "model": served or None,
    }
    record.update({key: value for key, value in measures.items() if value is not None})
    if transcript:
        record["transcript"] = transcript
    return record


def export_filename(*, campaign: Campaign, contender: str | None = None) -> str:
    suffix = f"-{re.sub(r'[^A-Za-z0-9._-]+', '_', contender)}" if contender else ""
    return f"{campaign.slug}-outputs{suffix}.jsonl"
