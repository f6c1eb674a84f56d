import json
import subprocess
import sys
import threading
from datetime import timedelta
from unittest import mock

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.db.models import F
from django.test import Client, TestCase, TransactionTestCase, override_settings
from django.test.utils import CaptureQueriesContext

from evalsite.models import PasswordCheckFailures
from evalsite.services import user_password_set
from tests.factories import PASSWORD, personas
from tests.services import ROOT, need, postgres_available, redis_available

User = get_user_model()
COOL_OFF = timedelta(hours=settings.AXES_COOLOFF_TIME)


class LoginTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def test_it_logs_in_and_out(self):
        response = self.client.post("/login/", {"username": "reviewer_a", "password": PASSWORD})
        assert response.status_code == 302
        assert self.client.session.get("_auth_user_id") == str(self.users["reviewer_a"].pk)
        response = self.client.post("/logout/")
        assert response.status_code == 302
        assert "_auth_user_id" not in self.client.session

    def test_it_rejects_a_wrong_password(self):
        response = self.client.post("/login/", {"username": "reviewer_a", "password": "nope"})
        assert response.status_code == 200
        assert b"didn't match" in response.content

    def test_it_locks_out_after_repeated_failures(self):
        for _ in range(5):
            self.client.post("/login/", {"username": "lead", "password": "wrong"})
        response = self.client.post("/login/", {"username": "lead", "password": PASSWORD})
        assert response.status_code == 429
        assert b"Too many failed logins" in response.content
        assert b'href="/login/"' in response.content  # a way back, for another account
        assert "_auth_user_id" not in self.client.session

    @override_settings(BEHIND_TLS_PROXY=True)
    def test_a_new_forged_forwarded_address_per_try_does_not_escape_the_lock(self):
        # The TLS-proxy setting alone (no trusted proxy count): anyone reaching gunicorn
        # directly sent a new X-Forwarded-For per try and was never locked (30 tries, 0 locks).
        login = {"username": "lead", "password": PASSWORD}
        statuses = [
            self.client.post(
                "/login/",
                {"username": "lead", "password": f"wrong-{i}"},
                HTTP_X_FORWARDED_FOR=f"198.51.100.{i + 1}",
            ).status_code
            for i in range(30)
        ]
        assert statuses[:4] == [200] * 4 and set(statuses[4:]) == {429}  # locked at the 5th
        forged = self.client.post("/login/", login, HTTP_X_FORWARDED_FOR="203.0.113.99")
        assert forged.status_code == 429 and "_auth_user_id" not in self.client.session

    @override_settings(TRUSTED_PROXY_COUNT=2)
    def test_behind_two_proxies_the_client_is_the_second_entry_from_the_right(self):
        # Each try forges a new leftmost entry; the two proxies' entries are what count.
        for i in range(6):
            forwarded = f"192.0.2.{i + 1}, 203.0.113.5, 10.0.0.2"
            self.client.post(
                "/login/", {"username": "lead", "password": "wrong"}, HTTP_X_FORWARDED_FOR=forwarded
            )
        login = {"username": "lead", "password": PASSWORD}
        again = "192.0.2.77, 203.0.113.5, 10.0.0.2"
        assert self.client.post("/login/", login, HTTP_X_FORWARDED_FOR=again).status_code == 429
        # fewer entries than proxies: the header did not come through them, not believed
        short = "203.0.113.8"  # REMOTE_ADDR (127.0.0.1) is not locked
        assert Client().post("/login/", login, HTTP_X_FORWARDED_FOR=short).status_code == 302

    @override_settings(BEHIND_TLS_PROXY=True, TRUSTED_PROXY_COUNT=1)
    def test_behind_the_proxy_the_lock_counts_the_forwarded_address(self):
        # Every request reaches the site from the proxy (REMOTE_ADDR 127.0.0.1 here).
        attacker = {"HTTP_X_FORWARDED_FOR": "203.0.113.5"}
        for _ in range(5):
            self.client.post("/login/", {"username": "lead", "password": "wrong"}, **attacker)
        login = {"username": "lead", "password": PASSWORD}
        # A forged entry in front of the proxy's own does not get the attacker out of the lock.
        spoofed = {"HTTP_X_FORWARDED_FOR": "198.51.100.7, 203.0.113.5"}
        assert self.client.post("/login/", login, **spoofed).status_code == 429
        # The lead, from their own address, still logs in.
        lead = Client()
        response = lead.post("/login/", login, HTTP_X_FORWARDED_FOR="198.51.100.7")
        assert response.status_code == 302

    def test_a_refused_request_is_logged_in_one_line(self):
        self.client.force_login(self.users["reviewer_a"])
        with self.assertLogs("django.request", "WARNING") as logs:
            assert self.client.get("/campaigns/").status_code == 403
        assert "Forbidden" in logs.output[0]
        assert logs.records[0].exc_info is None and "Traceback" not in "\n".join(logs.output)

    def test_it_sends_a_strict_csp(self):
        response = self.client.get("/login/")
        csp = response.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp

    def test_static_files_get_the_csp_and_frame_refusal_too(self):
        page = self.client.get("/login/")
        for path in ("/static/favicon.svg", "/static/js/site.js"):
            response = self.client.get(path)
            assert response.status_code == 200, path
            csp = response.headers["Content-Security-Policy"]
            assert csp == page.headers["Content-Security-Policy"], path
            assert response.headers["X-Frame-Options"] == "DENY", path
            assert response.headers["X-Content-Type-Options"] == "nosniff", path

    def test_it_redirects_anonymous_users_to_login(self):
        response = self.client.get("/")
        assert response.status_code == 302
        assert response.url.startswith("/login/")


