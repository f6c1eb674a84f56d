"""Demo step: the "agents-demo" test set and campaign: tool use and scripted-user conversations.

Four tool tasks (an order lookup whose tool times out once before it answers, a question where
the right move is not to call a tool, a refund that must look the order up first, a cancel
request the order's status forbids) and three conversations (a requirement added midway, one
changed midway, a house rule to keep at every turn), each with a single-turn statement. The
same three imported contenders as the support demo answer them, with transcripts shipped in
demo_data/agents-demo-outputs.jsonl: northwind-small forgets what it was told after turn 3,
partner-export sends arguments that are not JSON and gives up after a tool error.

Everything goes through the real services (testset_import, campaign_create, outputs_import,
which judges every call against the task's tools and runs the checks and turn checks), so the
"Tool use" and "Conversation" dashboards and the review page show what a real upload gives.
Idempotent: a second run finds the test set by checksum and the campaign by slug, and
re-imports identical outputs, which changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from tasks.blinding.hold import generation_identity_approve
from tasks.campaigns.definition import campaign_create
from tasks.demo.campaign import CONTENDERS, RUBRIC
from tasks.generation.outputs_import import outputs_import
from tasks.intake.services import testset_import
from tasks.models import Campaign

DATA = Path(__file__).resolve().parent / "demo_data"
TESTSET = DATA / "agents-demo.jsonl"
OUTPUTS = DATA / "agents-demo-outputs.jsonl"
TESTSET_NAME = SLUG = "agents-demo"

INSTRUCTIONS = """You are checking a support assistant that uses tools and talks with customers
over several turns.

- Read the **steps**: which tools it called, with which arguments, and what came back. A
  confident answer the tool results do not support is a 1 or 2 on accuracy.
- In a conversation, judge the **final reply** against everything the customer asked for
  along the way, not only the last message.
"""


def load(context: dict, stdout) -> dict:
    admin = context.get("users", {}).get("admin")
    imported = testset_import(
        name=TESTSET_NAME, data=TESTSET.read_bytes(), filename=TESTSET.name, user=admin
    )
    testset = imported.testset
    campaign = Campaign.objects.filter(slug=SLUG).first()
    created = campaign is None
    if created:
        campaign, _ = campaign_create(
            definition={
                "slug": SLUG,
                "name": "Support agent: tools and conversations (demo)",
                "testset": {"name": testset.name, "version": testset.version},
                "contenders": CONTENDERS,
                "samples_per_task": 3,
                "reviewed_samples": 1,
                "overlap": 2,
                "mode": "rubric",
                "rubric": RUBRIC,
                # reviewers also score each turn of a conversation; until a scored item is
                # settled, the turn curve reads the turn checks (and says so)
                "score_turns": {"dimension": "turn_quality", "label": "Turn quality", "max": 5},
                "redact": ["OpenAI", "Anthropic", "Claude", "ChatGPT", "GPT", "Gemini", "Llama"],
                "instructions": INSTRUCTIONS,
            },
            user=admin,
        )
    by_contender: dict[str, list[str]] = {}
    for line in OUTPUTS.read_text(encoding="utf-8").split("\n"):
        if line.strip():
            by_contender.setdefault(json.loads(line)["contender"], []).append(line)
    stored = 0
    for name, lines in by_contender.items():
        result = outputs_import(
            campaign=campaign, contender_name=name, raw="\n".join(lines).encode()
        )
        stored += result["stored"]
    for generation in campaign.generations.filter(identity_held=True):
        generation_identity_approve(generation=generation, user=admin)
    ready = campaign.items.filter(ready=True).count()
    stdout.write(
        f"Campaign {campaign.slug}: {testset.task_count} tool and conversation tasks, "
        f"{campaign.contenders.count()} contenders, {ready} review items ready"
        f"{'' if created or stored else ' (already loaded)'}"
    )
    return {"agents_campaign": campaign}
