"""Benchmark: what masking and rendering one output costs, as the review page pays it.

Times `blinding.render_output` (mask, then render to sanitized HTML) per output with its
caches cleared before every call, so each figure is a first view, not a cache hit. Texts:
the demo campaign's outputs (ordinary support answers), the leak corpus, and long answers
(the demo outputs joined to ~8 KB with code and a table). `--root` runs another checkout's
code on the same texts, for a before/after comparison:

    git worktree add /tmp/evalsite-before <commit>
    .venv/bin/python bench/blinding.py --root /tmp/evalsite-before
    .venv/bin/python bench/blinding.py

Figures: median and p95 microseconds per output, per text kind, in the thread's CPU time (the
machine may be shared: wall time would count other processes' turns). `--check` times
`blinding.check_identity` too, the wider net run once when an output is stored (the code
before it has none), and `--big` one text of 1 MB.
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

CONTENDERS = [
    {
        "name": "zz-secret-model-9",
        "model": "acme/zz-secret-model-9",
        "base_url": "https://inference.zz-labs.example/v1",
    },
    {"name": "northwind-large", "model": "northwind/large-2", "base_url": "http://127.0.0.1:9/v1"},
]


def texts() -> dict[str, list[str]]:
    demo = [
        json.loads(line)["output"]
        for line in (HERE / "tasks/demo/demo_data/support-demo-outputs.jsonl")
        .read_text()
        .splitlines()
        if line.strip()
    ]
    corpus = [
        json.loads(line)["text"]
        for line in (HERE / "tests/reviews/blinding_corpus.jsonl").read_text().splitlines()
        if line.strip()
    ]
    extra = (
        "\n\n```python\ndef refund(order_id: str, *, max_tokens: int = 256) -> dict:\n"
        "    return {'order': order_id, 'status': 'queued'}\n```\n\n"
        "| step | owner | due |\n|---|---|---|\n| check | support | 2025-01-03 |\n"
    )
    long = []
    for i in range(0, len(demo), 6):
        body = "\n\n".join(demo[i : i + 6]) + extra
        long.append((body * (8000 // len(body) + 1))[:8000])
    return {"demo answers": demo, "leak corpus": corpus, "long answers (8 KB)": long}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default=str(HERE), help="checkout whose reviews/ to time")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--check", action="store_true", help="time check_identity too")
    parser.add_argument("--big", action="store_true", help="time one 1 MB text")
    args = parser.parse_args()
    sys.path.insert(0, args.root)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    os.environ.setdefault("EVALSITE_DATA_DIR", "/tmp/evalsite-bench-blinding")
    import django

    django.setup()
    from tasks.blinding import render as blinding

    terms = blinding.identity_terms(contenders=CONTENDERS)
    blinding.render_output("warm up the patterns: Claude", terms)
    print(f"code: {Path(blinding.__file__).resolve()}")
    for items in texts().values():
        # Compiled patterns are per-process state (the names' patterns are compiled per set of
        # names a text calls for, and kept): time the steady state, not their first compile.
        for text in items:
            blinding.render_output(text, terms)
    for kind, items in texts().items():
        times = []
        for _ in range(args.rounds):
            for text in items:
                blinding._mask_identity.cache_clear()
                blinding._render_markdown.cache_clear()
                start = time.thread_time_ns()
                blinding.render_output(text, terms)
                times.append((time.thread_time_ns() - start) / 1e3)
        times.sort()
        p95 = times[int(len(times) * 0.95)]
        print(
            f"{kind:22} n={len(items):4}  median {statistics.median(times):8.1f} us"
            f"  p95 {p95:8.1f} us  mean {statistics.fmean(times):8.1f} us"
        )
        if args.check:
            checks = []
            for text in items:
                blinding._mask_identity.cache_clear()
                start = time.thread_time_ns()
                blinding.check_identity(text, terms)
                checks.append((time.thread_time_ns() - start) / 1e3)
            checks.sort()
            print(
                f"{'  check_identity':22} n={len(items):4}  median {statistics.median(checks):8.1f} us"
                f"  p95 {checks[int(len(checks) * 0.95)]:8.1f} us"
            )
    if args.big:
        body = "\n\n".join(texts()["demo answers"])
        big = (body * (1_000_000 // len(body) + 1))[:1_000_000]
        for name, fn in (("mask", blinding.mask_identity), ("render", blinding.render_output)):
            start = time.thread_time_ns()
            fn(big, terms)
            print(f"1 MB text: {name} {(time.thread_time_ns() - start) / 1e9:.2f} s")
        if hasattr(blinding, "check_identity"):
            start = time.thread_time_ns()
            checked = blinding.check_identity(big, terms)
            print(
                f"1 MB text: check_identity {(time.thread_time_ns() - start) / 1e9:.2f} s, "
                f"holds: {sorted({h.reason for h in checked.holds})}"
            )


if __name__ == "__main__":
    main()
