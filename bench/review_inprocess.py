"""Benchmark: what one claim / review page / submit costs inside Django, without HTTP.

Drives Django's WSGI handler in this process (the same code gunicorn runs) through the review
loop of one reviewer on the campaign `bench/review_load.py` builds, and reports per request:
wall time, this process's CPU time, database queries, Python function calls (cProfile), and
the CPU time of the PostgreSQL server process serving this connection (from /proc). Unlike
the load benchmark these figures barely move with the machine's load, so they show what a
change to the request path did.

    .venv/bin/python bench/review_load.py --duration 5      # once: builds the database
    .venv/bin/python bench/review_inprocess.py --iterations 100

Every run adds one reviewer (and reviews 100 items of the 10,000).
"""

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS = ("claim", "page", "submit (first review)", "submit (k-th: settles the item)", "healthz")


def setup(database_url: str, redis_url: str) -> None:
    os.environ.update(
        DATABASE_URL=database_url,
        DEBUG="0",
        SECURE_COOKIES="0",
        LOG_LEVEL="WARNING",
        ALLOWED_HOSTS="127.0.0.1,localhost",
        REDIS_URL=redis_url,
        DJANGO_SETTINGS_MODULE="evalsite.settings",
    )
    os.environ.setdefault("EVALSITE_DATA_DIR", "/tmp/evalsite-bench-inprocess")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


class Reviewer:
    """A fresh reviewer with an API token and a logged-in session, talking WSGI directly."""

    def __init__(self):
        from django.conf import settings
        from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
        from django.contrib.sessions.backends.db import SessionStore
        from django.core.handlers.wsgi import WSGIHandler

        from evalsite.services import user_create_or_update

        user, token = user_create_or_update(
            username=f"inproc-{uuid.uuid4().hex[:8]}", roles=["reviewer"]
        )
        self.auth = [("Authorization", f"Bearer {token}")]
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[-1]
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        self.cookie = f"sessionid={session.session_key}"
        self.app = WSGIHandler()

    def call(self, method: str, path: str, body: bytes = b"", headers=()) -> tuple[str, bytes]:
        path, _, query = path.partition("?")
        environ = {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "80",
            "HTTP_HOST": "127.0.0.1",
            "HTTP_COOKIE": self.cookie,
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.input": io.BytesIO(body),
            "wsgi.url_scheme": "http",
        }
        for name, value in headers:
            environ["HTTP_" + name.upper().replace("-", "_")] = value
        status = []
        body_out = b"".join(self.app(environ, lambda s, h, exc=None: status.append(s)))
        return status[0], body_out


