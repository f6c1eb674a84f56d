"""Benchmark: time from a fault to generation at full rate again (docs/benchmarks.md, "Recovery").

Three faults, each on a steadily running campaign (one contender, `max_concurrency` 4, a local
endpoint answering after 1 s: 4 generations per second at full rate), with a threads worker and
a separate beat process as the compose file runs them:

- `kill`: the worker is SIGKILLed (main process and threads, as the OOM killer would) and a
  new one started at once, as `restart: unless-stopped` does;
- `postgres`: PostgreSQL is stopped (`pg_ctl stop -m immediate`, a crash) for 30 s;
- `redis`: Redis (append-only file, as in compose) is shut down for 60 s.

Both services are PRIVATE instances this script starts on other ports (PostgreSQL 55xx in a
temporary directory, Redis 63xx), never the shared ones. Full rate is the rate measured over
the 15 s before the fault; recovered is the first moment from which the last 5 s ran at 90%
of it. Reported: seconds from the fault's start, and from the service's return.

    .venv/bin/python bench/recovery.py [--faults kill,postgres,redis] [--code DIR]

`--code DIR` runs the worker and beat from another checkout (the code before, say
`git archive 5dcbfca | tar -x -C /tmp/before`); the database is migrated by this checkout
(extra columns are harmless to older code) and the campaign made here.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG_PORT, REDIS_PORT = 5544, 6391
LATENCY, LIMIT = 1.0, 4
BASELINE, WINDOW, SHARE = 15.0, 5.0, 0.9


def run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=True, capture_output=True, text=True, **kwargs)


class PrivatePostgres:
    """A PostgreSQL cluster of our own in a temporary directory, owned by the postgres user."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.dir = Path(tempfile.mkdtemp(prefix="recovery-pg-"))
        shutil.chown(self.dir, "postgres", "postgres")
        self.data = self.dir / "data"
        self.as_postgres("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres")
        self.start()

    def as_postgres(self, *args: str) -> None:
        run("runuser", "-u", "postgres", "--", *args)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1"
        self.as_postgres(
            "pg_ctl",
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.dir / "log"),
            "-w",
            "start",
        )

    def stop(self, mode: str = "immediate") -> None:
        self.as_postgres("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def destroy(self) -> None:
        try:
            self.stop("fast")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


class PrivateRedis:
    def __init__(self, port: int) -> None:
        self.port = port
        self.dir = Path(tempfile.mkdtemp(prefix="recovery-redis-"))
        self.start()

    def start(self) -> None:
        run(
            "redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
            "--appendonly", "yes", "--save", "", "--daemonize", "yes",
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if subprocess.run(["redis-cli", "-p", str(self.port), "ping"], capture_output=True,
                              text=True).stdout.strip() == "PONG":  # fmt: skip
                return
            time.sleep(0.2)
        raise SystemExit("private Redis did not start")

    def stop(self) -> None:
        subprocess.run(["redis-cli", "-p", str(self.port), "shutdown"], capture_output=True)

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--faults", default="kill,postgres,redis")
    parser.add_argument("--code", default=str(ROOT), help="checkout the worker and beat run")
    parser.add_argument("--limit", type=float, default=600, help="give up after this many s")
    args = parser.parse_args()
    pg, redis = PrivatePostgres(PG_PORT), PrivateRedis(REDIS_PORT)
    try:
        run("runuser", "-u", "postgres", "--", "createdb", "-h", "127.0.0.1", "-p", str(PG_PORT),
            "recovery")  # fmt: skip
        os.environ.update(
            DATABASE_URL=f"postgres://postgres@127.0.0.1:{PG_PORT}/recovery",
            REDIS_URL=f"redis://127.0.0.1:{REDIS_PORT}/0",
            EVALSITE_DATA_DIR=tempfile.mkdtemp(prefix="recovery-data-"),
            DJANGO_SETTINGS_MODULE="evalsite.settings",
            LOG_LEVEL="WARNING",
        )
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        for fault in args.faults.split(","):
            figures = scenario(fault, pg, redis, Path(args.code), args.limit)
            print(fault, figures, flush=True)
    finally:
        redis.destroy()
        pg.destroy()


def start(code: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "GENERATION_READ_TIMEOUT": "10", "PYTHONPATH": str(code)}
    log = open(Path(os.environ["EVALSITE_DATA_DIR"]) / f"{args[0]}-{time.time_ns()}.log", "w")
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "evalsite", *args],
        cwd=code, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip


def worker(code: Path) -> subprocess.Popen:
    return start(code, "worker", "--pool", "threads", "--concurrency", "8", "--loglevel",
                 "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat")  # fmt: skip


def beat(code: Path) -> subprocess.Popen:
    schedule = Path(os.environ["EVALSITE_DATA_DIR"]) / f"beat-{time.time_ns()}"
    return start(code, "beat", "--loglevel", "WARNING", "--schedule", str(schedule))


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def campaign_make(fake, rows: int):
    from tasks.campaigns.definition import campaign_create
    from tasks.models import Task, TestSet

    name = f"recovery-{time.time_ns()}"
    ts = TestSet.objects.create(name=name, checksum="0" * 64, task_count=rows)
    Task.objects.bulk_create(
        Task(testset=ts, position=i, external_id=f"R-{i}", prompt=f"Question {i}?")
        for i in range(rows)
    )
    campaign, _ = campaign_create(
        definition={
            "slug": name,
            "testset": name,
            "mode": "both",
            "rubric": [{"key": "accuracy"}],
            "contenders": [
                {"name": f"{name}-c", "provider": "openai", "base_url": fake.base_url,
                 "model": "m-endpoint", "max_concurrency": LIMIT},
                {"name": f"{name}-i", "provider": "imported"},
            ],
        }
    )  # fmt: skip
    return campaign


def finished_times(campaign) -> list[float]:
    """When each row of the campaign was stored (epoch seconds); waits out a database outage."""
    from django.db import DatabaseError, connection

    from tasks.models import Generation

    while True:
        try:
            stamps = Generation.objects.filter(campaign=campaign, status="done").values_list(
                "finished_at", flat=True
            )
            return sorted(t.timestamp() for t in stamps)
        except DatabaseError:
            connection.close()
            time.sleep(1)


def rate(times: list[float], start: float, end: float) -> float:
    return sum(start <= t < end for t in times) / (end - start)


def scenario(fault: str, pg, redis, code: Path, limit: float) -> dict:
    from evalsite.celery import app
    from tasks.generation.services import generation_cancel, generation_enqueue
    from tests.fake_llm import FakeLLM

    fake = FakeLLM(latency=LATENCY)
    fake.rewrite("m-endpoint", lambda answer: answer.replace("m-endpoint answers", "The answer"))
    rows = int(LIMIT / LATENCY * (BASELINE + 30 + limit + 30))
    campaign = campaign_make(fake, rows)
    app.control.purge()
    procs = {"beat": beat(code), "worker": worker(code)}
    generation_enqueue(campaign=campaign)
    while not finished_times(campaign):  # the worker is up and storing
        time.sleep(0.5)
    time.sleep(BASELINE + 5)  # warmed up, then the baseline window
    fault_at = time.time()
    full = rate(finished_times(campaign), fault_at - BASELINE, fault_at)
    if fault == "kill":
        stop(procs["worker"], signal.SIGKILL)
        procs["worker"] = worker(code)
        back_at = time.time()
    elif fault == "postgres":
        pg.stop("immediate")
        time.sleep(30)
        pg.start()
        back_at = time.time()
    else:
        redis.stop()
        time.sleep(60)
        redis.start()
        back_at = time.time()
    recovered = None
    while time.time() - fault_at < limit and recovered is None:
        time.sleep(2)
        times = finished_times(campaign)
        for t in range(int(back_at) + int(WINDOW), int(time.time()) + 1):
            if rate(times, t - WINDOW, t) >= SHARE * full:
                recovered = t
                break
    for proc in procs.values():
        stop(proc)
    try:
        generation_cancel(campaign=campaign)
    finally:
        fake.close()
    app.control.purge()
    done = finished_times(campaign)
    return {
        "full_rate_per_s": round(full, 2),
        "from_fault_s": round(recovered - fault_at, 1) if recovered else f">{limit:.0f}",
        "from_service_back_s": round(recovered - back_at, 1) if recovered else None,
        "stalled_s": round(_longest_gap(done, fault_at), 1),
    }


def _longest_gap(times: list[float], after: float) -> float:
    """The longest time without a stored row after the fault (0 rows/s)."""
    later = [after] + [t for t in times if t >= after]
    return max((b - a for a, b in zip(later, later[1:], strict=False)), default=0.0)


if __name__ == "__main__":
    main()
