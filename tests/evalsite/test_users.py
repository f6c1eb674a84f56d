"""The users page: an admin creates accounts, sets roles and access, passwords and API tokens;
everybody changes their own password."""

import threading

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction
from django.test import Client, TestCase, TransactionTestCase

from evalsite.models import ApiToken
from evalsite.services import UserChangeRefused, UserExists, user_create, user_update
from reviews.arbitration.services import arbitration_claim_next
from reviews.models import Arbitration, Assignment
from reviews.review import assignment_claim_next
from tests.factories import PASSWORD, CampaignFactory, UserFactory, campaign_ready, personas
from tests.reviews.test_arbitration import disputed_item

User = get_user_model()


def roles(username: str) -> set[str]:
    return set(User.objects.get(username=username).groups.values_list("name", flat=True))


def logs_in(username: str, password: str) -> bool:
    response = Client().post("/login/", {"username": username, "password": password})
    return response.status_code == 302


class UserListTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def setUp(self):
        self.client.force_login(self.users["admin"])

    def test_it_is_for_admins_only(self):
        for persona in ("lead", "reviewer_a", "arbiter", "outsider"):
            self.client.force_login(self.users[persona])
            assert self.client.get("/users/").status_code == 403
            assert (
                self.client.post("/users/", {"username": "x", "roles": ["admin"]}).status_code
                == 403
            )
        assert not User.objects.filter(username="x").exists()
        self.client.logout()
        assert self.client.get("/users/").status_code == 302

    def test_it_lists_users_with_their_roles_and_access(self):
        UserFactory(username="api-bot", roles=["reviewer"]).set_unusable_password()
        User.objects.filter(username="api-bot").update(password="!")
        User.objects.filter(username="outsider").update(is_active=False)
        html = self.client.get("/users/").content.decode()
        row = html[html.index('data-user="reviewer_a"') :].split("</tr>")[0]
        assert "reviewer" in row and "may log in" in row
        assert "API only" in html[html.index('data-user="api-bot"') :].split("</tr>")[0]
        assert "deactivated" in html[html.index('data-user="outsider"') :].split("</tr>")[0]
        assert 'href="/users/"' in html  # the top bar's link for admins

    def test_it_filters_by_role_status_and_name(self):
        User.objects.filter(username="outsider").update(is_active=False)

        def names(query: str) -> list[str]:
            page = self.client.get("/users/?" + query).context["page"]
            return [u.username for u in page.object_list]

        assert names("role=reviewer") == ["reviewer_a", "reviewer_b"]
        assert names("role=none") == ["outsider"]
        assert names("status=inactive") == ["outsider"]
        assert names("q=revIEWER_b") == ["reviewer_b"]
        assert len(names("role=bogus")) == 6  # a stale link's bad value is ignored

    def test_it_creates_a_user_with_a_generated_password_shown_once(self):
        response = self.client.post(
            "/users/",
            {"username": "carol", "email": "c@example.org", "roles": ["reviewer", "arbiter"]},
        )
        assert response.status_code == 200
        assert "no-store" in response["Cache-Control"]
        password = response.context["created"]["password"]
        assert password in response.content.decode()
        assert roles("carol") == {"reviewer", "arbiter"}
        assert logs_in("carol", password)
        assert not ApiToken.objects.filter(user__username="carol").exists()
        # Nowhere to read it again.
        assert password not in self.client.get("/users/").content.decode()
        carol = User.objects.get(username="carol")
        assert password not in self.client.get(f"/users/{carol.pk}/").content.decode()

    def test_it_creates_a_user_with_a_chosen_password_without_echoing_it(self):
        response = self.client.post(
            "/users/", {"username": "dave", "roles": ["lead"], "password": "a-long-passphrase-9"}
        )
        assert "a-long-passphrase-9" not in response.content.decode()
        assert logs_in("dave", "a-long-passphrase-9")

    def test_it_rejects_a_bad_user_with_every_reason_and_keeps_what_was_typed(self):
        response = self.client.post(
            "/users/", {"username": "reviewer_a", "email": "not-an-email", "password": "123"}
        )
        form = response.context["form"]
        assert form.errors["username"] == ["reviewer_a already exists: edit them instead."]
        assert form.errors["roles"] == ["Roles: choose at least one"]
        assert form.errors["email"] == ["Email is not valid"]
        assert any("too short" in e for e in form.errors["password"])
        assert response.context["created"] is None
        assert 'value="not-an-email"' in response.content.decode()
        assert User.objects.count() == 6

    def test_it_refuses_a_name_that_differs_from_an_existing_one_only_in_case(self):
        response = self.client.post("/users/", {"username": "Reviewer_A", "roles": ["lead"]})
        assert response.context["form"].errors["username"] == [
            "reviewer_a already exists (names that differ only in case are the same name): "
            "edit them instead."
        ]
        assert User.objects.count() == 6
        api = self.client.post(
            "/api/v1/users",
            {"username": "REVIEWER_A", "roles": ["lead"]},
            "application/json",
            headers={"Authorization": f"Bearer {ApiToken.issue(self.users['admin'])}"},
        )
        assert api.status_code == 409 and "'reviewer_a' exists" in api.json()["error"]

    def test_it_sorts_names_regardless_of_case_and_says_how_many_match(self):
        UserFactory(username="Bea", roles=["reviewer"])
        response = self.client.get("/users/")
        assert [u.username for u in response.context["page"].object_list][:3] == [
            "admin",
            "arbiter",
            "Bea",
        ]
        assert "1 user matches" in self.client.get("/users/?q=bea").content.decode()
        assert "3 users match" in self.client.get("/users/?role=reviewer").content.decode()

    def test_editing_from_a_filtered_page_returns_to_it(self):
        reviewer = self.users["reviewer_a"]
        listed = self.client.get("/users/?role=reviewer&page=1&bogus=1").content.decode()
        assert f'href="/users/{reviewer.pk}/?role=reviewer&amp;page=1"' in listed
        page = self.client.get(f"/users/{reviewer.pk}/?role=reviewer&page=1").content.decode()
        assert 'href="/users/?role=reviewer&amp;page=1"' in page  # the back link
        saved = self.client.post(
            f"/users/{reviewer.pk}/?role=reviewer&page=1",
            {"email": "", "roles": ["reviewer"], "is_active": "on"},
        )
        assert saved.status_code == 302 and saved.url == "/users/?role=reviewer&page=1"

    def test_it_words_errors_in_the_forms_labels_as_the_other_forms_do(self):
        response = self.client.post("/users/", {"username": "", "email": "x@", "roles": ["boss"]})
        assert response.context["form"].errors == {
            "username": ["Username is required"],
            "email": ["Email is not valid"],
            "roles": ["Roles: choose one of the options listed"],
        }
        body = response.content.decode()
        assert "This field is required" not in body and "Enter a valid email" not in body
        too_long = self.client.post("/users/", {"username": "u" * 151, "roles": ["lead"]})
        assert too_long.context["form"].errors == {
            "username": ["Username is 151 characters long; the limit is 150"]
        }

    def test_it_rejects_a_username_with_invalid_characters(self):
        response = self.client.post("/users/", {"username": "bad name!", "roles": ["reviewer"]})
        assert response.status_code == 200
        [error] = response.context["form"].errors["username"]
        assert error.startswith("Username: Enter a valid username.")
        assert not User.objects.filter(username="bad name!").exists()

    def test_with_htmx_it_answers_the_form_and_the_new_table_row(self):
        response = self.client.post(
            "/users/", {"username": "erin", "roles": ["reviewer"]}, headers={"HX-Request": "true"}
        )
        html = response.content.decode()
        assert html.lstrip().startswith('<div id="new-user">')
        assert 'id="users" hx-swap-oob="true"' in html and 'data-user="erin"' in html
        assert "<html" not in html
        bad = self.client.post("/users/", {"username": ""}, headers={"HX-Request": "true"})
        assert "hx-swap-oob" not in bad.content.decode()
        assert "Username is required" in bad.content.decode()


class UserEditTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def setUp(self):
        self.client.force_login(self.users["admin"])

    def edit(self, persona: str, **data):
        user = self.users[persona]
        body = {"email": user.email, "roles": sorted(roles(user.username)), "is_active": "on"}
        body.update(data)
        if body.get("is_active") is False:
            del body["is_active"]
        return self.client.post(f"/users/{user.pk}/", body)

    def test_it_changes_roles_and_email(self):
        response = self.edit("lead", roles=["lead", "reviewer"], email="lead@example.org")
        assert response.status_code == 302 and response.url == "/users/"
        assert roles("lead") == {"lead", "reviewer"}
        assert User.objects.get(username="lead").email == "lead@example.org"
        self.edit("lead", roles=[])
        assert roles("lead") == set()

    def test_taking_every_role_says_what_that_leaves(self):
        response = self.edit("reviewer_b", roles=[])
        assert response.status_code == 302 and roles("reviewer_b") == set()
        followed = self.client.get(response.url).content.decode()
        assert "reviewer_b saved. They have no role now" in followed

    def test_it_keeps_groups_that_are_not_roles(self):
        from django.contrib.auth.models import Group

        self.users["lead"].groups.add(Group.objects.create(name="finance"))
        self.edit("lead", roles=["reviewer"])
        assert roles("lead") == {"finance", "reviewer"}

    def test_deactivating_ends_sessions_and_tokens_for_good(self):
        token = ApiToken.issue(self.users["reviewer_a"])
        auth = {"Authorization": f"Bearer {token}"}
        reviewer = Client()
        reviewer.force_login(self.users["reviewer_a"])
        self.edit("reviewer_a", is_active=False)
        assert not logs_in("reviewer_a", PASSWORD)
        assert reviewer.get("/review/").status_code == 302  # the open session ended
        assert self.client.get("/api/v1/whoami", headers=auth).status_code == 401
        # Reactivated: the old session, token and password stay dead (the account may have
        # been deactivated because they leaked); a new password brings the user back.
        response = self.edit("reviewer_a", is_active="on")
        assert response.url == f"/users/{self.users['reviewer_a'].pk}/"
        assert "need a new password" in self.client.get(response.url).content.decode()
        assert reviewer.get("/review/").status_code == 302
        assert self.client.get("/api/v1/whoami", headers=auth).status_code == 401
        assert not logs_in("reviewer_a", PASSWORD)
        new = self.client.post(f"/users/{self.users['reviewer_a'].pk}/password")
        assert logs_in("reviewer_a", new.context["secret"]["value"])

    def test_a_deactivated_users_password_cannot_be_reset_until_reactivated(self):
        self.edit("reviewer_a", is_active=False)
        response = self.client.post(f"/users/{self.users['reviewer_a'].pk}/password")
        assert response.status_code == 302
        assert not User.objects.get(username="reviewer_a").has_usable_password()

    def test_it_refuses_a_bad_or_too_long_email(self):
        for email in ("not-an-email", "a" * 250 + "@example.org"):
            response = self.edit("lead", email=email)
            assert response.status_code == 200 and "email" in response.context["form"].errors
        assert response.context["form"].errors["email"] == [
            "Email is 262 characters long; the limit is 254"
        ]
        assert self.edit("lead", email="x@").context["form"].errors == {
            "email": ["Email is not valid"]
        }
        assert User.objects.get(username="lead").email == ""

    def test_deactivating_a_reviewer_returns_their_leases_to_the_pool(self):
        campaign = campaign_ready(items=2, overlap=2)
        claim = assignment_claim_next(campaign=campaign, reviewer=self.users["reviewer_a"])
        item = claim.assignment.item
        assert item.live_count == 1
        response = self.edit("reviewer_a", is_active=False)
        assert Assignment.objects.get(pk=claim.assignment.pk).state == Assignment.State.RELEASED
        item.refresh_from_db()
        assert item.live_count == 0
        assert "1 open review lease returned" in self.client.get(response.url).content.decode()

    def test_taking_the_reviewer_role_returns_leases_and_the_arbiter_role_disputes(self):
        campaign = campaign_ready(items=2, overlap=2)
        claim = assignment_claim_next(campaign=campaign, reviewer=self.users["reviewer_a"])
        UserFactory(username="both", roles=["reviewer", "arbiter"])
        arbiter_campaign = CampaignFactory()
        disputed_item(arbiter_campaign, self.users["reviewer_a"], self.users["reviewer_b"])
        both = User.objects.get(username="both")
        held = arbitration_claim_next(campaign=arbiter_campaign, arbiter=both)
        self.users["both"] = both
        # The reviewer keeps their lease while they keep the role.
        self.edit("reviewer_a", roles=["reviewer", "lead"])
        assert Assignment.objects.get(pk=claim.assignment.pk).state == Assignment.State.ACTIVE
        self.edit("reviewer_a", roles=["lead"])
        assert Assignment.objects.get(pk=claim.assignment.pk).state == Assignment.State.RELEASED
        self.edit("both", roles=["reviewer"])
        held.refresh_from_db()
        assert held.state == Arbitration.State.OPEN and held.arbiter is None
        assert arbitration_claim_next(campaign=arbiter_campaign, arbiter=self.users["arbiter"])

    def test_an_admin_cannot_demote_or_deactivate_themselves(self):
        UserFactory(username="admin2", roles=["admin"])
        for change in ({"roles": ["lead"]}, {"is_active": False}):
            response = self.edit("admin", **change)
            assert response.status_code == 200
            assert "another admin must" in response.content.decode()
            assert roles("admin") == {"admin"} and User.objects.get(username="admin").is_active

    def test_the_last_admin_stays_an_admin(self):
        second = UserFactory(username="admin2", roles=["admin"])
        self.client.force_login(second)
        assert self.edit("admin", roles=["reviewer"]).status_code == 302
        self.client.force_login(self.users["admin"])
        assert self.client.get("/users/").status_code == 403  # no longer an admin
        # Two admins demoting each other at once: the request of the one demoted first passed
        # its role check already; the service still keeps one admin.
        former = User.objects.get(username="admin")
        with pytest.raises(UserChangeRefused, match="last admin"):
            user_update(user=second, by=former, roles=["lead"], email="", is_active=True)
        with pytest.raises(UserChangeRefused, match="last admin"):
            user_update(user=second, by=former, roles=["admin"], email="", is_active=False)
        assert roles("admin2") == {"admin"} and User.objects.get(username="admin2").is_active
        # A superuser is an admin too: then the group admin may go.
        User.objects.create_superuser("root", password=PASSWORD)
        user_update(user=second, by=former, roles=["lead"], email="", is_active=True)
        assert roles("admin2") == {"lead"}

    def test_with_htmx_errors_come_back_in_the_form(self):
        response = self.client.post(
            f"/users/{self.users['admin'].pk}/",
            {"roles": ["lead"], "is_active": "on"},
            headers={"HX-Request": "true"},
        )
        html = response.content.decode()
        assert html.lstrip().startswith('<form id="user-form"') and "another admin must" in html


class PasswordAndTokenTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def setUp(self):
        self.client.force_login(self.users["admin"])

    def test_a_new_password_is_shown_once_and_ends_their_sessions(self):
        reviewer = Client()
        reviewer.force_login(self.users["reviewer_a"])
        response = self.client.post(f"/users/{self.users['reviewer_a'].pk}/password")
        assert "no-store" in response["Cache-Control"]
        password = response.context["secret"]["value"]
        assert password in response.content.decode()
        assert reviewer.get("/review/").status_code == 302
        assert not logs_in("reviewer_a", PASSWORD)
        assert logs_in("reviewer_a", password)

    def test_an_admin_resetting_their_own_password_stays_logged_in(self):
        response = self.client.post(f"/users/{self.users['admin'].pk}/password")
        assert response.status_code == 200
        assert self.client.get("/users/").status_code == 200

    def test_an_admin_issues_tokens_for_script_accounts_only(self):
        bot = User.objects.create_user("ci-bot")  # no password: nobody logs in as it
        bot.groups.add(*User.objects.get(username="lead").groups.all())
        response = self.client.post(f"/users/{bot.pk}/tokens", {"action": "issue"})
        token = response.context["secret"]["value"]
        auth = {"Authorization": f"Bearer {token}"}
        assert Client().get("/api/v1/whoami", headers=auth).json()["username"] == "ci-bot"
        page = self.client.get(f"/users/{bot.pk}/").content.decode()
        assert token not in page and "issued by admin" in page
        # Someone who logs in: a token in an admin's hands would act in their name.
        person = self.users["reviewer_b"]
        refused = self.client.post(f"/users/{person.pk}/tokens", {"action": "issue"}, follow=True)
        assert "issue their own tokens" in refused.content.decode()
        assert not ApiToken.objects.filter(user=person).exists()
        assert "Issue a new token" not in self.client.get(f"/users/{person.pk}/").content.decode()

    def test_a_deactivated_account_gets_no_token_until_reactivated(self):
        bot = User.objects.create_user("ci-bot")  # a script account: no password
        bot.groups.add(*User.objects.get(username="lead").groups.all())
        self.client.post(f"/users/{bot.pk}/", {"roles": ["lead"]})  # "May log in" off
        page = self.client.get(f"/users/{bot.pk}/").content.decode()
        assert "Issue a new token" not in page and "no password" not in page
        refused = self.client.post(f"/users/{bot.pk}/tokens", {"action": "issue"}, follow=True)
        assert "is deactivated" in refused.content.decode()
        assert not ApiToken.objects.filter(user=bot).exists()
        self.client.post(f"/users/{bot.pk}/", {"roles": ["lead"], "is_active": "on"})
        assert "Issue a new token" in self.client.get(f"/users/{bot.pk}/").content.decode()

    def test_an_admin_revokes_anyones_tokens(self):
        user = self.users["reviewer_b"]
        token = ApiToken.issue(user)
        auth = {"Authorization": f"Bearer {token}"}
        response = self.client.post(f"/users/{user.pk}/tokens", {"action": "revoke"})
        assert response.status_code == 302
        assert Client().get("/api/v1/whoami", headers=auth).status_code == 401

    def test_everybody_manages_their_own_tokens_on_their_account_page(self):
        self.client.force_login(self.users["reviewer_b"])
        page = self.client.get("/account/")
        assert "no-store" in page["Cache-Control"] and "reviewer" in page.content.decode()
        response = self.client.post("/account/", {"action": "issue"})
        token = response.context["secret"]["value"]
        auth = {"Authorization": f"Bearer {token}"}
        assert Client().get("/api/v1/whoami", headers=auth).json()["username"] == "reviewer_b"
        assert token not in self.client.get("/account/").content.decode()
        assert "self-service" in self.client.get("/account/").content.decode()
        self.client.post("/account/", {"action": "revoke"})
        assert Client().get("/api/v1/whoami", headers=auth).status_code == 401
        self.client.logout()
        assert self.client.get("/account/").status_code == 302

    def test_only_admins_may_reset_passwords_or_touch_tokens(self):
        target = self.users["reviewer_b"]
        for persona in ("lead", "reviewer_a", "arbiter"):
            self.client.force_login(self.users[persona])
            assert self.client.post(f"/users/{target.pk}/password").status_code == 403
            assert self.client.post(f"/users/{target.pk}/tokens").status_code == 403
        assert logs_in("reviewer_b", PASSWORD)
        assert not ApiToken.objects.filter(user=target).exists()

    def test_a_get_changes_nothing(self):
        target = self.users["reviewer_b"]
        assert self.client.get(f"/users/{target.pk}/password").status_code == 405
        assert self.client.get(f"/users/{target.pk}/tokens").status_code == 405
        assert self.client.get("/users/999999/").status_code == 404


class OwnPasswordTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def test_everybody_changes_their_own_password(self):
        for persona in ("reviewer_a", "outsider"):
            self.client.force_login(self.users[persona])
            page = self.client.get("/account/password/")
            assert page.status_code == 200
            response = self.client.post(
                "/account/password/",
                {
                    "old_password": PASSWORD,
                    "new_password1": "another-long-phrase-7",
                    "new_password2": "another-long-phrase-7",
                },
            )
            assert response.status_code == 302 and response.url == "/account/password/done/"
            assert self.client.get("/account/password/done/").status_code == 200  # still in
            assert logs_in(persona, "another-long-phrase-7")

    def test_it_needs_the_old_password_and_a_good_new_one(self):
        self.client.force_login(self.users["reviewer_a"])
        response = self.client.post(
            "/account/password/",
            {"old_password": "wrong", "new_password1": "short", "new_password2": "short"},
        )
        assert response.status_code == 200
        html = response.content.decode()
        assert "old password was entered incorrectly" in html
        assert logs_in("reviewer_a", PASSWORD)

    def test_the_new_password_must_differ_from_the_current_one(self):
        self.client.force_login(self.users["reviewer_a"])
        response = self.client.post(
            "/account/password/",
            {"old_password": PASSWORD, "new_password1": PASSWORD, "new_password2": PASSWORD},
        )
        assert response.status_code == 200
        assert "different from the current one" in response.content.decode()

    def test_it_asks_anonymous_visitors_to_log_in(self):
        response = self.client.get("/account/password/")
        assert response.status_code == 302 and response.url.startswith("/login/")


class UsersApiTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.auth = {"Authorization": f"Bearer {ApiToken.issue(cls.users['admin'])}"}

    def patch(self, username: str, body: dict, auth=None):
        return self.client.patch(
            f"/api/v1/users/{username}", body, "application/json", headers=auth or self.auth
        )

    def test_it_lists_and_shows_users(self):
        listed = self.client.get("/api/v1/users", headers=self.auth).json()["users"]
        assert [u["username"] for u in listed] == sorted(self.users)
        admin = next(u for u in listed if u["username"] == "admin")
        assert admin["roles"] == ["admin"] and admin["tokens"] == 1 and admin["is_active"]
        one = self.client.get("/api/v1/users/reviewer_a", headers=self.auth).json()
        assert one["roles"] == ["reviewer"] and one["tokens"] == 0
        missing = self.client.get("/api/v1/users/nobody", headers=self.auth)
        assert missing.status_code == 404 and missing.json() == {"error": "no such user 'nobody'"}

    def test_patch_changes_only_what_it_names_and_returns_released_work(self):
        campaign = campaign_ready(items=2, overlap=2)
        assignment_claim_next(campaign=campaign, reviewer=self.users["reviewer_a"])
        response = self.patch("reviewer_a", {"email": "a@example.org"})
        assert response.status_code == 200
        assert response.json()["roles"] == ["reviewer"]
        assert response.json()["released"] == {"leases": 0, "disputes": 0}
        response = self.patch("reviewer_a", {"is_active": False})
        body = response.json()
        assert body["is_active"] is False and body["email"] == "a@example.org"
        assert body["released"] == {"leases": 1, "disputes": 0}
        assert not logs_in("reviewer_a", PASSWORD)

    def test_patch_refuses_bad_values_and_unsafe_changes(self):
        bad = self.patch("lead", {"roles": ["boss"], "is_active": "no", "password": "x"})
        assert bad.status_code == 400
        fields = sorted(e.split(":")[0] for e in bad.json()["errors"])
        assert fields == ["is_active", "password", "roles"]
        assert roles("lead") == {"lead"}
        too_long = self.patch("lead", {"email": "a" * 300 + "@example.org"})
        assert too_long.status_code == 400 and too_long.json()["errors"][0].startswith("email:")
        refused = self.patch("admin", {"roles": ["lead"]})
        assert refused.status_code == 409 and "another admin must" in refused.json()["error"]
        lead_auth = {"Authorization": f"Bearer {ApiToken.issue(self.users['lead'])}"}
        assert self.patch("reviewer_b", {"roles": []}, auth=lead_auth).status_code == 403
        assert roles("reviewer_b") == {"reviewer"}

    def test_patch_refuses_a_body_that_changes_nothing(self):
        # It answered 200 and changed nothing, as if the change had been made.
        for body in ({}, ""):
            response = self.patch("lead", body)
            assert response.status_code == 400, body
            error = response.json()["error"]
            assert error == "nothing to change: send any of roles, email, is_active", body
        unknown = self.patch("lead", {"role": ["admin"]})
        assert unknown.json()["errors"] == [
            "role: not a field you can change here; accepted: roles, email, is_active"
        ]
        assert roles("lead") == {"lead"}
        schema = self.client.get("/api/v1/schema").json()
        patch = schema["paths"]["/api/v1/users/{username}"]["patch"]["requestBody"]
        assert patch["content"]["application/json"]["schema"]["minProperties"] == 1

    def test_patching_a_superuser_leaves_their_groups_alone(self):
        User.objects.create_superuser("root", password=PASSWORD)
        response = self.patch("root", {"email": "root@example.org"})
        assert response.status_code == 200 and response.json()["roles"] == ["admin"]
        assert roles("root") == set()

    def test_creating_an_existing_name_changes_nothing(self):
        body = {"username": "reviewer_a", "roles": ["admin"], "password": "another-long-pw-7"}
        response = self.client.post("/api/v1/users", body, "application/json", headers=self.auth)
        assert response.status_code == 409
        assert roles("reviewer_a") == {"reviewer"} and logs_in("reviewer_a", PASSWORD)

    def test_creating_with_an_unknown_field_creates_nobody(self):
        body = {"username": "kim", "roles": ["reviewer"], "mail": "kim@example.org"}
        response = self.client.post("/api/v1/users", body, "application/json", headers=self.auth)
        assert response.status_code == 400
        assert response.json()["errors"] == ["mail: not a field of a new user"]
        assert not User.objects.filter(username="kim").exists()

    def test_creating_with_an_unknown_role_names_it(self):
        body = {"username": "kim", "roles": ["reviewer", "king"]}
        response = self.client.post("/api/v1/users", body, "application/json", headers=self.auth)
        assert response.status_code == 400
        assert "roles: unknown king; choose from admin, lead, reviewer, arbiter" in str(
            response.json()
        )
        assert not User.objects.filter(username="kim").exists()


