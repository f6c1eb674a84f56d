import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from evalsite.settings import database_from_url, env_bool, env_int
from tests.services import ROOT


def test_it_reads_a_postgres_database_url():
    db = database_from_url("postgres://app:p%40ss@db.internal:5433/evalsite?sslmode=require")
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert (db["USER"], db["PASSWORD"], db["HOST"], db["PORT"], db["NAME"]) == (
        "app",
        "p@ss",
        "db.internal",
        "5433",
        "evalsite",
    )
    # Prepared statements by default (the review loop's queries are planned once per
    # connection); both settings can be changed in the URL.
    assert db["OPTIONS"] == {
        "sslmode": "require",
        "server_side_binding": True,
        "prepare_threshold": 5,
    }
    assert db["CONN_MAX_AGE"] > 0


def test_it_lets_the_url_turn_prepared_statements_off_and_refuses_bad_values():
    db = database_from_url("postgres://db/app?server_side_binding=off&prepare_threshold=0")
    assert db["OPTIONS"] == {"server_side_binding": False, "prepare_threshold": 0}
    with pytest.raises(ImproperlyConfigured, match="server_side_binding"):
        database_from_url("postgres://db/app?server_side_binding=maybe")
    with pytest.raises(ImproperlyConfigured, match="prepare_threshold"):
        database_from_url("postgres://db/app?prepare_threshold=soon")


def test_it_rejects_an_unsupported_database_url():
    with pytest.raises(ImproperlyConfigured, match="postgres://"):
        database_from_url("mysql://x@y/z")


def test_it_fails_loudly_on_bad_boolean_and_integer_values(monkeypatch):
    monkeypatch.setenv("SOME_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="SOME_FLAG"):
        env_bool("SOME_FLAG")
    monkeypatch.setenv("SOME_INT", "12x")
    with pytest.raises(ImproperlyConfigured, match="SOME_INT"):
        env_int("SOME_INT", 1)


def test_it_passes_the_deployment_checks_with_production_variables(tmp_path):
    env = {
        **os.environ,
        "DEBUG": "0",
        "SECRET_KEY": "x" * 20 + "a-long-random-production-secret-key-123456",
        "ALLOWED_HOSTS": "evalsite.example.com",
        "SECURE_SSL_REDIRECT": "1",
        "EVALSITE_DATA_DIR": str(tmp_path),
    }
    env.pop("SECURE_COOKIES", None)
    env.pop("SECURE_HSTS_SECONDS", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_the_default_hosts_are_the_local_ones_and_not_the_test_clients(tmp_path):
    # outside the test runner (which adds "testserver" itself) a request for that host is a 400
    script = (
        "import django; django.setup(); from django.test import Client; c = Client(); "
        "print([c.get('/api/v1/schema', headers={'host': h}).status_code "
        "for h in ('testserver', 'localhost', '127.0.0.1:8000', '[::1]')])"
    )
    env = {**os.environ, "EVALSITE_DATA_DIR": str(tmp_path), "DEBUG": "0"}
    env.pop("ALLOWED_HOSTS", None)
    env["DJANGO_SETTINGS_MODULE"] = "evalsite.settings"
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.stdout.strip() == "[400, 200, 200, 200]", result.stdout + result.stderr


def test_it_reads_the_review_import_limit_from_the_environment(tmp_path):
    # The 413 and the import's error name REVIEWS_IMPORT_MAX_BYTES: it must be settable.
    env = {
        **os.environ,
        "EVALSITE_DATA_DIR": str(tmp_path),
        "REVIEWS_IMPORT_MAX_BYTES": "1234",
    }
    code = "import django; django.setup(); from reviews.records import max_import_bytes; print(max_import_bytes())"
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "evalsite.settings"},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1234"
