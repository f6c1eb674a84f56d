"""The heartbeat of a worker process's claims (docs/operations.md, "Leases").

A claimed row holds a short lease (GENERATION_LEASE_SECONDS, tens of seconds) and its slot of
the concurrency limit while the lease is live: a Generation, and any row claimed the same way
(a `claim_token` and a `lease_expires_at`: a judgement, whose service passes its model to
`hold`). While the call runs (a streamed answer, a single call waiting for its first token, a
tool loop), one thread per worker process renews the leases of every claim the process holds,
every third of a lease, in one UPDATE per model. A worker that dies stops renewing, so its
rows' leases lapse within one lease and their slots free themselves; the lapsed-lease sweeps
(tasks/generation/reconcile.py, and the judgements' reconciler) queue the rows again. (A tool
loop learns that its row is no longer its own from the save after each step:
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
from django.db.models import Model
from django.utils import timezone

from tasks.models import Generation

log = logging.getLogger(__name__)


class LeaseKeeper:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, type[Model]] = {}  # claim tokens this process holds: their model
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.enabled = False

    @property
    def interval(self) -> float:
        return max(settings.GENERATION_LEASE_SECONDS / 3, 0.5)

    def hold(self, token: str, model: type[Model] = Generation) -> bool:
        """Renew the lease of `model`'s row claimed under `token` until `release`; False when
        no thread renews here."""
        if not self.enabled:
            return False
        with self._lock:
            self._held[token] = model
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(target=self._run, name="lease-keeper", daemon=True)
                self._thread.start()
        return True

    def release(self, token: str) -> None:
        with self._lock:
            self._held.pop(token, None)

    def renew(self) -> int:
        """One renewal of every held claim (one UPDATE per model); returns how many rows it
        extended."""
        by_model: dict[type[Model], list[str]] = {}
        with self._lock:
            for token, model in self._held.items():
                by_model.setdefault(model, []).append(token)
        # A claim whose call is still in flight keeps its slot whatever its status (a
        # cancelled row's call holds it until it ends), so every held token is extended.
        until = timezone.now() + timedelta(seconds=settings.GENERATION_LEASE_SECONDS)
        return sum(
            model._default_manager.filter(claim_token__in=tokens).update(lease_expires_at=until)
            for model, tokens in by_model.items()
        )

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            # As around a request: a connection broken by a database outage is replaced.
            close_old_connections()
            try:
                self.renew()
            except DatabaseError as exc:
                # The leases lapse if this lasts: the rows are then queued again, and a late
                # store still succeeds while nobody else claimed the row.
                log.warning("leases not renewed: %s", exc)

    def stop(self) -> None:
        self._stop.set()


lease_keeper = LeaseKeeper()


def lease_keeper_enable() -> None:
    """Called where generation and judging jobs run (a worker process, a prefork child)."""
    lease_keeper.enabled = True