def change_password(client: Client, old: str, new: str = "another-long-phrase-7", **extra):
    return client.post(
        "/account/password/",
        {"old_password": old, "new_password1": new, "new_password2": new},
        **extra,
    )


WRONG = "old password was entered incorrectly"
LOCKED = "Too many wrong passwords"


class PasswordChangeLockTests(TestCase):
    """The password change checks the current password outside axes: a stolen session could
    guess at it without limit. It locks after AXES_FAILURE_LIMIT (5) wrong ones."""

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def setUp(self):
        self.client.force_login(self.users["reviewer_a"])

    def guess_wrong(self, times: int, **extra) -> None:
        for _ in range(times):
            response = change_password(self.client, "wrong", **extra)
            assert WRONG in response.content.decode()

    def test_it_locks_after_repeated_wrong_passwords_and_then_checks_none(self):
        with self.assertLogs("evalsite.services", "WARNING") as logs:
            self.guess_wrong(5)
        assert "Locking the password change of reviewer_a" in logs.output[0]
        with mock.patch.object(User, "check_password") as check_password:
            response = change_password(self.client, PASSWORD)
        assert not check_password.called  # the right password is not even looked at
        html = response.content.decode()
        assert response.status_code == 200
        assert f"{LOCKED}: your password cannot be changed for 15 more minutes" in html
        assert WRONG not in html
        assert User.objects.get(pk=self.users["reviewer_a"].pk).check_password(PASSWORD)

    def test_the_lock_is_per_user_not_per_address(self):
        # A session is not tied to an address: guesses spread over addresses count together.
        for number in range(5):
            self.guess_wrong(1, REMOTE_ADDR=f"203.0.113.{number}")
        assert LOCKED in change_password(self.client, PASSWORD).content.decode()
        other = Client()
        other.force_login(self.users["reviewer_b"])
        assert change_password(other, PASSWORD).status_code == 302

    def test_the_lock_ends_with_the_cool_off(self):
        self.guess_wrong(5)
        failures = PasswordCheckFailures.objects.get(user=self.users["reviewer_a"])
        failures.last_failure_at -= timedelta(minutes=14)
        failures.save()
        assert "for 1 more minute." in change_password(self.client, PASSWORD).content.decode()
        failures.last_failure_at -= timedelta(minutes=1)
        failures.save()
        assert change_password(self.client, PASSWORD).status_code == 302

    def test_wrong_passwords_older_than_the_cool_off_are_forgotten(self):
        self.guess_wrong(4)
        PasswordCheckFailures.objects.update(last_failure_at=F("last_failure_at") - COOL_OFF)
        self.guess_wrong(4)  # not locked after eight
        assert change_password(self.client, PASSWORD).status_code == 302

    def test_a_successful_change_resets_the_count(self):
        self.guess_wrong(4)
        assert change_password(self.client, PASSWORD).status_code == 302
        assert not PasswordCheckFailures.objects.exists()
        self.guess_wrong(4)
        response = change_password(self.client, "another-long-phrase-7", "third-long-phrase-8")
        assert response.status_code == 302

    def test_an_admins_new_password_lifts_the_lock(self):
        # Locked out by guessing at a forgotten password, they ask an admin for a new one.
        self.guess_wrong(5)
        password = user_password_set(user=self.users["reviewer_a"], by="admin")
        self.client.force_login(User.objects.get(pk=self.users["reviewer_a"].pk))
        assert change_password(self.client, password).status_code == 302


