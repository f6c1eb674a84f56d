"""Benchmark: import a 10,000-task test set, on SQLite and on PostgreSQL.

Times (1) the import itself: `tasks.intake.services.testset_import` on the file's bytes (parse,
validate, checksum, insert, commit), and (2) the whole CLI command as a user runs it:
`python manage.py import_testset FILE --name NAME` in a fresh process (interpreter start,
Django setup, read, import, exit).

    .venv/bin/python bench/import_testset.py                       # SQLite only
    .venv/bin/python bench/import_testset.py \\
        --database-url postgres://postgres@127.0.0.1:5432/evalsite_bench   # SQLite + PostgreSQL

Use a throwaway PostgreSQL database: the script migrates it and deletes what it imported.
"""

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORDS = (
    "customer order refund invoice shipping account password delivery warranty subscription "
    "billing address product return exchange payment card receipt tracking package damaged "
    "late missing upgrade downgrade cancel renew discount coupon policy support agent please "
    "thanks help issue problem question urgent today yesterday week month store online app"
).split()


def sentence(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + 1
    return (" ".join(out)[:chars].rstrip() + ".").capitalize()


def generate(path: Path, n: int) -> None:
    rng = random.Random(7)
    categories = [f"category_{i}" for i in range(12)]
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            row = {
                "external_id": f"T-{i:05d}",
                "category": rng.choice(categories),
                "tier": rng.choice(["base", "advanced", "boundary"]),
                "case_type": rng.choice(["typical", "edge", "failure"]),
                "prompt": sentence(rng, 300),
                "reference": sentence(rng, 600),
                "metadata": {"source": "ticket", "ticket": 100000 + i},
            }
            if i % 10 == 0:
                row["checks"] = {"max_chars": 1200, "must_include": ["refund"]}
            fh.write(json.dumps(row) + "\n")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def child(args) -> None:
    """Runs inside a process whose environment selects the database."""
    import django

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from tasks.intake.parse import parse_testset
    from tasks.intake.services import testset_delete, testset_import
    from tasks.models import TestSet

    call_command("migrate", verbosity=0)
    data = Path(args.file).read_bytes()
    parse_times, import_times, import_cpu = [], [], []
    for i in range(args.repeat):
        t0 = time.perf_counter()
        parse_testset(data, filename=args.file)
        parse_times.append(time.perf_counter() - t0)
        t0, c0 = time.perf_counter(), time.process_time()
        result = testset_import(
            name=f"bench-service-{os.getpid()}-{i}", data=data, filename=args.file
        )
        import_times.append(time.perf_counter() - t0)
        import_cpu.append(time.process_time() - c0)
        assert result.created and result.testset.task_count == args.tasks
    cli_times, cli_cpu = [], []
    for i in range(args.repeat):
        t0, c0 = time.perf_counter(), _children_cpu()
        proc = subprocess.run(
            [
                sys.executable,
                str(ROOT / "manage.py"),
                "import_testset",
                args.file,
                "--name",
                f"bench-cli-{os.getpid()}-{i}",
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        cli_times.append(time.perf_counter() - t0)
        cli_cpu.append(_children_cpu() - c0)
        assert proc.returncode == 0, proc.stderr
    startup = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "import_testset", "--help"],
            capture_output=True,
            check=True,
            cwd=ROOT,
        )
        startup.append(time.perf_counter() - t0)
    for ts in TestSet.objects.filter(name__startswith="bench-"):
        testset_delete(testset=ts)
    print(
        json.dumps(
            {
                "vendor": connection.vendor,
                "parse_validate_s": parse_times,
                "import_s": import_times,
                "import_cpu_s": import_cpu,
                "cli_s": cli_times,
                "cli_cpu_s": cli_cpu,
                "cli_startup_only_s": startup,
            }
        )
    )


def run_backend(label: str, env: dict, args, path: Path) -> dict:
    proc = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            "--file",
            str(path),
            "--tasks",
            str(args.tasks),
            "--repeat",
            str(args.repeat),
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if proc.returncode != 0:
        sys.exit(f"{label} run failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--database-url", default="", help="postgres://... (a throwaway database)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench-10k.jsonl"
        generate(path, args.tasks)
        size = path.stat().st_size
        print(
            f"{args.tasks:,} tasks, {size / 1e6:.1f} MB JSONL; {args.repeat} runs each; "
            f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
        )
        base = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
        backends = [("SQLite", {**base, "EVALSITE_DATA_DIR": str(Path(tmp) / "data")})]
        if args.database_url:
            backends.append(
                (
                    "PostgreSQL",
                    {
                        **base,
                        "DATABASE_URL": args.database_url,
                        "EVALSITE_DATA_DIR": str(Path(tmp) / "data-pg"),
                    },
                )
            )
        print(f"{'database':<12}{'step':<38}{'median':>9}{'best':>9}")
        steps = [
            ("parse_validate_s", "parse + validate (no database)"),
            ("import_s", "import (testset_import service)"),
            ("import_cpu_s", "  of which CPU time in this process"),
            ("cli_s", "whole CLI: manage.py import_testset"),
            ("cli_cpu_s", "  of which CPU time of the process"),
            ("cli_startup_only_s", "CLI startup alone (--help)"),
        ]
        for label, env in backends:
            r = run_backend(label, env, args, path)
            for key, title in steps:
                print(
                    f"{label:<12}{title:<38}{statistics.median(r[key]):>8.3f}s{min(r[key]):>8.3f}s"
                )


if __name__ == "__main__":
    main()
