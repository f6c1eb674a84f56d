"""docker-compose.yml cannot be started here (no Docker engine); check what it promises."""

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
