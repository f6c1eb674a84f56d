"""docker-compose.yml cannot be started here (no Docker engine); check what it promises."""

import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.services import ROOT


def load():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_it_defines_the_production_services():
    services = load()["services"]
    assert set(services) == {"postgres", "redis", "web", "worker", "beat"}
    assert (
        "healthcheck" in services["postgres"]
        and "pgdata:/var/lib/postgresql/data" in services["postgres"]["volumes"]
    )
    redis_cmd = " ".join(services["redis"]["command"])
    assert "--appendonly yes" in redis_cmd and "--maxmemory-policy noeviction" in redis_cmd


def test_it_runs_migrations_then_gunicorn_and_configures_by_environment():
    services = load()["services"]
    web_cmd = " ".join(services["web"]["command"])
    assert web_cmd.index("migrate") < web_cmd.index("gunicorn")
    for name in ("web", "worker", "beat"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://") and env["REDIS_URL"].startswith(
            "redis://"
        )
        assert env["DEBUG"] == "0"
    assert "worker" in services["worker"]["command"] and "beat" in services["beat"]["command"]


def gunicorn_settings(**env) -> dict:
    """What gunicorn makes of gunicorn.conf.py, run as the image runs it (from the root)."""
    out = subprocess.run(
        [str(Path(sys.executable).parent / "gunicorn"), "--print-config", "evalsite.wsgi"],
        cwd=ROOT,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("WEB_")}, **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    pairs = (line.split(" = ", 1) for line in out.splitlines() if " = " in line)
    return {key.strip(): value.strip() for key, value in pairs}


def test_the_web_server_settings_live_in_gunicorn_conf():
    image = (ROOT / "Dockerfile").read_text()
    assert "gunicorn.conf.py" in image and 'CMD ["gunicorn", "evalsite.wsgi"]' in image
    settings = gunicorn_settings()
    assert settings["bind"] == "['0.0.0.0:8000']" and settings["worker_class"] == "gthread"
    assert (settings["workers"], settings["threads"]) == ("4", "4")
    # A kept-alive connection stays with its process: the cap keeps the clients spread.
    assert settings["worker_connections"] == "8"


def test_gunicorn_counts_come_from_the_environment_and_the_cap_follows_the_threads():
    settings = gunicorn_settings(WEB_WORKERS="3", WEB_THREADS="6", WEB_ACCESS_LOG="")
    assert (settings["workers"], settings["threads"]) == ("3", "6")
    assert settings["worker_connections"] == "12" and settings["accesslog"] == "None"
    assert gunicorn_settings(WEB_CONNECTIONS="50")["worker_connections"] == "50"
    assert gunicorn_settings(WEB_CONNECTIONS="", WEB_THREADS=" ")["worker_connections"] == "8"


def test_it_passes_the_webhook_secret_and_checks_the_deployment_before_serving():
    services = load()["services"]
    for name in ("web", "worker", "beat"):
        assert "MONITOR_WEBHOOK_SECRET" in services[name]["environment"]
    web_cmd = " ".join(services["web"]["command"])
    assert web_cmd.index("migrate") < web_cmd.index("check --deploy") < web_cmd.index("gunicorn")
