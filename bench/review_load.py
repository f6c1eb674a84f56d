"""Benchmark: 32 reviewers working a 10,000-item campaign over HTTP against gunicorn.

Recreates a throwaway PostgreSQL database, builds a campaign with N ready items (two outputs
each, k=2) with bulk inserts, starts the site under gunicorn on 127.0.0.1, and runs R simulated
reviewers as threads, each with its own HTTP connection, for a fixed time:

    claim      POST /api/v1/campaigns/<slug>/next        (bearer token)
    load page  GET  /review/<slug>/<token>/               (logged-in session, the HTML page)
    submit     POST /api/v1/assignments/<token>/submit    (bearer token, idempotency key)

It reports p50/p95 per step, completed reviews per second, and, in the same server setup, the
throughput of the trivial `/healthz?quick` view (one SELECT 1) under the same concurrency: the
ceiling of this machine + gunicorn + Django. The machine's speed drifts, so the saturation
run is cut into rounds with a ceiling window before, between and after them, and each round
is compared with the mean of the two windows around it. The clients share the machine, so it
also prints the CPU each review and each /healthz request cost the server alone (gunicorn,
PostgreSQL, Redis), and the ratio that gives. Two runs of reviewers:

- saturation: every reviewer goes back to back, with no time to read; the most the site can
  do, as a fraction of the ceiling. Latency here is mostly queueing: with R reviewers always
  waiting, the mean wait is R / requests per second, whatever each request costs.
- steady load (--paced-rate, default 32 reviews/s: one per reviewer per second): the same
  reviewers, each starting one review every R / rate seconds; latency per step at that load.

Afterwards it checks the double-assignment invariants on the database (no item over k,
counters equal rows, no reviewer twice). The site runs as in production: sessions and cache
in Redis (--redis-url), data in PostgreSQL.

bench/review_ab.py runs this loop on an older checkout and this one, A/B in the same run.

    .venv/bin/python bench/review_load.py --database-url postgres://postgres@127.0.0.1:5432/evalsite_bench_review

Options: --items 10000 --reviewers 32 --duration 60 --rounds 4 --ceiling-duration 6 --workers 4
         --threads 4 --paced-rate 32 --paced-duration 60 --redis-url redis://127.0.0.1:6379/14
         --statements 12 (PostgreSQL's time, buffers and WAL per statement at saturation, from
         pg_stat_statements; PostgreSQL must load it: shared_preload_libraries)
"""

import argparse
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    # Another benchmark (or a forgotten server) on a fixed port would take our requests.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


PORT = free_port()
PASSWORD = "bench-reviewer-pass-1"


