"""Outages named on the pages (docs/operations.md, "Outages"): the banner admins and leads see
while the database, the cache or the broker does not answer, from the probe /healthz runs.

A probe of a dependency that is down waits up to about a second for it, so no page runs it: a
page reads the last result, and a stale one (older than OUTAGE_PROBE_SECONDS) starts one probe
in a background thread of this process, whose answer the next pages show. A page is never
slower for an outage, and the banner appears within a few seconds of one (and goes within a
few seconds of its end). Kept in the process, not in the cache: the cache may be what is down.
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.db import connections
from django.http import HttpRequest

from evalsite import health
from evalsite.roles import ADMIN, LEAD, roles_of

log = logging.getLogger(__name__)

# What each dependency's absence means for the people reading the page.
CONSEQUENCES = {
    "database": "the database is not answering: pages and the API may fail until it is back",
    "cache": (
        "Redis (the cache) is not answering: pages work from the database, more slowly, "
        "and sessions are kept there"
    ),
    "broker": (
        "the task broker (Redis) is not answering: nothing new reaches the workers. Generation "
        "and monitor runs already queued wait, and are sent once it is back"
    ),
}


class OutageProbe:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._down: list[str] = []
        self._checked = float("-inf")  # monotonic time of the last probe's answer
        self._probing = False

    def down(self) -> list[str]:
        """The dependencies the last probe found down (in CONSEQUENCES' order); starts a new
        probe in the background when that answer is stale."""
        with self._lock:
            stale = time.monotonic() - self._checked >= settings.OUTAGE_PROBE_SECONDS
            if stale and not self._probing:
                self._probing = True
                threading.Thread(target=self._probe, name="outage-probe", daemon=True).start()
            return list(self._down)

    def probe(self) -> list[str]:
        """Ask every dependency now (about a second each at most), remember and return."""
        _, checks = health.health()
        down = [name for name in CONSEQUENCES if not checks.get(name, {}).get("ok", True)]
        with self._lock:
            if down != self._down:
                log.warning("outage banner: %s", ", ".join(down) or "every dependency answers")
            self._down, self._checked = down, time.monotonic()
        return down

    def _probe(self) -> None:
        try:
            self.probe()
        finally:
            with self._lock:
                self._probing = False
            connections.close_all()  # this thread's own connection, opened by the probe

    def forget(self) -> None:
        """Drop the last answer (tests): the next page starts a probe."""
        with self._lock:
            self._down, self._checked = [], float("-inf")


outage_probe = OutageProbe()


def outage_context(request: HttpRequest) -> dict:
    """Template context: `outages`, what is down and what it means, for admins and leads (the
    people who can act on it, or tell those who can); nobody else is shown it."""
    user = getattr(request, "user", None)
    if user is None or not roles_of(user) & {ADMIN, LEAD}:
        return {}
    return {"outages": [CONSEQUENCES[name] for name in outage_probe.down()]}
