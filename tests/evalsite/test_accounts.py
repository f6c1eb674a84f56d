import json

from django.core.management import call_command
from django.test import TestCase

from tests.factories import PASSWORD, personas


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
        assert "_auth_user_id" not in self.client.session

    def test_it_sends_a_strict_csp(self):
        response = self.client.get("/login/")
        csp = response.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp

    def test_it_redirects_anonymous_users_to_login(self):
        response = self.client.get("/")
        assert response.status_code == 302
        assert response.url.startswith("/login/")


class AddUserCommandTests(TestCase):
    def test_it_creates_a_user_and_prints_a_working_token(self):
        from io import StringIO

        out = StringIO()
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
        )
        token = out.getvalue().split("API token: ")[1].strip()
        response = self.client.get("/api/v1/schema")
        assert response.status_code == 200
        response = self.client.get("/api/v1/whoami", headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 200
        assert response.json() == {"username": "carol", "roles": ["arbiter", "reviewer"]}
        response = self.client.post("/login/", {"username": "carol", "password": "pw-xyz-123"})
        assert response.status_code == 302 and "_auth_user_id" in self.client.session

    def test_it_rejects_a_bad_token(self):
        response = self.client.get("/api/v1/whoami", headers={"Authorization": "Bearer es_wrong"})
        assert response.status_code == 401
        assert json.loads(response.content)["error"].startswith("authentication required")