def recreate_database(url: str) -> None:
    parsed = urlparse(url)
    name = parsed.path.lstrip("/")
    admin = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def build(items: int, reviewers: int) -> tuple[str, list[tuple[str, str]]]:
    """Campaign with `items` ready items; returns (slug, [(username, api token)])."""
    from django.core.management import call_command
    from django.db import transaction

    from evalsite.models import ApiToken
    from evalsite.services import user_create_or_update
    from reviews.models import ItemOutput, ReviewItem
    from tasks.models import Campaign, Contender, Generation, Task, TestSet

    call_command("migrate", verbosity=0)
    rubric = [
        {
            "key": "accuracy",
            "label": "Accuracy",
            "min": 1,
            "max": 5,
            "max_gap": 1,
            "anchors": {"1": "wrong", "3": "partly right", "5": "fully correct"},
        },
        {
            "key": "completeness",
            "label": "Completeness",
            "min": 1,
            "max": 5,
            "max_gap": 1,
            "anchors": {"1": "misses most", "5": "covers everything"},
        },
        {
            "key": "tone",
            "label": "Tone",
            "min": 1,
            "max": 5,
            "max_gap": 1,
            "anchors": {"1": "rude", "5": "warm"},
        },
    ]
    t0 = time.perf_counter()
    with transaction.atomic():
        testset = TestSet.objects.create(
            name="bench-review", checksum="0" * 64, frozen=True, task_count=items
        )
        Task.objects.bulk_create(
            [
                Task(
                    testset=testset,
                    position=i,
                    external_id=f"T-{i:05d}",
                    category=f"cat_{i % 7}",
                    prompt=f"Ticket {i}: the customer cannot log in after a password reset. "
                    "Draft a short, friendly reply with the next steps.",
                )
                for i in range(items)
            ],
            batch_size=5000,
        )
        contenders = [
            Contender.objects.create(name=f"bench-model-{n}", provider="imported") for n in "xy"
        ]
        campaign = Campaign.objects.create(
            slug="bench-review",
            name="Bench review",
            testset=testset,
            rubric=rubric,
            mode="both",
            overlap=2,
            status="reviewing",
        )
        campaign.contenders.set(contenders)
        tasks = list(Task.objects.filter(testset=testset).order_by("position"))
        body = (
            "Sorry about the trouble!\n\n1. Clear your browser cache.\n2. Use the *new* password.\n"
            "3. If it still fails, reply here and we reset the account.\n\n```\nSettings > Security\n```"
        )
        Generation.objects.bulk_create(
            [
                Generation(
                    campaign=campaign,
                    task=t,
                    contender=c,
                    sample_index=0,
                    status="done",
                    output=f"{body}\n\n(variant {c.name[-1]}-{t.position})",
                )
                for t in tasks
                for c in contenders
            ],
            batch_size=5000,
        )
        rng = random.Random(1)
        ReviewItem.objects.bulk_create(
            [
                ReviewItem(
                    campaign=campaign,
                    task=t,
                    sample_index=0,
                    overlap=2,
                    ready=True,
                    state="open",
                    shuffle_key=rng.randrange(2**31 - 1),
                )
                for t in tasks
            ],
            batch_size=5000,
        )
        item_by_task = dict(
            ReviewItem.objects.filter(campaign=campaign).values_list("task_id", "pk")
        )
        ItemOutput.objects.bulk_create(
            [
                ItemOutput(item_id=item_by_task[task_id], generation_id=gid)
                for gid, task_id in Generation.objects.filter(campaign=campaign).values_list(
                    "pk", "task_id"
                )
            ],
            batch_size=5000,
        )
    users = []
    for n in range(reviewers):
        user, _ = user_create_or_update(
            username=f"bench-rev-{n:02d}", roles=["reviewer"], password=PASSWORD
        )
        users.append((user.username, ApiToken.issue(user, label="bench")))
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(
        f"built {items} ready items and {reviewers} reviewers in {time.perf_counter() - t0:.1f}s",
        flush=True,
    )
    return campaign.slug, users


def site_env(database_url: str, redis_url: str) -> dict:
    """The environment the site runs in for a benchmark: production settings, this database,
    sessions and cache in `redis_url` ('' for none), a throwaway data directory."""
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "DEBUG": "0",
        "SECURE_COOKIES": "0",
        "EVALSITE_DATA_DIR": tempfile.mkdtemp(prefix="bench-review-"),
        "LOG_LEVEL": "WARNING",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "REDIS_URL": redis_url,
        "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "evalsite.settings"),
    }


def setup_django(env: dict, root: Path = ROOT) -> None:
    """Django in this process, with the code in `root` (the bench/ of this checkout may build
    the database of another checkout, run with that checkout's Python)."""
    os.environ.update(env)
    sys.path.insert(0, str(root))
    import django

    django.setup()


