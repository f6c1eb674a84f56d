"""`manage.py demo` (run by `./dev run` on every start) loads its accounts once: it restored the
published password and removed roles on every start, and added an API token per demo user."""

from io import StringIO

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import TestCase

from evalsite.models import ApiToken
from evalsite.roles import roles_of


class DemoRestartTests(TestCase):
    def test_a_restart_keeps_a_changed_password_changed_roles_and_the_token_count(self):
        first = StringIO()
        call_command("demo", stdout=first)
        assert "admin-demo-pass" in first.getvalue()  # the logins, the first time
        User = get_user_model()
        admin, lead = User.objects.get(username="admin"), User.objects.get(username="lead")
        assert admin.check_password("admin-demo-pass")
        assert ApiToken.objects.count() == 0  # the demo needs no token: it makes none
        admin.set_password("a phrase of my own 42")
        admin.save()
        ApiToken.issue(admin, label="mine")
        lead.groups.clear()  # the lead role taken away
        again = StringIO()
        call_command("demo", stdout=again)
        admin.refresh_from_db()
        assert admin.check_password("a phrase of my own 42")
        assert not admin.check_password("admin-demo-pass")
        assert roles_of(User.objects.get(username="lead")) == set()
        assert ApiToken.objects.count() == 1
        # the published password is no longer printed as if it still held
        assert "admin-demo-pass" not in again.getvalue()
        assert "(as it was left)" in again.getvalue()
