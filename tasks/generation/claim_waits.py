"""Per-process wake-ups for generation claims waiting on a contender's slot (tasks/generation/run.py,
`_claim`): which threads of a worker process may wait, and when a waiting one tries again.
"""

from __future__ import annotations

import threading

# Threads of one process that may wait for the same contender at once: enough to cover the
# moments a finished thread spends outside its slot (review items, ack, next message); more
# would park threads that another contender's jobs could use. The others re-queue as before.
CLAIM_WAITERS = 2
# A waiting thread runs nothing else, so in a worker process at most one task thread in this
# many waits at a claim at once, whatever the contender: a single-thread process (a prefork
# child, the solo pool) never waits, else one slow contender's queue holds up every other
# contender's jobs; a threads pool keeps most threads free (10 threads: 2 may wait; 4-7: 1).
CLAIM_THREADS_PER_WAITER = 4


class _SlotReleases:
    """Per-process wake-ups for threads waiting on a contender's slot (a hint only).

    The claim UPDATE alone decides who gets a slot; this only tells a waiting thread of this
    process when to try again. A per-contender release count read before each claim closes
    the lost-wake-up gap (a slot freed between a failed claim and the wait).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[int, int] = {}
        self._waiting: dict[int, int] = {}
        self._freed: dict[int, threading.Condition] = {}
        # Task threads of this worker process (set at worker start); None outside a worker:
        # the caller's own threads, only the per-contender cap.
        self.threads: int | None = None

    def count(self, contender_id: int) -> int:
        with self._lock:
            return self._counts.get(contender_id, 0)

    def released(self, contender_id: int) -> None:
        with self._lock:
            self._counts[contender_id] = self._counts.get(contender_id, 0) + 1
            freed = self._freed.get(contender_id)
            if freed is not None:
                freed.notify()  # one slot: one waiter

    def wait(self, contender_id: int, seen: int, timeout: float) -> bool:
        """Wait until a release or the timeout; False (at once) if CLAIM_WAITERS already wait
        for this contender, or this process's share of waiting threads is taken."""
        with self._lock:
            if self._counts.get(contender_id, 0) != seen:
                return True  # released since the failed claim: try again now
            if self._waiting.get(contender_id, 0) >= CLAIM_WAITERS:
                return False
            if (
                self.threads is not None
                and sum(self._waiting.values()) >= self.threads // CLAIM_THREADS_PER_WAITER
            ):
                return False
            freed = self._freed.setdefault(contender_id, threading.Condition(self._lock))
            self._waiting[contender_id] = self._waiting.get(contender_id, 0) + 1
            try:
                freed.wait(timeout)
            finally:
                self._waiting[contender_id] -= 1
            return True


slot_releases = _SlotReleases()


def claim_waiters_configure(*, threads: int) -> None:
    """Tell this process how many task threads its worker runs (see CLAIM_THREADS_PER_WAITER)."""
    slot_releases.threads = threads
