"""gunicorn settings for the web process (read from the working directory: the Docker image,
docker-compose.yml and bench/review_load.py all run gunicorn from the project root).

Command-line flags still win over these; set the process and thread counts with WEB_WORKERS and
WEB_THREADS rather than -w / --threads, so the connection cap follows the thread count
(WEB_CONNECTIONS sets the cap itself).
"""

import os


def _number(name: str, default: int) -> int:
    """An integer setting from the environment; unset or empty means the default."""
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


bind = os.environ.get("WEB_BIND", "0.0.0.0:8000")
# Django is CPU-bound between database round trips: about two processes per core, each with a
# few threads to overlap the round trips.
workers = _number("WEB_WORKERS", 4)
worker_class = "gthread"
threads = _number("WEB_THREADS", 4)
# A kept-alive connection stays with the process that accepted it. Without a cap, one process
# can end up serving three times as many clients as another, and their requests queue behind
# its threads while other processes sit idle: with 32 reviewers on 4 x 4 threads, the review
# loop's p95 at saturation was 260-320 ms uncapped and 206-212 ms with this cap, at the same
# throughput (docs/benchmarks-history.md, "Fifth pass"). A process at its cap leaves new connections
# in the listen queue for a process with room; idle browser connections close after
# `keepalive` seconds, so a cap of two connections per thread does not starve visitors. With
# many more browsers working at the same moment than workers x cap, raise WEB_CONNECTIONS.
worker_connections = _number("WEB_CONNECTIONS", 2 * threads)
keepalive = 2
# "-" logs each request to stdout; an empty WEB_ACCESS_LOG logs none (benchmarks).
accesslog = os.environ.get("WEB_ACCESS_LOG", "-") or None