def start_server(
    env: dict, workers: int, threads: int, app: str, *, root: Path = ROOT, port: int | None = None
) -> subprocess.Popen:
    """gunicorn serving the code in `root`, with that checkout's own venv and from that
    directory (the editable install maps the packages to it), on `port` (default PORT)."""
    # gunicorn.conf.py in the project root holds the production settings (the connection cap
    # per process follows the thread count); only the port, the counts and the logs differ.
    port = port or PORT
    proc = subprocess.Popen(
        [
            str(root / ".venv/bin/gunicorn"),
            app,
            "-b",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
        ],
        cwd=root,
        env={**env, "WEB_WORKERS": str(workers), "WEB_THREADS": str(threads), "WEB_ACCESS_LOG": ""},
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz?quick", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit("gunicorn did not start")


def login(client: httpx.Client, username: str) -> None:
    page = client.get("/login/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    response = client.post(
        "/login/",
        data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": csrf},
        headers={"Referer": str(page.url)},
    )
    assert response.status_code == 302, response.status_code


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def run_ceiling(concurrency: int, duration: float) -> tuple[float, list[float]]:
    stop = time.monotonic() + duration
    counts, lat = [0] * concurrency, []
    lock = threading.Lock()

    def work(i):
        with httpx.Client(base_url=f"http://127.0.0.1:{PORT}", timeout=10) as client:
            mine = []
            while time.monotonic() < stop:
                t = time.perf_counter()
                assert client.get("/healthz?quick").status_code == 200
                mine.append(time.perf_counter() - t)
                counts[i] += 1
            with lock:
                lat.extend(mine)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(concurrency)]
    cpu_before = cpu_snapshot()
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rate = sum(counts) / (time.perf_counter() - t0)
    # Summed over the ceiling runs (one before and one after the saturation run).
    for name, seconds in cpu_used(cpu_before, cpu_snapshot()).items():
        CEILING_CPU[name] = CEILING_CPU.get(name, 0) + seconds
    CEILING_CPU["requests"] = CEILING_CPU.get("requests", 0) + sum(counts)
    return rate, lat


REVIEW_TABLES = ("reviews_assignment", "reviews_review", "reviews_score", "reviews_reviewitem")


def analyzer(database_url: str, every: float, stop: threading.Event) -> threading.Thread:
    """ANALYZE the review tables every `every` seconds while the runs go on, as autovacuum's
    analyze does on a default PostgreSQL (this machine's runs with autovacuum off). Without
    it the planner keeps the statistics of the empty tables the build left, and plans the
    settle's join as a sequential scan of every score."""

    def run():
        with psycopg.connect(database_url, autocommit=True) as conn:
            while not stop.wait(every):
                for name in REVIEW_TABLES:
                    conn.execute(f"ANALYZE {name}")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def cpu_snapshot() -> dict[str, float]:
    """CPU seconds used so far, by who used them: the site (gunicorn), PostgreSQL, Redis, this
    benchmark's HTTP clients, everything else; and the machine's idle time."""
    ticks = os.sysconf("SC_CLK_TCK")
    used = {"gunicorn (Django)": 0, "PostgreSQL": 0, "Redis": 0, "HTTP clients (this bench)": 0}
    used["other"] = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            comm, fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)
        except OSError:
            continue
        fields, comm = fields.split(), comm.split("(", 1)[1]
        if int(entry) == os.getpid():
            group = "HTTP clients (this bench)"
        elif SERVER_SID[0] and int(fields[3]) == SERVER_SID[0]:
            group = "gunicorn (Django)"
        elif comm.startswith("postgres"):
            group = "PostgreSQL"
        elif comm.startswith("redis"):
            group = "Redis"
        else:
            group = "other"
        # Its own CPU, and that of its children that ended and were reaped: PostgreSQL's
        # backends end when a connection reaches CONN_MAX_AGE, and their CPU would vanish.
        used[group] += sum(int(value) for value in fields[11:15])
    cpu = open("/proc/stat").readline().split()
    used["interrupts (kernel)"] = int(cpu[6]) + int(cpu[7])  # irq + softirq, all CPUs
    used["idle"] = int(cpu[4]) + int(cpu[5])  # idle + iowait, all CPUs
    return {k: v / ticks for k, v in used.items()}


