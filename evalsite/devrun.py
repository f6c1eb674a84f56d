"""`./dev run`'s process supervisor: start each line of a Procfile (`name: command`), write
their output with the time and the process's name, and stop them cleanly on Ctrl-C.

It replaces honcho, which on Ctrl-C sent SIGTERM to each process's whole process group (the
Celery worker's pool children then died under it, and it logged each as an error) and
SIGKILLed whatever had not exited after a fixed 5 s (a Celery warm shutdown on a busy laptop
takes longer), logging that too. Here each program's own process gets SIGTERM, the graceful
stop of gunicorn and of Celery, and has DEV_STOP_SECONDS (default 30) to exit; a second
Ctrl-C, or that time running out, kills what is left. A process that exits by itself stops the
others, and its exit code is the supervisor's (as with honcho; 1 if it was 0).

    python -m evalsite.devrun Procfile.dev
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime
from typing import TextIO

STOP_SECONDS = 30.0
LEFTOVER_SECONDS = 3.0
ASSIGNMENT = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*")


def procfile_read(path: str) -> list[tuple[str, str]]:
    """[(name, command)] of a Procfile, in its order; blank lines and comments skipped."""
    entries = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            line = line.strip()
            if line and not line.startswith("#"):
                name, _, command = line.partition(":")
                entries.append((name.strip(), command.strip()))
    return entries


class Supervisor:
    def __init__(self, entries: list[tuple[str, str]], *, out: TextIO, stop_seconds: float):
        self.entries = [(f"{name}.1", command) for name, command in entries]
        self.out = out
        self.stop_seconds = stop_seconds
        self.width = max(len(label) for label, _ in self.entries + [("system", "")])
        self.procs: dict[str, subprocess.Popen] = {}
        self.lock = threading.RLock()  # the signal handler logs too, in the main thread
        self.stop_asked: float | None = None  # monotonic time of the stop request
        self.kill_now = False
        self.code: int | None = None  # the exit code of the first process that ended by itself

    def log(self, label: str, text: str) -> None:
        with self.lock:
            stamp = datetime.now().strftime("%H:%M:%S")
            self.out.write(f"{stamp} {label:<{self.width}} | {text}\n")
            self.out.flush()

    def start(self) -> None:
        for label, command in self.entries:
            # Its own session: the terminal's Ctrl-C reaches the supervisor only, which then
            # stops each program in order (exec: the program is the process signalled).
            proc = subprocess.Popen(
                ["/bin/sh", "-c", exec_line(command)],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                text=True,
                errors="replace",
            )
            self.procs[label] = proc
            threading.Thread(target=self._copy, args=(label, proc), daemon=True).start()
            self.log("system", f"{label} started (pid={proc.pid})")

    def _copy(self, label: str, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            self.log(label, line.rstrip("\n"))

    def ask_stop(self, why: str) -> None:
        if self.stop_asked is not None:
            if why.startswith("SIGINT"):
                self.kill_now = True  # a second Ctrl-C: no more waiting
            return
        self.stop_asked = time.monotonic()
        self.log("system", f"{why}: stopping (up to {self.stop_seconds:g} s)")
        for label, proc in self.procs.items():
            if proc.poll() is None:
                self.log("system", f"sending SIGTERM to {label} (pid {proc.pid})")
                _signal(proc.pid, signal.SIGTERM)

    def run(self) -> int:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda n, _f: self.ask_stop(f"{signal.Signals(n).name} received"))
        self.start()
        reported: set[str] = set()
        while len(reported) < len(self.procs):
            for label, proc in self.procs.items():
                if label in reported or proc.poll() is None:
                    continue
                reported.add(label)
                self.log("system", f"{label} stopped (rc={proc.returncode})")
                if self.stop_asked is None:
                    rc = proc.returncode
                    self.code = 128 - rc if rc < 0 else rc or 1  # killed by a signal: 128 + n
                    self.ask_stop(f"{label} exited")
            late = self.stop_asked is not None and (
                self.kill_now or time.monotonic() - self.stop_asked > self.stop_seconds
            )
            if late:
                for label, proc in self.procs.items():
                    if proc.poll() is None:
                        self.log("system", f"{label} still running: killing it (SIGKILL)")
                        _signal(proc.pid, signal.SIGKILL, group=True)
                self.kill_now = False
                self.stop_asked = time.monotonic()
            time.sleep(0.05)
        self._reap_leftovers()
        return self.code or 0

    def _reap_leftovers(self) -> None:
        """A program that exited leaving children behind (in its session): killed, and said."""
        deadline = time.monotonic() + LEFTOVER_SECONDS  # children still exiting get a moment
        for label, proc in self.procs.items():
            while _group_alive(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _group_alive(proc.pid):
                self.log("system", f"{label} left processes behind: killing them (SIGKILL)")
                _signal(proc.pid, signal.SIGKILL, group=True)


def exec_line(command: str) -> str:
    """The command with `exec` after its leading assignments (`A=1 exec prog ...`), so the
    program replaces the shell and is the process that gets the signals."""
    assignments = ASSIGNMENT.match(command).group(0)
    return f"{assignments}exec {command[len(assignments) :]}"


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _signal(pid: int, signum: int, *, group: bool = False) -> None:
    try:
        (os.killpg if group else os.kill)(pid, signum)
    except ProcessLookupError:
        pass


def main(argv: list[str]) -> int:
    path = argv[1] if len(argv) > 1 else "Procfile.dev"
    stop_seconds = float(os.environ.get("DEV_STOP_SECONDS") or STOP_SECONDS)
    return Supervisor(procfile_read(path), out=sys.stdout, stop_seconds=stop_seconds).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
