"""evalsite.roles: the session user and the API token's user come with their roles, in one query."""

from datetime import timedelta

from django.contrib.auth.models import Group
from django.db import connection
from django.test import TestCase
from django.test.client import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from evalsite.api import bearer_user
from evalsite.models import ApiToken
from evalsite.roles import ADMIN, ARBITER, REVIEWER, RolesModelBackend, roles_of
from tests.factories import UserFactory


class RolesBackendTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.admin = UserFactory(username="roles-admin", roles=["reviewer"], is_superuser=True)
        cls.admin.groups.add(Group.objects.create(name="book club"))  # not a role
        cls.arbiter = UserFactory(username="roles-arbiter", roles=["arbiter", "reviewer"])

    def test_it_loads_the_session_user_and_their_roles_in_one_query(self):
        with CaptureQueriesContext(connection) as queries:
            user = RolesModelBackend().get_user(self.arbiter.pk)
            roles = roles_of(user)
        assert len(queries) == 1
        assert user == self.arbiter and roles == {ARBITER, REVIEWER}
        superuser = RolesModelBackend().get_user(self.admin.pk)
        assert roles_of(superuser) == {REVIEWER, ADMIN}

    def test_it_loads_no_inactive_or_unknown_user(self):
        self.arbiter.is_active = False
        self.arbiter.save()
        assert RolesModelBackend().get_user(self.arbiter.pk) is None
        assert RolesModelBackend().get_user(-1) is None

    def test_a_bearer_token_gives_its_user_and_records_its_use_once_a_minute(self):
        raw = ApiToken.issue(self.arbiter)
        request = RequestFactory().get("/", headers={"Authorization": f"Bearer {raw}"})
        with CaptureQueriesContext(connection) as queries:
            user = bearer_user(request)
        assert user == self.arbiter and roles_of(user) == {ARBITER, REVIEWER}
        assert len(queries) == 2  # the user with roles and token, then the token's last use
        used = ApiToken.objects.get(user=self.arbiter).last_used_at
        assert timezone.now() - used < timedelta(seconds=5)
        with CaptureQueriesContext(connection) as queries:
            assert bearer_user(request) == self.arbiter
        assert len(queries) == 1  # used a moment ago: not written again
        bad = RequestFactory().get("/", headers={"Authorization": "Bearer nope"})
        assert bearer_user(bad) is None