def connections_per_worker() -> list[int]:
    """Established client connections each gunicorn process holds now (from /proc), most
    first: a kept-alive connection stays with the process that accepted it."""
    established = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == PORT and fields[3] == "01":
                established.add(f"socket:[{fields[9]}]")
    counts = []
    for entry in os.listdir("/proc"):
        try:
            if (
                not entry.isdigit()
                or int(open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[3])
                != SERVER_SID[0]
            ):
                continue
            fds = [os.readlink(f"/proc/{entry}/fd/{fd}") for fd in os.listdir(f"/proc/{entry}/fd")]
        except OSError:
            continue
        counts.append(sum(fd in established for fd in fds))
    # The master holds only the listening socket.
    return sorted((n for n in counts if n), reverse=True)


def cpu_used(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before[k] for k in before}


CEILING_CPU: dict[str, float] = {}  # the ceiling run's CPU use, for comparison
SERVER_SID = [0]  # gunicorn's session id (it runs in a session of its own)
RETRY_LOCK = threading.Lock()


def use_server(port: int, server: subprocess.Popen) -> None:
    """Send the runs that follow to the server on `port`, and count its processes' CPU as the
    site's (bench/review_ab.py switches between two servers)."""
    global PORT
    PORT = port
    SERVER_SID[0] = server.pid


def send(client: httpx.Client, method: str, url: str, retried: list, **kwargs) -> httpx.Response:
    """One request; resent once if the server closed a kept-alive connection under it (as
    browsers do). Every step may be resent: a claim returns the lease already held, a page is
    a GET, a submit carries its idempotency key."""
    try:
        return client.request(method, url, **kwargs)
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
        with RETRY_LOCK:
            retried[0] += 1
        return client.request(method, url, **kwargs)


