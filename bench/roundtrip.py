"""Benchmark: what one database round trip costs through Django on this machine.

The review loop is bounded by CPU, and a large share of it goes to round trips: Django's
cursor, psycopg and the kernel on this side, the protocol on PostgreSQL's. This measures that
price per statement (this process's CPU, the PostgreSQL backend's CPU and the wall time), for
the cheapest statements there are, so a figure like "24 round trips per review" can be turned
into milliseconds of CPU:

    .venv/bin/python bench/roundtrip.py --database-url postgres://postgres@127.0.0.1:5432/postgres

- `SELECT` through a Django cursor (prepared on the server after a few runs, as the site's are);
- the same wrapped in `transaction.atomic()` (psycopg sends BEGIN and COMMIT as round trips
  of their own);
- `SELECT 1` on the raw psycopg connection (Django's per-request health check).
"""

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def backend_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a local process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--n", type=int, default=5000, help="statements per measurement")
    args = parser.parse_args()
    os.environ.update(
        DATABASE_URL=args.database_url, DJANGO_SETTINGS_MODULE="evalsite.settings", DEBUG="0"
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db import connection, transaction

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()

    def select():
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 WHERE 1 = %s", [1])
            cursor.fetchall()

    def in_transaction():
        with transaction.atomic():
            select()

    def health_check():
        connection.connection.execute("SELECT 1")

    print(f"{args.n} statements each; microseconds per statement (per transaction for atomic)\n")
    print("| statement | this process CPU | PostgreSQL CPU | wall |")
    print("|---|---:|---:|---:|")
    for name, fn in (
        ("SELECT through a Django cursor", select),
        ("the same in transaction.atomic() (BEGIN, SELECT, COMMIT)", in_transaction),
        ("SELECT 1 on the raw connection (the health check)", health_check),
    ):
        for _ in range(200):  # warm up: prepared statements, caches
            fn()
        cpu, pg, wall = time.process_time(), backend_cpu(pid), time.perf_counter()
        for _ in range(args.n):
            fn()
        cpu = time.process_time() - cpu
        pg, wall = backend_cpu(pid) - pg, time.perf_counter() - wall
        print(
            f"| {name} | {1e6 * cpu / args.n:.0f} | {1e6 * pg / args.n:.0f} | {1e6 * wall / args.n:.0f} |"
        )


if __name__ == "__main__":
    main()
