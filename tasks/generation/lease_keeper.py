"""The heartbeat of a worker process's generation claims (docs/operations.md, "Leases").

A claimed row holds a short lease (GENERATION_LEASE_SECONDS, tens of seconds) and its slot of
the contender's concurrency limit while the lease is live. While the call runs (a streamed
answer, a single call waiting for its first token, a tool loop), one thread per worker
process renews the leases of every claim the process holds, in one UPDATE every third of a
lease. A worker that dies stops renewing, so its rows' leases lapse within one lease and their
slots free themselves; the lapsed-lease sweep (tasks/generation/reconcile.py) queues the rows
again. (A tool loop learns that its row is no longer its own from the save after each step:
tasks/generation/conversation.py, LoopAbandoned.)

Only worker processes run the thread (evalsite/celery.py enables it where the jobs run). In
any other process (the CLI, tests calling the services directly) a claim is not tracked, and
a tool loop renews its lease with each step it saves (tasks/generation/run.py, `_progress_save`).
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, close_old_connections
from django.utils import timezone

from tasks.models import Generation

log = logging.getLogger(__name__)


class LeaseKeeper:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: set[str] = set()  # claim tokens this process holds
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.enabled = False

    @property
    def interval(self) -> float:
        return max(settings.GENERATION_LEASE_SECONDS / 3, 0.5)

    def hold(self, token: str) -> bool:
        """Renew this claim's lease until `release`; False when no thread renews here."""
        if not self.enabled:
            return False
        with self._lock:
            self._held.add(token)
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(
                    target=self._run, name="generation-lease-keeper", daemon=True
                )
                self._thread.start()
        return True

    def release(self, token: str) -> None:
        with self._lock:
            self._held.discard(token)

    def renew(self) -> int:
        """One renewal of every held claim; returns how many rows it extended."""
        with self._lock:
            tokens = list(self._held)
        if not tokens:
            return 0
        # A claim whose call is still in flight keeps its slot whatever its status (a
        # cancelled row's call holds it until it ends), so every held token is extended.
        until = timezone.now() + timedelta(seconds=settings.GENERATION_LEASE_SECONDS)
        return Generation.objects.filter(claim_token__in=tokens).update(lease_expires_at=until)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            # As around a request: a connection broken by a database outage is replaced.
            close_old_connections()
            try:
                self.renew()
            except DatabaseError as exc:
                # The leases lapse if this lasts: the rows are then queued again, and a late
                # store still succeeds while nobody else claimed the row.
                log.warning("generation leases not renewed: %s", exc)

    def stop(self) -> None:
        self._stop.set()


lease_keeper = LeaseKeeper()


def lease_keeper_enable() -> None:
    """Called where generation jobs run (a worker process, a prefork child)."""
    lease_keeper.enabled = True