class CaseTwinTests(TestCase):
    def test_the_database_itself_refuses_a_name_that_differs_only_in_case(self):
        User.objects.create_user("Sam")
        with pytest.raises(IntegrityError), transaction.atomic():
            User.objects.create_user("sAM")
        assert list(User.objects.values_list("username", flat=True)) == ["Sam"]


class CaseTwinMigrationTests(TransactionTestCase):
    def test_upgrading_with_case_twins_stops_and_names_them(self):
        call_command("migrate", "evalsite", "0002", verbosity=0)
        try:
            User.objects.create_user("Sam")
            User.objects.create_user("sam")
            with pytest.raises(RuntimeError, match=r"differ only in the case .*: Sam / sam\."):
                call_command("migrate", "evalsite", verbosity=0)
            User.objects.filter(username="sam").update(username="sam2")
        finally:
            call_command("migrate", "evalsite", verbosity=0)
        with pytest.raises(IntegrityError), transaction.atomic():
            User.objects.create_user("SAM")


@pytest.mark.postgres
class CaseTwinRaceTests(TransactionTestCase):
    """Real PostgreSQL, real threads, each with its own connection."""

    def test_admins_creating_case_twins_at_once_get_one_account_and_refusals(self):
        names = ["Sam", "sam", "SAM", "sAm", "saM", "SAm", "sAM", "SaM"]
        barrier = threading.Barrier(len(names))
        created, refused, errors = [], [], []

        def work(name):
            try:
                barrier.wait()
                created.append(
                    user_create(username=name, roles=["reviewer"], password=None, email="", by="t")
                )
            except UserExists as exists:
                refused.append(str(exists))
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=work, args=(n,)) for n in names]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []
        assert len(created) == 1 and len(refused) == 7
        assert User.objects.filter(username__iexact="sam").count() == 1
        # Every refusal names the account that won (or, racing its commit, the name asked for).
        assert all(r.lower() == "sam" for r in refused)