def backend_cpu() -> float:
    """CPU seconds used so far by the PostgreSQL process serving this connection."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/evalsite_bench_review"
        ),
    )
    parser.add_argument(
        "--redis-url",
        default="redis://127.0.0.1:6379/14",
        help="the site's cache and session store, as in production ('' for none)",
    )
    parser.add_argument("--slug", default="bench-review")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--show-sql", action="store_true", help="print one round's queries")
    parser.add_argument(
        "--top", type=int, default=0, help="print each request's N most costly functions (own time)"
    )
    parser.add_argument("--sort", default="tottime", help="with --top: tottime or cumulative")
    parser.add_argument("--only", help="with --top: only functions whose path matches this regex")
    args = parser.parse_args()
    setup(args.database_url, args.redis_url)
    from django.db import connection

    with connection.cursor() as cursor:
        # Fresh planner statistics, as autovacuum keeps them (off on this machine's PostgreSQL).
        for table in (
            "reviews_assignment",
            "reviews_review",
            "reviews_score",
            "reviews_reviewitem",
        ):
            cursor.execute(f"ANALYZE {table}")
    reviewers = [Reviewer(), Reviewer()]  # k = 2: the second one completes the first one's item
    names = (*STEPS, "submit")
    wall, cpu, queries, db_cpu, calls = ({s: [] for s in names} for _ in range(5))
    profiles: dict[str, pstats.Stats] = {}
    count, mode = [0], ["warm-up"]

    def counting(execute, sql, params, many, context):
        count[0] += 1
        if mode[0] != "sql":
            return execute(sql, params, many, context)
        t0 = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            print(f"    {(time.perf_counter() - t0) * 1000:6.2f} ms  {sql[:140]}")

    def step(reviewer, name: str, method: str, path: str, body: bytes = b"", headers=()):
        if mode[0] == "sql":
            print(f"{name}:")
        if mode[0] == "profile":
            profile = cProfile.Profile(time.thread_time)  # CPU, not waiting on the database
            profile.enable()
            status, out = reviewer.call(method, path, body, headers)
            profile.disable()
            stats = pstats.Stats(profile)
            calls[name].append(stats.total_calls)
            if name in profiles:
                profiles[name].add(profile)
            else:
                profiles[name] = stats
            return out
        db0, count[0] = backend_cpu(), 0
        c0, t0 = time.thread_time(), time.perf_counter()
        status, out = reviewer.call(method, path, body, headers)
        wall[name].append(time.perf_counter() - t0)
        cpu[name].append(time.thread_time() - c0)
        queries[name].append(count[0])
        db_cpu[name].append(backend_cpu() - db0)
        assert status[:3] in ("200", "201"), (name, status, out[:300])
        return out

    def settled(token: str) -> bool:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT i.state FROM reviews_reviewitem i JOIN reviews_assignment a "
                "ON a.item_id = i.id WHERE a.token = %s",
                [token],
            )
            return cursor.fetchone()[0] != "open"

    def review_one(reviewer) -> None:
        claim = json.loads(
            step(
                reviewer,
                "claim",
                "POST",
                f"/api/v1/campaigns/{args.slug}/next",
                headers=reviewer.auth,
            )
        )
        step(reviewer, "page", "GET", f"/review/{args.slug}/{claim['token']}/")
        answer = {
            "scores": {
                c["label"]: {d["key"]: 4 for d in claim["rubric"]} for c in claim["candidates"]
            },
            "preference": "tie",
            "key": uuid.uuid4().hex,
        }
        body = json.dumps(answer).encode()
        step(reviewer, "submit", "POST", claim["submit_url"], body, reviewer.auth)
        kind = (
            "submit (k-th: settles the item)"
            if settled(claim["token"])
            else "submit (first review)"
        )
        for series in (wall, cpu, queries, db_cpu, calls):
            if series["submit"]:
                series[kind].append(series["submit"].pop())
        step(reviewer, "healthz", "GET", "/healthz?quick")

    def round_() -> None:
        for reviewer in reviewers:
            review_one(reviewer)

    profiled = min(20, args.iterations)
    with connection.execute_wrapper(counting):
        for _ in range(5):  # warm-up: imports, caches, prepared statements (after 5 runs)
            round_()
        for series in (wall, cpu, queries, db_cpu, calls):
            for values in series.values():
                values.clear()
        if args.show_sql:
            mode[0] = "sql"
            round_()
        mode[0] = "measure"
        for _ in range(args.iterations):
            round_()
        mode[0] = "profile"  # a separate pass: cProfile slows what it watches
        for _ in range(profiled):
            round_()

    n = args.iterations
    print(
        f"{n} rounds, in-process: two reviewers each claim -> page -> submit (+ /healthz); "
        "the second completes the first one's item"
    )
    print()
    print("| request | wall median | CPU mean | SQL statements | Python calls | PostgreSQL CPU |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in STEPS:
        if not wall[name]:
            continue
        print(
            f"| {name} | {statistics.median(wall[name]) * 1000:.1f} ms "
            f"| {statistics.mean(cpu[name]) * 1000:.1f} ms "
            f"| {statistics.mean(queries[name]):.1f} | {statistics.mean(calls[name] or [0]):,.0f} "
            f"| {statistics.mean(db_cpu[name]) * 1000:.2f} ms |"
        )
    print()
    print(f"(Python calls from a separate cProfile pass of {profiled} rounds; SQL statements")
    print(" exclude BEGIN/COMMIT; PostgreSQL CPU is read in 10 ms ticks, averaged, and includes")
    print(" one pg_backend_pid() query per request)")
    print_plans(connection)
    for name, stats in profiles.items():
        if args.top:
            print(
                f"\n## {name}: the {args.top} functions with the most {args.sort} time ({profiled} rounds)"
            )
            stats.sort_stats(args.sort).print_stats(args.only or "", args.top)


def print_plans(connection) -> None:
    """How PostgreSQL planned this connection's prepared statements: a statement whose runs
    were mostly custom plans was planned again on every run (plan_cache_mode=auto does that
    whenever the statistics make a plan for the very values look cheaper)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generic_plans, custom_plans, regexp_replace(statement, '\\s+', ' ', 'g') "
            "FROM pg_prepared_statements WHERE statement NOT LIKE '%%pg_backend_pid%%' "
            "ORDER BY custom_plans DESC, generic_plans DESC"
        )
        rows = cursor.fetchall()
    print()
    print("| prepared statement (this connection) | generic plans | custom plans |")
    print("|---|---:|---:|")
    for generic, custom, statement in rows:
        print(f"| `{statement[:90]}` | {generic} | {custom} |")


if __name__ == "__main__":
    main()
