"""The create_campaign format as JSON Schema, for the API's documentation and clients
(tasks/campaigns/definition.py validates a definition and lists every problem; this schema
describes the same format)."""

from __future__ import annotations

from tasks.campaigns.definition import (
    ENV_RE,
    INSTRUCTIONS_MAX_CHARS,
    MAX_PRICE,
    MAX_WEIGHT,
    PROBE_EVERY_MAX,
    SLUG_RE,
)
from tasks.campaigns.rosters import ROSTER_SCHEMA
from tasks.campaigns.rubric import KEY_RE, LEVELS, SCALE_LIMIT
from tasks.campaigns.score_turns import SCORE_TURNS_SCHEMA
from tasks.models import Mode, Provider

# The create_campaign format (tasks.campaigns.definition validates it and lists every problem). A null
# is refused where a value has a default: leave the key out instead.
_INTEGER, _NUMBER, _OPTIONAL_NUMBER = (
    {"type": "integer"},
    {"type": "number"},
    {"type": ["number", "null"]},
)
PRICE = {"type": ["number", "null"], "minimum": 0, "maximum": MAX_PRICE, "description": "null: 0"}
_RATES = {
    "cache_read_per_mtok": PRICE,
    "cache_write_per_mtok": PRICE,
    "reasoning_per_mtok": PRICE,
}
PRICES = {
    "type": ["object", "null"],
    "description": "prices beyond the two flat ones (any price given replaces the price "
    "data's), or which price data to match (provider, model)",
    "additionalProperties": False,
    "properties": {
        "provider": {"type": "string", "maxLength": 200},
        "model": {"type": "string", "maxLength": 200},
        **_RATES,
        "tiers": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["above_input_tokens"],
                "additionalProperties": False,
                "properties": {
                    "above_input_tokens": {"type": "integer", "minimum": 0},
                    "price_in_per_mtok": PRICE,
                    "price_out_per_mtok": PRICE,
                    **_RATES,
                },
            },
        },
    },
}
DEFINITION_SCHEMA = {
    "type": "object",
    "required": ["slug", "testset", "contenders"],
    "additionalProperties": False,
    "properties": {
        "slug": {"type": "string", "pattern": SLUG_RE.pattern},
        "name": {"type": "string", "maxLength": 200},
        "testset": {
            "description": "a test set's name (its latest version) or {name, version}",
            "oneOf": [
                {"type": "string", "minLength": 1},
                {
                    "type": "object",
                    "required": ["name"],
                    "additionalProperties": False,
                    "properties": {
                        "name": {"type": "string"},
                        "version": {"type": ["integer", "null"], "description": "null: latest"},
                    },
                },
            ],
        },
        "contenders": {
            "type": "array",
            "minItems": 1,
            "description": "a contender's name (an existing one) or its definition",
            "items": {
                "oneOf": [
                    {"type": "string", "minLength": 1},
                    {
                        "type": "object",
                        "required": ["name"],
                        "additionalProperties": False,
                        "properties": {
                            "name": {"type": "string", "maxLength": 100},
                            "provider": {"type": "string", "enum": list(Provider.values)},
                            "base_url": {"type": "string", "maxLength": 200},
                            "model": {"type": "string", "maxLength": 200},
                            "api_key_env": {"type": "string", "pattern": f"^$|{ENV_RE.pattern}"},
                            "params": {
                                "type": ["object", "null"],
                                "description": "passed to the provider as given",
                                "properties": {
                                    "temperature": {**_OPTIONAL_NUMBER, "minimum": 0, "maximum": 2},
                                    "top_p": {**_OPTIONAL_NUMBER, "minimum": 0, "maximum": 1},
                                    "max_tokens": {"type": ["integer", "null"], "minimum": 1},
                                    "seed": {"type": ["integer", "null"]},
                                },
                            },
                            "system_prompt": {"type": "string", "maxLength": 20000},
                            "price_in_per_mtok": PRICE,
                            "price_out_per_mtok": PRICE,
                            "prices": PRICES,
                            "version_label": {"type": "string", "maxLength": 100},
                            "max_concurrency": {**_INTEGER, "minimum": 1, "maximum": 1000},
                        },
                    },
                ]
            },
        },
        "samples_per_task": {**_INTEGER, "minimum": 1, "maximum": 100},
        "reviewed_samples": {**_INTEGER, "minimum": 1},
        "overlap": {**_INTEGER, "minimum": 1, "maximum": 20},
        "mode": {"type": "string", "enum": list(Mode.values)},
        "rubric": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key"],
                "additionalProperties": False,
                "properties": {
                    "key": {"type": "string", "pattern": KEY_RE.pattern},
                    "label": {"type": "string", "maxLength": 100},
                    "description": {"type": "string", "maxLength": 2000},
                    "min": {**_INTEGER, "minimum": -SCALE_LIMIT, "maximum": SCALE_LIMIT},
                    "max": {**_INTEGER, "minimum": -SCALE_LIMIT, "maximum": SCALE_LIMIT},
                    "anchors": {"type": "object", "additionalProperties": {"type": "string"}},
                    "level": {"type": "string", "enum": list(LEVELS)},
                    "direction": {"type": "string", "enum": ["higher", "lower"]},
                    "max_gap": {**_NUMBER, "minimum": 0, "maximum": 2 * SCALE_LIMIT},
                    "allow_na": {"type": "boolean"},
                },
            },
        },
        "weights": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "categories": {
                    "type": "object",
                    "additionalProperties": {**_NUMBER, "minimum": 0, "maximum": MAX_WEIGHT},
                },
                "quality": {**_NUMBER, "minimum": 0, "maximum": MAX_WEIGHT},
                "stability": {**_NUMBER, "minimum": 0, "maximum": MAX_WEIGHT},
                "min_quality": {
                    **_NUMBER,
                    "minimum": 0,
                    "maximum": 1,
                    "description": "quality floor of the decision score (default: the pass "
                    "threshold)",
                },
            },
        },
        "redact": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "lease_minutes": {**_INTEGER, "minimum": 1, "maximum": 24 * 60},
        "pass_threshold": {
            "oneOf": [
                {**_NUMBER, "minimum": 0, "maximum": 1},
                {
                    "type": "object",
                    "properties": {
                        t: {**_NUMBER, "minimum": 0, "maximum": 1}
                        for t in ("base", "advanced", "boundary")
                    },
                    "additionalProperties": False,
                },
            ],
            "description": "final quality a sample needs to pass, or one per tier",
        },
        "show_reference": {"type": "boolean"},
        "show_reasoning": {"type": "boolean"},
        "flags_dispute": {"type": "boolean"},
        "blinding_probe": {
            "type": ["object", "null"],
            "additionalProperties": False,
            "required": ["every"],
            "properties": {"every": {**_INTEGER, "minimum": 1, "maximum": PROBE_EVERY_MAX}},
            "description": "after every N items a reviewer is asked which contender wrote one "
            "answer of that item (null or absent: never)",
        },
        "hold_identity_leaks": {
            "type": "boolean",
            "default": True,
            "description": "an output that names a model keeps its items from reviewers "
            "until an admin approves its masked view",
        },
        "instructions": {"type": "string", "maxLength": INSTRUCTIONS_MAX_CHARS},
        "reviewers": {
            **ROSTER_SCHEMA,
            "description": 'who may review: "all" (everyone with the reviewer role) or usernames',
        },
        "arbiters": {
            **ROSTER_SCHEMA,
            "description": 'who may arbitrate: "all" (everyone with the arbiter role) or usernames',
        },
        "score_turns": SCORE_TURNS_SCHEMA,
    },
}
