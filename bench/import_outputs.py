"""Benchmark: bring your own data. A campaign of 2 imported contenders x N tasks, their outputs,
then review records, then the outputs' export (with text).

Times, each step end to end through the same service a CLI command or API call runs:
  1. `testset_import` of N tasks and `campaign_create` (2 imported contenders, 1 sample);
  2. `outputs_import` of each contender's N outputs (JSONL, ~600 characters each);
  3. `reviews_import` of N review records (one judge per item) and then of 2N (two judges);
  4. `outputs_export` of the campaign's 2N outputs with their text, every byte produced.

    createdb -h 127.0.0.1 -U postgres evalsite_bench   # once
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/evalsite_bench .venv/bin/python bench/import_outputs.py

Options: --tasks N (default 10000). Use a throwaway database: the script empties it first.
"""

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from reviews.records import reviews_import  # noqa: E402
from tasks.campaigns.definition import campaign_create  # noqa: E402
from tasks.generation.outputs_import import outputs_import  # noqa: E402
from tasks.intake.services import testset_import  # noqa: E402
from tasks.models import Campaign  # noqa: E402

WORDS = (
    "customer order refund invoice shipping account password delivery warranty subscription "
    "billing address product return exchange payment card receipt tracking package damaged "
    "late missing upgrade downgrade cancel renew discount coupon policy support agent please"
).split()
NAME = "bench-byod"


def text(rng: random.Random, chars: int) -> str:
    out, size = [], 0
    while size < chars:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:chars].capitalize() + "."


def testset_bytes(n: int) -> bytes:
    rng = random.Random(3)
    lines = [
        json.dumps(
            {
                "external_id": f"T-{i:05d}",
                "category": f"category_{i % 8}",
                "tier": ("base", "advanced", "boundary")[i % 3],
                "case_type": "typical",
                "prompt": text(rng, 300),
            }
        )
        for i in range(n)
    ]
    return ("\n".join(lines) + "\n").encode()


def outputs_bytes(n: int, seed: int) -> bytes:
    rng = random.Random(seed)
    lines = [
        json.dumps(
            {
                "task_id": f"T-{i:05d}",
                "sample": 0,
                "output": text(rng, 600),
                "input_tokens": 120,
                "output_tokens": 150,
                "latency_ms": 900,
            }
        )
        for i in range(n)
    ]
    return ("\n".join(lines) + "\n").encode()


def records_bytes(n: int, judges: list[str]) -> bytes:
    lines = []
    for i in range(n):
        for judge in judges:
            rng = random.Random(f"{i}:{judge}")  # the same review whichever file carries it
            lines.append(
                json.dumps(
                    {
                        "task_id": f"T-{i:05d}",
                        "candidates": ["A", "B"],
                        "models": {"A": "upload-one", "B": "upload-two"},
                        "scores": {
                            "A": {"accuracy": rng.randint(1, 5)},
                            "B": {"accuracy": rng.randint(1, 5)},
                        },
                        "preference": rng.choice(["A", "B", "tie"]),
                        "judge": judge,
                        "sample": 0,
                    }
                )
            )
    return ("\n".join(lines) + "\n").encode()


def clean() -> None:
    """Empty the throwaway database (campaigns protect their rows from a plain delete)."""
    call_command("flush", interactive=False, verbosity=0)


def timed(label: str, fn):
    t0 = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t0
    print(f"{label:<44} {seconds:7.2f} s", flush=True)
    return result, seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=10_000)
    args = parser.parse_args()
    n = args.tasks
    call_command("migrate", verbosity=0)
    clean()
    print(f"{connection.vendor}, {n} tasks x 2 imported contenders")
    raw = testset_bytes(n)
    timed("import the test set", lambda: testset_import(name=NAME, data=raw, filename="t.jsonl"))
    definition = {
        "slug": f"{NAME}-{n}",
        "name": "Bring your own data",
        "testset": NAME,
        "mode": "both",
        "samples_per_task": 1,
        "rubric": [{"key": "accuracy", "label": "Accuracy", "min": 1, "max": 5}],
        "contenders": [
            {"name": "upload-one", "provider": "imported"},
            {"name": "upload-two", "provider": "imported"},
        ],
    }
    (campaign, _), _ = timed("create the campaign", lambda: campaign_create(definition=definition))
    total = 0.0
    for contender, seed in (("upload-one", 1), ("upload-two", 2)):
        data = outputs_bytes(n, seed)
        _, seconds = timed(
            f"import {n} outputs of {contender}",
            lambda c=contender, d=data: outputs_import(campaign=campaign, contender_name=c, raw=d),
        )
        total += seconds
    print(f"{'outputs, both contenders':<44} {total:7.2f} s")
    one = records_bytes(n, ["judge_1"])
    timed(f"import {n} review records", lambda: reviews_import(campaign=campaign, data=one))
    two = records_bytes(n, ["judge_1", "judge_2"])
    timed(
        f"import {2 * n} review records (half known)",
        lambda: reviews_import(campaign=campaign, data=two),
    )
    export = _exporter()
    if export is not None:
        size, _ = timed(f"export {2 * n} outputs with text", lambda: export(campaign))
        print(f"{'export size':<44} {size / 1e6:7.1f} MB")


def _exporter():
    try:
        from tasks.generation.outputs_export import outputs_jsonl
    except ImportError:
        print("(no outputs export in this code)")
        return None

    def run(campaign: Campaign) -> int:
        return sum(len(chunk) for chunk in outputs_jsonl(campaign=campaign))

    return run


if __name__ == "__main__":
    main()
