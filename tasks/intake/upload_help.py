"""What the test-set upload page says about the file format: each field's rules, an example,
the limits. Written from the parser's own limits (parse.py, checks.py, conversation.py), so it
cannot drift from what the parser accepts (README "Test sets" says the same in prose)."""

from __future__ import annotations

import json

from django.conf import settings

from tasks.intake.checks import MAX_MUST_INCLUDE, MAX_REGEX_CHARS
from tasks.intake.conversation import (
    MAX_MESSAGES,
    MAX_MOCKS,
    MAX_STEPS,
    MAX_TEXT_CHARS,
    MAX_TOOLS,
    MAX_TURNS,
    ROLES,
)
from tasks.intake.parse import (
    CASE_TYPES,
    FIELDS,
    MAX_CATEGORY_CHARS,
    MAX_ID_CHARS,
    MAX_METADATA_CHARS,
    MAX_TASKS,
    REQUIRED,
    TIERS,
    size_text,
)

FIELD_RULES = {
    "external_id": f"unique in the file, up to {MAX_ID_CHARS} characters; stored NFC-normalized, "
    "without invisible characters",
    "category": f"free text up to {MAX_CATEGORY_CHARS} characters, e.g. billing",
    "tier": " or ".join(TIERS),
    "case_type": " or ".join(CASE_TYPES),
    "prompt": f"the question, up to {MAX_TEXT_CHARS:,} characters",
    "messages": f"a conversation instead of a prompt: up to {MAX_MESSAGES} {{role, content}} "
    f"objects, role {', '.join(ROLES)} (system first only), at least one user; assistant "
    "tool_calls each answered by a tool message; a user message's content may be text and "
    "image parts (see Images)",
    "reference": f"a reference answer, up to {MAX_TEXT_CHARS:,} characters",
    "checks": f"an object with any of json_schema (an object), regex (up to {MAX_REGEX_CHARS:,} "
    f"characters), max_chars (a positive integer), must_include (up to {MAX_MUST_INCLUDE} "
    'strings), reference (exact, normalized, choice or {"number": tolerance}), tool_calls '
    "(called, not_called, called_with, order, max_calls, valid_args)",
    "metadata": f"any JSON object, up to {MAX_METADATA_CHARS:,} characters as JSON",
    "tools": f"up to {MAX_TOOLS} {{name, description, parameters}} (OpenAI function format; "
    "parameters a JSON Schema of an object)",
    "tool_mocks": f"up to {MAX_MOCKS} {{tool, match, result or error, times}}, tried in order",
    "max_steps": f"model calls per turn, 1 to {MAX_STEPS} (default 8)",
    "turns": f"a scripted user: 1 to {MAX_TURNS} user messages, one per turn, after the optional "
    "messages; no prompt then; a turn may be text and image parts",
    "single_turn": "with turns: the same request stated in one message",
    "turn_checks": 'with turns: checks per turn, {"3": {...checks...}} (1-based)',
}
EXAMPLE_TASKS = (
    {
        "external_id": "T-1",
        "category": "billing",
        "tier": "base",
        "case_type": "typical",
        "prompt": "Can I return unworn shoes?",
        "reference": "Yes, within 30 days.",
        "checks": {"must_include": ["30 days"]},
    },
    {
        "external_id": "T-2",
        "category": "account_access",
        "tier": "advanced",
        "case_type": "edge",
        "messages": [
            {"role": "system", "content": "Be concise."},
            {"role": "user", "content": "My account is locked."},
            {"role": "assistant", "content": "Did you see a security message?"},
            {"role": "user", "content": "Yes, I'm abroad."},
        ],
        "metadata": {"source": "ZD-88121"},
    },
)


def format_help() -> dict:
    """The file format as the upload page explains it."""
    one_of = ("prompt", "messages")
    return {
        "max_size": size_text(settings.TESTSET_MAX_BYTES),
        "max_bytes": settings.TESTSET_MAX_BYTES,
        "max_tasks": MAX_TASKS,
        "fields": [
            {
                "name": name,
                "required": "yes"
                if name in REQUIRED
                else "prompt or messages, not both"
                if name in one_of
                else "instead of prompt"
                if name == "turns"
                else "no",
                "rules": FIELD_RULES[name],
            }
            for name in FIELDS
        ],
        "example_jsonl": json.dumps(EXAMPLE_TASKS[0], ensure_ascii=False),
        "csv_header": ",".join(FIELDS),
    }