def log_in_all(users: list[tuple[str, str]]) -> dict[str, httpx.Cookies]:
    """Each reviewer's session cookies, logged in once (password hashing is slow on purpose);
    every run of reviewers then opens fresh connections with them."""
    cookies: dict[str, httpx.Cookies] = {}

    def one(username: str) -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{PORT}", timeout=30) as client:
            login(client, username)
            cookies[username] = client.cookies

    threads = [threading.Thread(target=one, args=(u,)) for u, _ in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if len(cookies) != len(users):
        raise SystemExit(f"only {len(cookies)} of {len(users)} reviewers could log in")
    return cookies


def run_reviews(
    slug: str,
    users: list[tuple[str, str]],
    cookies: dict[str, httpx.Cookies],
    duration: float,
    rate: float | None = None,
) -> dict:
    """Every reviewer loops claim -> page -> submit: back to back (rate None: the most the
    site can do), or starting one review every len(users) / rate seconds (a steady offered
    load of `rate` reviews/s, each reviewer at a random phase), to read latency at that load."""
    steps = {"claim": [], "load page": [], "submit": []}
    timeline: list[tuple[float, float]] = []  # (when a step ended, its latency), all steps
    done, errors, statuses, retried = [0] * len(users), [], {}, [0]
    lock = threading.Lock()
    start = threading.Barrier(len(users) + 1)
    go = threading.Event()
    stop_at = [0.0]

    def work(i):
        username, token = users[i]
        rng = random.Random(i)
        mine, ends = {k: [] for k in steps}, []

        def record(step: str, t: float) -> None:
            latency = time.perf_counter() - t
            mine[step].append(latency)
            ends.append((time.monotonic(), latency))

        try:
            with httpx.Client(
                base_url=f"http://127.0.0.1:{PORT}", timeout=30, cookies=cookies[username]
            ) as client:
                api = {"Authorization": f"Bearer {token}"}
                start.wait()  # every reviewer is ready
                go.wait()
                period = len(users) / rate if rate else 0.0
                next_start = time.monotonic() + rng.uniform(0, period)
                while time.monotonic() < stop_at[0]:
                    if period:
                        # Never catch up in a burst: a late review starts now, the next on time.
                        time.sleep(max(0.0, next_start - time.monotonic()))
                        next_start = max(next_start + period, time.monotonic())
                        if time.monotonic() >= stop_at[0]:
                            break
                    t = time.perf_counter()
                    r = send(client, "POST", f"/api/v1/campaigns/{slug}/next", retried, headers=api)
                    record("claim", t)
                    if r.status_code == 204:
                        break
                    assert r.status_code == 200, (r.status_code, r.text[:200])
                    body = r.json()
                    t = time.perf_counter()
                    page = send(client, "GET", f"/review/{slug}/{body['token']}/", retried)
                    record("load page", t)
                    assert page.status_code == 200 and "review-form" in page.text, page.status_code
                    labels = [c["label"] for c in body["candidates"]]
                    payload = {
                        "scores": {
                            lab: {d["key"]: rng.randint(3, 5) for d in body["rubric"]}
                            for lab in labels
                        },
                        "preference": rng.choice([*labels, "tie"]),
                        "comment": "",
                        "key": f"{username}-{body['token']}",
                    }
                    t = time.perf_counter()
                    r = send(client, "POST", body["submit_url"], retried, json=payload, headers=api)
                    record("submit", t)
                    with lock:
                        statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
                    if r.status_code == 201:
                        done[i] += 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))
            start.abort()  # a reviewer that cannot start must not leave the others waiting
        with lock:
            for k, v in mine.items():
                steps[k].extend(v)
            timeline.extend(ends)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(users))]
    for t in threads:
        t.start()
    try:
        start.wait()
    except threading.BrokenBarrierError:
        go.set()
        for t in threads:
            t.join()
        raise SystemExit(f"reviewers could not start: {errors[:3]}") from None
    stop_at[0] = time.monotonic() + duration
    cpu_before = cpu_snapshot()
    t0 = time.perf_counter()
    go.set()
    # Halfway through, how the reviewers' connections are spread over the workers.
    spread: list[int] = []
    timer = threading.Timer(duration / 2, lambda: spread.extend(connections_per_worker()))
    timer.start()
    for t in threads:
        t.join()
    timer.cancel()
    elapsed = time.perf_counter() - t0
    cpu = cpu_used(cpu_before, cpu_snapshot())
    # p95 per 5 s of the run: a tail made of stalls shows as a few bad windows, a tail made
    # of uneven queueing as every window alike.
    start_mono = stop_at[0] - duration
    windows: dict[int, list[float]] = {}
    for ended, latency in timeline:
        windows.setdefault(int((ended - start_mono) // 5), []).append(latency)
    return {
        "steps": steps,
        "windows": [pct(windows[w], 95) for w in sorted(windows)],
        "completed": sum(done),
        "elapsed": elapsed,
        "errors": errors,
        "statuses": statuses,
        "retried": retried[0],
        "cpu": cpu,
        "spread": spread,
    }


def statements_reset(database_url: str) -> bool:
    """Start pg_stat_statements' counts afresh; False (and why) when PostgreSQL lacks it."""
    try:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            conn.execute("SELECT pg_stat_statements_reset()")
        return True
    except psycopg.Error as exc:
        print(f"--statements: no figures ({str(exc).strip()})", file=sys.stderr)
        return False


def statements_top(database_url: str, n: int) -> list[tuple]:
    """This database's `n` statements with the most time since the reset, per call."""
    with psycopg.connect(database_url) as conn:
        return conn.execute(
            "SELECT calls, total_exec_time / calls, shared_blks_hit / calls, wal_bytes / calls, "
            r"left(regexp_replace(query, '\s+', ' ', 'g'), 80) FROM pg_stat_statements "
            "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "ORDER BY total_exec_time DESC LIMIT %s",
            [n],
        ).fetchall()


def merge_runs(runs: list[dict]) -> dict:
    """The rounds of one saturation run as one run (the connection spread: the first's)."""
    return {
        "steps": {k: [v for r in runs for v in r["steps"][k]] for k in runs[0]["steps"]},
        "windows": [w for r in runs for w in r["windows"]],
        "completed": sum(r["completed"] for r in runs),
        "elapsed": sum(r["elapsed"] for r in runs),
        "errors": [e for r in runs for e in r["errors"]],
        "statuses": {
            code: sum(r["statuses"].get(code, 0) for r in runs)
            for code in {c for r in runs for c in r["statuses"]}
        },
        "retried": sum(r["retried"] for r in runs),
        "cpu": {k: sum(r["cpu"][k] for r in runs) for k in runs[0]["cpu"]},
        "spread": runs[0]["spread"],
    }


def invariants(database_url: str) -> tuple[list[str], int]:
    """The double-assignment invariants that fail on this database, and how many items are
    fully reviewed (plain SQL on tables every version of the code has)."""
    checks = {
        "items with more live assignments than k": """
            SELECT count(*) FROM reviews_reviewitem i WHERE (SELECT count(*) FROM reviews_assignment a
            WHERE a.item_id = i.id AND a.state IN ('active','submitted')) > i.overlap""",
        "items whose live_count differs from their live rows": """
            SELECT count(*) FROM reviews_reviewitem i WHERE i.live_count <> (SELECT count(*)
            FROM reviews_assignment a WHERE a.item_id = i.id AND a.state IN ('active','submitted'))""",
        "items whose submitted_count differs from their reviews": """
            SELECT count(*) FROM reviews_reviewitem i WHERE i.submitted_count <> (SELECT count(*)
            FROM reviews_review r WHERE r.item_id = i.id)""",
        "items with a reviewer twice": """
            SELECT count(*) FROM (SELECT item_id, reviewer_id FROM reviews_assignment
            GROUP BY 1, 2 HAVING count(*) > 1) d""",
        "items with more reviews than k": """
            SELECT count(*) FROM reviews_reviewitem i WHERE (SELECT count(*) FROM reviews_review r
            WHERE r.item_id = i.id) > i.overlap""",
        "fully reviewed items left unsettled": """
            SELECT count(*) FROM reviews_reviewitem WHERE submitted_count = overlap AND state = 'open'""",
    }
    problems = []
    with psycopg.connect(database_url) as conn:
        for name, sql in checks.items():
            n = conn.execute(sql).fetchone()[0]
            if n:
                problems.append(f"{n} {name}")
        full = conn.execute(
            "SELECT count(*) FROM reviews_reviewitem WHERE submitted_count = overlap"
        ).fetchone()[0]
    return problems, full


def make_parser(description: str | None = __doc__) -> argparse.ArgumentParser:
    """This benchmark's options (bench/review_ab.py takes the same ones, and a few more)."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/evalsite_bench_review"
        ),
    )
    parser.add_argument("--items", type=int, default=10000)
    parser.add_argument("--reviewers", type=int, default=32)
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="the saturation run is cut into this many rounds, with a ceiling window before, "
        "between and after them",
    )
    parser.add_argument(
        "--ceiling-duration", type=float, default=6, help="seconds of each ceiling window"
    )
    # As gunicorn.conf.py runs the site (Dockerfile, docker-compose.yml).
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument(
        "--app",
        default="evalsite.wsgi",
        help="the WSGI module gunicorn serves; bench.wsgi_page_without_template serves the site "
        "with the review page's template rendering left out (an experiment: how much of a "
        "review the template costs)",
    )
    parser.add_argument(
        "--paced-rate",
        type=float,
        default=32,
        help="then a second run at this steady offered load (reviews/s over all reviewers) "
        "for latency at that load; 0 to skip",
    )
    parser.add_argument("--paced-duration", type=float, default=60)
    parser.add_argument(
        "--analyze-every",
        type=float,
        default=20,
        help="seconds between ANALYZEs of the review tables during the runs, standing in for "
        "autovacuum (off on this machine's PostgreSQL); 0 for never",
    )
    parser.add_argument(
        "--statements",
        type=int,
        default=0,
        help="print the N statements PostgreSQL spent most time on during the saturation run "
        "(pg_stat_statements, which PostgreSQL must load: shared_preload_libraries)",
    )
    parser.add_argument(
        "--redis-url",
        default="redis://127.0.0.1:6379/14",
        help="the site's cache and session store, as in production ('' for none)",
    )
    return parser


def main() -> None:
    args = make_parser().parse_args()

    recreate_database(args.database_url)
    env = site_env(args.database_url, args.redis_url)
    setup_django(env)
    slug, users = build(args.items, args.reviewers)

    server = start_server(env, args.workers, args.threads, args.app)
    use_server(PORT, server)
    stop_analyzer = threading.Event()
    if args.analyze_every:
        analyzer(args.database_url, args.analyze_every, stop_analyzer)
    try:
        cookies = log_in_all(users)
        # The machine's speed drifts (a virtual machine's neighbours: by a third within a
        # minute here). So the saturation run is cut into rounds, each between two ceiling
        # windows, and each round is compared with the mean of the windows on its two sides.
        ceilings, ceiling_lat = [], []
        rounds: list[dict] = []
        counting = args.statements and statements_reset(args.database_url)
        for n in range(args.rounds + 1):
            rate, lat = run_ceiling(args.reviewers, args.ceiling_duration)
            ceilings.append(rate)
            ceiling_lat += lat
            if n < args.rounds:
                rounds.append(run_reviews(slug, users, cookies, args.duration / args.rounds))
        result = merge_runs(rounds)
        top = statements_top(args.database_url, args.statements) if counting else []
        paced = (
            run_reviews(slug, users, cookies, args.paced_duration, args.paced_rate)
            if args.paced_rate
            else None
        )
    finally:
        stop_analyzer.set()
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)

    problems, full = invariants(args.database_url)
    for run in filter(None, (result, paced)):
        if not all(run["steps"].values()):
            raise SystemExit(f"no requests completed: {run['errors'][:3]}")
    steps = result["steps"]
    requests = sum(len(v) for v in steps.values())
    rps = result["completed"] / result["elapsed"]
    req_rate = requests / result["elapsed"]
    # Each round against the ceiling around it; overall, every round's requests against the
    # ceiling each met, weighted by the round's length.
    brackets = [(a + b) / 2 for a, b in zip(ceilings, ceilings[1:], strict=False)]
    ratios = [
        sum(len(v) for v in r["steps"].values()) / r["elapsed"] / c
        for r, c in zip(rounds, brackets, strict=True)
    ]
    ceiling_rps = (
        sum(c * r["elapsed"] for r, c in zip(rounds, brackets, strict=True)) / result["elapsed"]
    )
    print()
    print(
        f"machine: {os.cpu_count()} CPUs; gunicorn {args.workers} workers x {args.threads} threads (gthread, "
        f"at most {os.environ.get('WEB_CONNECTIONS') or 2 * args.threads} connections per "
        "worker: gunicorn.conf.py); "
        f"{args.reviewers} concurrent reviewers; {args.items} ready items, k=2; PostgreSQL "
        f"{psycopg.connect(args.database_url).info.server_version}; sessions "
        f"{'in Redis + PostgreSQL' if args.redis_url else 'in PostgreSQL'}"
    )
    print()
    print(f"## Saturation: every reviewer back to back, {args.duration:.0f} s")
    print()
    print_steps(steps, ceiling_lat)
    print()
    print(
        "p95 of all steps per 5 s of the rounds (ms): "
        + " ".join(f"{w * 1000:.0f}" for w in result["windows"])
    )
    print(
        "reviewers' connections per gunicorn worker, halfway: "
        + " ".join(str(n) for n in result["spread"])
    )
    print(
        f"completed reviews: {result['completed']} in {result['elapsed']:.1f}s = {rps:.1f} reviews/s "
        f"({req_rate:.0f} HTTP requests/s over the three steps)"
    )
    print(
        f"trivial view ceiling (/healthz, same concurrency): {ceiling_rps:.0f} requests/s "
        f"(windows of {args.ceiling_duration:g} s before, between and after the "
        f"{args.rounds} rounds: {' '.join(f'{c:.0f}' for c in ceilings)})"
    )
    print(
        f"review requests vs ceiling: {req_rate / ceiling_rps:.0%} "
        f"(per round, against the windows on its two sides: "
        f"{' '.join(f'{r:.0%}' for r in ratios)}; median {statistics.median(ratios):.0%}); "
        f"reviews/s vs ceiling/3 (three requests per review): {3 * rps / ceiling_rps:.0%}"
    )
    print()
    print(
        "CPU per completed review during this run (ms; the machine has "
        f"{os.cpu_count() * 1000 / rps:.1f} ms of CPU per review at this rate):"
    )
    print(
        "   "
        + "; ".join(
            f"{name} {seconds / result['completed'] * 1000:.1f}"
            for name, seconds in result["cpu"].items()
        )
    )
    per_request = {k: v for k, v in CEILING_CPU.items() if k != "requests"}
    print(
        "CPU per /healthz request in the ceiling run (ms): "
        + "; ".join(
            f"{name} {seconds / CEILING_CPU['requests'] * 1000:.2f}"
            for name, seconds in per_request.items()
        )
    )
    # The clients share this machine, and a healthz request's client costs nearly as much as
    # its server, so the ratio above flatters the server: without the clients, it is this.
    server = ("gunicorn (Django)", "PostgreSQL", "Redis")
    review_ms = sum(result["cpu"][k] for k in server) / result["completed"] * 1000
    healthz_ms = sum(CEILING_CPU[k] for k in server) / CEILING_CPU["requests"] * 1000
    print(
        f"server side alone (gunicorn, PostgreSQL, Redis): {review_ms:.1f} ms per review, "
        f"{healthz_ms:.2f} ms per /healthz request, so a review costs "
        f"{review_ms / healthz_ms:.1f} /healthz requests; with the clients on another machine, "
        f"review requests would reach about {3 * healthz_ms / review_ms:.0%} of the ceiling"
    )
    if top:
        print()
        print("PostgreSQL per statement during the saturation run (pg_stat_statements, per call):")
        print()
        print("| calls | ms | buffers | WAL bytes | statement |")
        print("|---:|---:|---:|---:|---|")
        for calls, ms, buffers, wal, query in top:
            print(f"| {calls} | {ms:.3f} | {buffers} | {wal:.0f} | `{query}` |")
    if paced:
        print()
        print(
            f"## Steady load: {args.paced_rate:g} reviews/s offered ({args.reviewers} reviewers, each "
            f"starting a review every {args.reviewers / args.paced_rate:.2f} s), {args.paced_duration:.0f} s"
        )
        print()
        print_steps(paced["steps"])
        print()
        print(
            f"completed reviews: {paced['completed']} in {paced['elapsed']:.1f}s = "
            f"{paced['completed'] / paced['elapsed']:.1f} reviews/s"
        )
    runs = [r for r in (result, paced) if r]
    statuses = {}
    for run in runs:
        for code, n in run["statuses"].items():
            statuses[code] = statuses.get(code, 0) + n
    errors = [e for run in runs for e in run["errors"]]
    print()
    print(
        f"submit statuses: {dict(sorted(statuses.items()))}; client errors: {len(errors)}; "
        f"requests resent after a dropped keep-alive connection: {sum(r['retried'] for r in runs)}"
    )
    for e in errors[:5]:
        print("   ", e)
    print(f"items fully reviewed (k=2): {full}")
    print(f"invariant violations: {len(problems)}" + (f" -> {problems}" if problems else ""))
    if problems or errors:
        sys.exit(1)


def print_steps(steps: dict, ceiling_lat: list[float] | None = None) -> None:
    print("| step | n | p50 ms | p95 ms |")
    print("|---|---:|---:|---:|")
    for name, values in steps.items():
        print(
            f"| {name} | {len(values)} | {statistics.median(values) * 1000:.1f} | {pct(values, 95) * 1000:.1f} |"
        )
    if ceiling_lat:
        print(
            f"| /healthz (ceiling run) | {len(ceiling_lat)} | {statistics.median(ceiling_lat) * 1000:.1f} | "
            f"{pct(ceiling_lat, 95) * 1000:.1f} |"
        )


if __name__ == "__main__":
    main()
