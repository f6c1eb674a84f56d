"""Demo step: the "charts-demo" test set and campaign: a chart image and a reasoning model.

Two chart-reading tasks, each a question with the same bar chart (demo_data/charts/), uploaded
as a zip through the real intake (decoded, re-encoded without metadata, stored under a neutral
name). The support demo's three imported contenders answer them from
demo_data/charts-demo-outputs.jsonl; northwind-large is a reasoning model: its outputs carry
their reasoning (which names the model, as reasoning often does: reviewers see it masked) and
reasoning tokens. The campaign says `show_reasoning: true`, so reviewers find the chart beside
the question and each reasoning collapsed under its answer.

Idempotent: a second run finds the test set by checksum and the campaign by slug, and
re-imports identical outputs, which changes nothing.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from tasks.blinding.hold import generation_identity_approve
from tasks.campaigns.definition import campaign_create
from tasks.demo.campaign import CONTENDERS, RUBRIC
from tasks.generation.outputs_import import outputs_import
from tasks.intake.services import testset_import
from tasks.models import Campaign

DATA = Path(__file__).resolve().parent / "demo_data"
TESTSET = DATA / "charts-demo.jsonl"
OUTPUTS = DATA / "charts-demo-outputs.jsonl"
TESTSET_NAME = SLUG = "charts-demo"


def bundle() -> bytes:
    """The test set as an upload: a zip of the JSONL and the charts it names."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(TESTSET.name, TESTSET.read_bytes())
        for chart in sorted((DATA / "charts").glob("*.png")):
            archive.writestr(f"charts/{chart.name}", chart.read_bytes())
    return out.getvalue()


def load(context: dict, stdout) -> dict:
    admin = context.get("users", {}).get("admin")
    testset = testset_import(
        name=TESTSET_NAME, data=bundle(), filename="charts-demo.zip", user=admin
    ).testset
    campaign = Campaign.objects.filter(slug=SLUG).first()
    if campaign is None:
        campaign, _ = campaign_create(
            definition={
                "slug": SLUG,
                "name": "Reading charts, with the reasoning (demo)",
                "testset": {"name": testset.name, "version": testset.version},
                "contenders": CONTENDERS,
                "overlap": 2,
                "mode": "both",
                "rubric": RUBRIC,
                "show_reasoning": True,
                "redact": ["OpenAI", "Anthropic", "Claude", "ChatGPT", "GPT", "Gemini", "Llama"],
                "instructions": "Read the chart yourself first. Where a reasoning is shown "
                "under an answer, check that its arithmetic holds: a right answer from wrong "
                "reasoning is not fully accurate.",
            },
            user=admin,
        )
    by_contender: dict[str, list[str]] = {}
    for line in OUTPUTS.read_text(encoding="utf-8").split("\n"):
        if line.strip():
            by_contender.setdefault(json.loads(line)["contender"], []).append(line)
    for name, lines in by_contender.items():
        outputs_import(campaign=campaign, contender_name=name, raw="\n".join(lines).encode())
    for generation in campaign.generations.filter(identity_held=True):
        generation_identity_approve(generation=generation, user=admin)
    ready = campaign.items.filter(ready=True).count()
    stdout.write(
        f"Campaign {campaign.slug}: {testset.task_count} chart tasks with an image, "
        f"a reasoning contender, {ready} review items ready"
    )
    return {"charts_campaign": campaign}
