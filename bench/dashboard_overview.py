"""Benchmark: the dashboards' overview of the demo campaign, as a lead first opens it.

Loads the demo (`manage.py demo`) into a throwaway SQLite database (reports shared through the
file cache in its data directory, as `./dev run` has them), then times one GET of the overview
in a fresh process that has served one other page (the campaign list: the URLconf and views
imported, as in any web worker that is up), three ways:

- cold: no report cached for the campaign's state (computed in the request, as before);
- warmed: after the warm-up (`reports_warm`, what `manage.py demo` and the worker's beat job
  run when reviews change);
- and a second GET in the same process (the report cached, templates compiled).

    .venv/bin/python bench/dashboard_overview.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ONE_LOAD = """
import os, sys, time
sys.path.insert(0, {root!r})
import django
django.setup()
from django.contrib.auth import get_user_model
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()
client = Client()
client.force_login(get_user_model().objects.get(username="lead"))
# The worker has served a page before (its URLconf and views imported): the campaign list.
assert client.get("/campaigns/").status_code == 200
times = []
for _ in range(2):
    started = time.perf_counter()
    response = client.get("/campaigns/support-demo/dashboard/")
    assert response.status_code == 200, response.status_code
    times.append(time.perf_counter() - started)
print(times[0], times[1])
"""

PREPARE = """
import sys
sys.path.insert(0, {root!r})
import django
django.setup()
from django.core.cache import caches
from reviews.report.cache import reports_warm
caches["reports"].clear()
if {warm}:
    reports_warm()
"""


def run(code: str, env: dict) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["EVALSITE_DATA_DIR"] = tempfile.mkdtemp(prefix="evalsite-bench-")
    env["DJANGO_SETTINGS_MODULE"] = "evalsite.settings"
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True)
    subprocess.run([*manage, "demo"], env=env, check=True, capture_output=True)
    rows = {"cold": [], "warmed": [], "second": []}
    for _ in range(args.runs):
        for kind, warm in (("cold", False), ("warmed", True)):
            run(PREPARE.format(root=str(ROOT), warm=warm), env)
            first, second = map(float, run(ONE_LOAD.format(root=str(ROOT)), env).split())
            rows[kind].append(first)
            if warm:
                rows["second"].append(second)
    labels = {
        "cold": "first GET, report computed in it",
        "warmed": "first GET, report warmed ahead",
        "second": "second GET, same process",
    }
    for kind, values in rows.items():
        print(
            f"{labels[kind]:<34} median {statistics.median(values):.3f}s  best {min(values):.3f}s"
        )


if __name__ == "__main__":
    main()
