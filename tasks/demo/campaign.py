"""Demo step: the "support-demo" campaign, three imported contenders, outputs from a shipped file.

Everything goes through the real services (campaign_create, outputs_import), so the review
items end up ready exactly as they would for a real upload. Idempotent: a second run finds the
campaign and re-imports identical outputs, which changes nothing.
"""

import json
from pathlib import Path

from tasks.blinding.hold import generation_identity_approve
from tasks.campaigns.definition import campaign_create
from tasks.generation.outputs_import import outputs_import
from tasks.models import Campaign

OUTPUTS = Path(__file__).resolve().parent / "demo_data" / "support-demo-outputs.jsonl"
SLUG = "support-demo"


RUBRIC = [
    {
        "key": "accuracy",
        "label": "Accuracy",
        "description": "Facts, policy and promises are correct.",
        "min": 1,
        "max": 5,
        "level": "ordinal",
        "max_gap": 1,
        "anchors": {
            "1": "wrong or harmful (false promise, unsafe action)",
            "2": "a serious error",
            "3": "minor errors or vague",
            "4": "correct with a small slip",
            "5": "fully correct",
        },
    },
    {
        "key": "completeness",
        "label": "Completeness",
        "description": "Covers what the customer needs to act.",
        "min": 1,
        "max": 5,
        "level": "ordinal",
        "max_gap": 1,
        "anchors": {
            "1": "misses the point",
            "2": "misses most of it",
            "3": "the main point only",
            "4": "nearly everything",
            "5": "everything the customer needs",
        },
    },
    {
        "key": "tone",
        "label": "Tone",
        "description": "Polite, calm, on brand, appropriately brief.",
        "min": 1,
        "max": 5,
        "level": "ordinal",
        "max_gap": 1,
        "anchors": {
            "1": "rude or preachy",
            "2": "cold or rambling",
            "3": "acceptable",
            "4": "friendly and clear",
            "5": "exactly how our best agent would write",
        },
    },
]

CONTENDERS = [
    {
        "name": "northwind-large",
        "provider": "imported",
        "model": "support-large-2026-10",
        "version_label": "v2",
        "price_in_per_mtok": 2.5,
        "price_out_per_mtok": 10,
    },
    {
        "name": "northwind-small",
        "provider": "imported",
        "model": "support-small-2026-10",
        "version_label": "v1",
        "price_in_per_mtok": 0.15,
        "price_out_per_mtok": 0.6,
    },
    {
        "name": "partner-export",
        "provider": "imported",
        "model": "partner-bot",
        "version_label": "2026-11",
        "price_in_per_mtok": 1,
        "price_out_per_mtok": 4,
    },
]


DEMO_INSTRUCTIONS = """You are checking answers a support assistant gave to real customers.

- **Accuracy** first: a confident wrong step (a menu that does not exist, a wrong fee) is a 1 or 2.
- **Completeness**: did the customer get everything they need to finish on their own?
- Tone only breaks a tie. Flag an answer that invents facts as *hallucination*.
"""


def load(context: dict, stdout) -> dict:
    testset = context["testset"]
    campaign = Campaign.objects.filter(slug=SLUG).first()
    created = campaign is None
    if created:
        campaign, _ = campaign_create(
            definition={
                "slug": SLUG,
                "name": "Support assistant (demo)",
                "testset": {"name": testset.name, "version": testset.version},
                "contenders": CONTENDERS,
                "samples_per_task": 2,
                "reviewed_samples": 1,
                "overlap": 2,
                "mode": "both",
                "rubric": RUBRIC,
                "weights": {
                    "categories": {"account_access": 1.5},
                    "quality": 0.7,
                    "stability": 0.3,
                },
                "redact": ["OpenAI", "Anthropic", "Claude", "ChatGPT", "GPT", "Gemini", "Llama"],
                "instructions": DEMO_INSTRUCTIONS,
            },
            user=context.get("users", {}).get("admin"),
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
    # The demo's two self-identifying outputs are held like any (hold_identity_leaks): the
    # demo admin has approved their masked view, so every item is open and the outputs page
    # shows who approved them.
    admin = context.get("users", {}).get("admin")
    for generation in campaign.generations.filter(identity_held=True):
        generation_identity_approve(generation=generation, user=admin)
    campaign.refresh_from_db()  # the imports moved it from draft to reviewing
    ready = campaign.items.filter(ready=True).count()
    stdout.write(
        f"Campaign {campaign.slug}: {campaign.contenders.count()} contenders, {ready} review items ready"
        f"{'' if created or stored else ' (already loaded)'}"
    )
    return {"campaign": campaign}