@pytest.mark.postgres
class PasswordChangeLockRaceTests(TransactionTestCase):
    """Real PostgreSQL, real threads, each with its own connection and session."""

    # The real hasher (tests use MD5): its slow check is the window a racing guess would use.
    @override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.PBKDF2PasswordHasher"])
    def test_guesses_sent_all_at_once_get_no_more_checks_than_the_limit(self):
        need(postgres_available(), "needs PostgreSQL: set DATABASE_URL=postgres://...")
        user = User.objects.create_user("victim", password=PASSWORD)
        guesses = 12
        barrier = threading.Barrier(guesses)
        answers, errors = [], []

        def guess(number):
            try:
                client = Client()
                client.force_login(user)
                barrier.wait()
                answers.append(change_password(client, f"guess-{number}").content.decode())
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
            finally:
                connection.close()

        checked = []
        check_password = User.check_password

        def counted(user, raw):
            checked.append(raw)  # list.append is atomic
            return check_password(user, raw)

        threads = [threading.Thread(target=guess, args=(n,)) for n in range(guesses)]
        with mock.patch.object(User, "check_password", counted):
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
        assert errors == []
        assert len(checked) == settings.AXES_FAILURE_LIMIT
        assert sum(WRONG in a for a in answers) == settings.AXES_FAILURE_LIMIT
        assert sum(LOCKED in a for a in answers) == guesses - settings.AXES_FAILURE_LIMIT


