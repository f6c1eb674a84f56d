"""Ctrl-C on `./dev run` (evalsite/devrun.py): the web server and the Celery worker, started
from Procfile.dev as `./dev run` starts them, both stop by themselves, cleanly, in time: no
SIGKILL, no error in the log, nothing left running. (honcho SIGKILLed the worker after a
fixed 5 s, and its pool children, sent SIGTERM directly, were each logged as an error.)"""

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from tests.services import ROOT

VENV = Path(sys.executable).parent.parent
WAIT_STOP = 45  # DEV_STOP_SECONDS (30) and some


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def supervisor(procfile: Path | str, env: dict, log: Path) -> subprocess.Popen:
    """`./dev run`'s last step, in a session of its own: as in a terminal, the Ctrl-C goes to
    the supervisor alone."""
    return subprocess.Popen(
        [sys.executable, "-m", "evalsite.devrun", str(procfile)],
        cwd=ROOT,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_for(log: Path, *patterns: str, seconds: float = 90) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if all(re.search(p, text) for p in patterns):
            return text
        time.sleep(0.2)
    raise AssertionError(f"never saw {patterns}:\n{log.read_text(errors='replace')[-3000:]}")


def stopped_within(proc: subprocess.Popen, seconds: float) -> tuple[int, float]:
    start = time.monotonic()
    try:
        return proc.wait(seconds), time.monotonic() - start
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError(f"still running {seconds} s after Ctrl-C") from None


def dev_env(tmp_path: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "CI")}
    return env | {
        "EVALSITE_DATA_DIR": str(tmp_path),
        "VENV": str(VENV),
        "PORT": str(free_port()),
        "SECURE_COOKIES": "0",
        "SECURE_HSTS_SECONDS": "0",
        **extra,
    }


def ctrl_c_run(tmp_path: Path, env: dict) -> str:
    # `./dev run` migrates first (the worker's beat runs monitor ticks against the database).
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v0"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=240,
    )
    log = tmp_path / "devrun.log"
    proc = supervisor(ROOT / "Procfile.dev", env, log)
    try:
        wait_for(log, r"Listening at: http://127\.0\.0\.1", r"celery@\S+ ready\.")
        health = urllib.request.urlopen(f"http://127.0.0.1:{env['PORT']}/healthz?quick", timeout=10)
        assert health.status == 200
        pids = [int(p) for p in re.findall(r"started \(pid=(\d+)\)", log.read_text())]
        assert len(pids) == 2
        os.kill(proc.pid, signal.SIGINT)  # Ctrl-C
        code, seconds = stopped_within(proc, WAIT_STOP)
        print(f"web and worker stopped {seconds:.1f} s after Ctrl-C")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = log.read_text(errors="replace")
    assert code == 0, text[-3000:]
    assert "web.1 stopped (rc=0)" in text and "worker.1 stopped (rc=0)" in text, text[-3000:]
    assert "worker: Warm shutdown" in text
    for bad in ("SIGKILL", "ERROR", "Traceback", "exited with 'signal", "left processes"):
        assert bad not in text, (bad, text[-3000:])
    for pid in pids:  # nothing of theirs still runs
        with pytest.raises(ProcessLookupError):
            os.killpg(pid, 0)
    return text


@pytest.mark.timeout(420)
def test_ctrl_c_stops_the_web_server_and_the_worker_cleanly(tmp_path):
    # What `./dev run` ends with, after its migrate and demo load.
    assert 'exec "$VENV/bin/python" -m evalsite.devrun Procfile.dev' in (ROOT / "dev").read_text()
    ctrl_c_run(tmp_path, dev_env(tmp_path))


@pytest.mark.redis
@pytest.mark.timeout(420)
def test_ctrl_c_stops_them_cleanly_on_redis_too(tmp_path):
    text = ctrl_c_run(tmp_path, dev_env(tmp_path, REDIS_URL=settings.REDIS_URL))
    assert "transport:   redis://" in text


def test_a_process_that_exits_stops_the_others_with_its_code(tmp_path):
    procfile = tmp_path / "Procfile"
    procfile.write_text("slow: sleep 30\nquick: sh -c 'echo bye; exit 3'\n")
    log = tmp_path / "log"
    proc = supervisor(procfile, dict(os.environ), log)
    code, seconds = stopped_within(proc, 20)
    text = log.read_text()
    assert code == 3 and seconds < 10, text
    assert re.search(r"quick\.1 +\| bye", text), text
    assert "quick.1 stopped (rc=3)" in text and "quick.1 exited: stopping" in text
    assert "slow.1 stopped (rc=-15)" in text


def test_what_ignores_sigterm_is_killed_once_the_wait_is_over_or_at_a_second_ctrl_c(tmp_path):
    procfile = tmp_path / "Procfile"
    stubborn = "stubborn: sh -c \"trap '' TERM; echo up; while true; do sleep 0.1; done\"\n"
    procfile.write_text(stubborn)
    for extra, signals, within in (({"DEV_STOP_SECONDS": "1"}, 1, 10), ({}, 2, 10)):
        log = tmp_path / "log"
        proc = supervisor(procfile, dict(os.environ) | extra, log)
        wait_for(log, r"stubborn\.1 +\| up", seconds=20)
        for _ in range(signals):
            os.kill(proc.pid, signal.SIGINT)
            time.sleep(0.3)
        code, seconds = stopped_within(proc, within)
        text = log.read_text()
        assert code == 0, text
        assert "stubborn.1 still running: killing it (SIGKILL)" in text, text
        assert "stubborn.1 stopped (rc=-9)" in text