class AddUserCommandTests(TestCase):
    def test_it_creates_a_user_and_prints_a_working_token(self):
        from io import StringIO

        out, err = StringIO(), StringIO()
        call_command(
            "add_user",
            "carol",
            "--role",
            "reviewer",
            "--role",
            "arbiter",
            "--password",
            "pw-xyz-123",
            stdout=out,
            stderr=err,
        )
        # stdout is the token alone, for TOKEN=$(manage.py add_user ...); the rest on stderr
        assert len(out.getvalue().splitlines()) == 1
        token = out.getvalue().strip()
        assert "user carol roles=arbiter,reviewer" in err.getvalue()
        response = self.client.get("/api/v1/schema")
        assert response.status_code == 200
        response = self.client.get("/api/v1/whoami", headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 200
        assert response.json() == {"username": "carol", "roles": ["arbiter", "reviewer"]}
        response = self.client.post("/login/", {"username": "carol", "password": "pw-xyz-123"})
        assert response.status_code == 302 and "_auth_user_id" in self.client.session

    def test_the_command_checks_a_user_as_the_api_does(self):
        from io import StringIO

        from django.core.management import CommandError

        for args, problem in (
            (["", "--role", "reviewer"], "username: required"),
            (["bad name!", "--role", "reviewer"], "username: Enter a valid username"),
            (
                ["frank", "--role", "reviewer", "--password", "1"],
                "password: This password is too short",
            ),
        ):
            with self.assertRaisesMessage(CommandError, problem):
                call_command("add_user", *args, stdout=StringIO(), stderr=StringIO())
        # adding a role to an existing user names every role they now hold
        err = StringIO()
        call_command("add_user", "frank", "--role", "reviewer", stdout=StringIO(), stderr=err)
        call_command("add_user", "frank", "--role", "arbiter", stdout=StringIO(), stderr=err)
        assert "user frank roles=arbiter,reviewer" in err.getvalue().splitlines()[-1]

    def test_an_admin_creates_a_user_over_the_api(self):
        from evalsite.models import ApiToken

        admin = personas()["admin"]
        auth = {"Authorization": f"Bearer {ApiToken.issue(admin)}"}
        body = {"username": "dora", "roles": ["reviewer"], "password": "long-enough-pw-9"}
        response = self.client.post("/api/v1/users", body, "application/json", headers=auth)
        assert response.status_code == 201, response.content
        created = response.json()
        assert created["username"] == "dora" and created["roles"] == ["reviewer"]
        whoami = self.client.get(
            "/api/v1/whoami", headers={"Authorization": f"Bearer {created['token']}"}
        )
        assert whoami.json() == {"username": "dora", "roles": ["reviewer"]}
        # an existing name: 409, and no token for someone else's account
        again = self.client.post("/api/v1/users", body, "application/json", headers=auth)
        assert again.status_code == 409 and "token" not in again.json()
        bad = self.client.post(
            "/api/v1/users",
            {"username": "x y!", "roles": ["boss"], "password": "123"},
            "application/json",
            headers=auth,
        )
        assert bad.status_code == 400
        fields = [e.split(":")[0] for e in bad.json()["errors"]]
        assert "username" in fields and "roles" in fields and "password" in fields
        reviewer = {"Authorization": f"Bearer {created['token']}"}
        refused = self.client.post(
            "/api/v1/users",
            {"username": "eve", "roles": ["admin"]},
            "application/json",
            headers=reviewer,
        )
        assert refused.status_code == 403

    def test_every_answer_under_the_api_is_json(self):
        for method, path, status in (
            ("get", "/api/v1/nonexistent", 404),
            ("get", "/api/v1/campaigns/demo/", 404),  # a trailing slash is another path
            ("post", "/api/v1/schema", 405),
        ):
            response = getattr(self.client, method)(path)
            assert response.status_code == status, path
            assert response.headers["Content-Type"] == "application/json", path
            assert response.json()["error"], path
        paths = self.client.get("/api/v1/schema").json()["paths"]
        assert paths and not [p for p in paths if "*" in p]  # the catch-all is not an endpoint
        # every operation documents the guard's answers, and retry-failed its real 202
        operations = [op for methods in paths.values() for op in methods.values()]
        assert all({"401", "403"} <= set(op["responses"]) for op in operations)
        assert "202" in paths["/api/v1/campaigns/{slug}/retry-failed"]["post"]["responses"]

    def test_it_rejects_a_bad_token(self):
        response = self.client.get("/api/v1/whoami", headers={"Authorization": "Bearer es_wrong"})
        assert response.status_code == 401
        assert json.loads(response.content)["error"].startswith("authentication required")


class SessionStoreTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def test_with_redis_pages_read_the_session_from_the_cache_and_logout_ends_it_everywhere(self):

        need(redis_available(), "needs Redis: set REDIS_URL=redis://127.0.0.1:6379/0")
        assert settings.SESSION_ENGINE == "django.contrib.sessions.backends.cached_db"
        self.client.post("/login/", {"username": "reviewer_a", "password": PASSWORD})
        with CaptureQueriesContext(connection) as queries:
            assert self.client.get("/review/").status_code == 200
        assert not [q for q in queries.captured_queries if "django_session" in q["sql"]]
        # Another process, same cookie: the session is shared, and a logout ends it there too.
        other = Client()
        other.cookies["sessionid"] = self.client.cookies["sessionid"].value
        assert other.get("/review/").status_code == 200
        self.client.post("/logout/")
        response = other.get("/review/")
        assert response.status_code == 302 and response.url.startswith("/login/")


def test_without_redis_sessions_live_in_the_database_alone():
    # A per-process cache would keep a logged-out session alive in the other web processes.
    out = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; print(settings.SESSION_ENGINE)"],
        cwd=ROOT,
        env={
            "PATH": "/usr/bin:/bin",
            "DJANGO_SETTINGS_MODULE": "evalsite.settings",
            "REDIS_URL": "",
            "DEBUG": "1",
        },
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "django.contrib.sessions.backends.db"
