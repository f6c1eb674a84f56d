"""Campaign rosters: who may see a campaign and take its items or disputes. Given in the
definition (file, API) and the campaign form, changed on the campaign page or over the API
while the campaign runs; the people not on a roster get the 404 of a campaign that does not
exist, and whoever is taken off one gets their open work returned to the queues."""

from django.test import TestCase

from evalsite.models import ApiToken
from reviews.arbitration.services import arbitration_claim_next
from reviews.models import Arbitration, Assignment, ReviewerRemoval
from reviews.review import assignment_claim_next
from tasks.campaigns.definition import DefinitionError, campaign_create
from tasks.campaigns.lifecycle import campaign_lifecycle
from tasks.campaigns.rosters import Roster, campaign_rosters_set
from tasks.models import Campaign
from tests.factories import UserFactory, campaign_ready, personas
from tests.reviews.helpers import invariant_violations
from tests.reviews.test_arbitration import disputed_item
from tests.tasks.test_campaigns import imported_pairwise, make_testset


def definition(slug: str = "rostered", **extra) -> dict:
    return {**imported_pairwise(slug, ("vendor-a", "vendor-b")), **extra}


def bearer(user) -> dict:
    return {"Authorization": f"Bearer {ApiToken.issue(user)}"}


class DefinitionTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        make_testset()

    def test_a_definition_names_its_reviewers_and_arbiters(self):
        campaign, _ = campaign_create(
            definition=definition(reviewers=["reviewer_a"], arbiters=["arbiter"])
        )
        assert not campaign.reviewers_all and not campaign.arbiters_all
        assert list(campaign.reviewers.values_list("username", flat=True)) == ["reviewer_a"]
        assert list(campaign.arbiters.values_list("username", flat=True)) == ["arbiter"]

    def test_left_out_or_all_means_everyone_with_the_role(self):
        omitted, _ = campaign_create(definition=definition("omitted"))
        everyone, _ = campaign_create(
            definition=definition("everyone", reviewers="all", arbiters="all")
        )
        for campaign in (omitted, everyone):
            campaign.refresh_from_db()
            assert campaign.reviewers_all and campaign.arbiters_all
            assert not campaign.reviewers.exists() and not campaign.arbiters.exists()

    def test_it_refuses_unknown_people_people_without_the_role_and_bad_values_at_once(self):
        UserFactory(username="gone", roles=["reviewer"], is_active=False)
        try:
            campaign_create(
                definition=definition(
                    reviewers=["reviewer_a", "zed", "arbiter", "gone"], arbiters="everyone"
                )
            )
        except DefinitionError as exc:
            errors = exc.errors
        else:
            raise AssertionError("accepted")
        assert errors == [
            "reviewers: no user named 'zed'",
            "reviewers: 'arbiter' is not a reviewer (give them the reviewer role on the users "
            "page first)",
            "reviewers: 'gone' is deactivated",
            'arbiters: "all" or a list of usernames of people with the arbiter role',
        ]
        assert not Campaign.objects.filter(slug="rostered").exists()
        for bad in (None, 5, [""], ["reviewer_a", 3]):
            with self.assertRaises(DefinitionError) as caught:
                campaign_create(definition=definition(reviewers=bad))
            assert caught.exception.errors[0].startswith('reviewers: "all" or a list')

    def test_an_empty_roster_is_allowed_with_a_warning_and_a_blocker(self):
        campaign, warnings = campaign_create(definition=definition(reviewers=[]))
        assert any(w.startswith("reviewers: nobody is on the roster") for w in warnings)
        blockers = campaign_lifecycle(campaign)["blockers"]
        assert any(b.startswith("No reviewers on the roster") for b in blockers), blockers


class ApiTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        make_testset()

    def test_the_api_takes_and_returns_rosters(self):
        admin = bearer(self.users["admin"])
        response = self.client.post(
            "/api/v1/campaigns",
            definition(reviewers=["reviewer_b", "reviewer_a"]),
            "application/json",
            headers=admin,
        )
        assert response.status_code == 201, response.json()
        assert response.json()["reviewers"] == ["reviewer_a", "reviewer_b"]
        assert response.json()["arbiters"] == "all"
        read = self.client.get("/api/v1/campaigns/rostered", headers=bearer(self.users["lead"]))
        assert (read.json()["reviewers"], read.json()["arbiters"]) == (
            ["reviewer_a", "reviewer_b"],
            "all",
        )

    def test_the_api_refuses_an_unknown_reviewer(self):
        response = self.client.post(
            "/api/v1/campaigns",
            definition(arbiters=["nobody-here"]),
            "application/json",
            headers=bearer(self.users["admin"]),
        )
        assert response.status_code == 400
        assert response.json()["errors"] == ["arbiters: no user named 'nobody-here'"]

    def test_an_admin_changes_the_rosters_while_it_runs_and_work_comes_back(self):
        campaign = campaign_ready(items=2)
        reviewer_b = self.users["reviewer_b"]
        held = assignment_claim_next(campaign=campaign, reviewer=reviewer_b).assignment
        url = f"/api/v1/campaigns/{campaign.slug}"
        response = self.client.patch(
            url,
            {"reviewers": ["reviewer_a"]},
            "application/json",
            headers=bearer(self.users["admin"]),
        )
        assert response.status_code == 200, response.json()
        body = response.json()
        assert body["reviewers"] == ["reviewer_a"] and body["arbiters"] == "all"
        assert body["returned"] == {"leases": 1, "disputes": 0}
        held.refresh_from_db()
        assert held.state == Assignment.State.RELEASED
        assert invariant_violations(campaign) == []
        # Refused: unknown keys, unknown people, a lead's change.
        bad = self.client.patch(
            url,
            {"reviewers": ["zed"], "name": "x"},
            "application/json",
            headers=bearer(self.users["admin"]),
        )
        assert bad.status_code == 400
        bad = self.client.patch(
            url, {"reviewers": ["zed"]}, "application/json", headers=bearer(self.users["admin"])
        )
        assert bad.status_code == 400 and bad.json()["errors"] == ["reviewers: no user named 'zed'"]
        lead = self.client.patch(
            url, {"reviewers": "all"}, "application/json", headers=bearer(self.users["lead"])
        )
        assert lead.status_code == 403
        campaign.refresh_from_db()
        assert not campaign.reviewers_all


class VisibilityTests(TestCase):
    """A reviewer or arbiter off the roster: nothing listed, and the 404 of no campaign."""

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = campaign_ready(items=3, overlap=1, reviewers_all=False, arbiters_all=False)
        cls.campaign.reviewers.set([cls.users["reviewer_a"]])
        cls.arbiter_b = UserFactory(username="arbiter_b", roles=["arbiter"])
        cls.campaign.arbiters.set([cls.arbiter_b])
        disputed_item(
            cls.campaign, UserFactory(roles=["reviewer"]), UserFactory(roles=["reviewer"])
        )

    def test_a_reviewer_off_the_roster_sees_nothing_and_gets_the_404_of_no_campaign(self):
        slug = self.campaign.slug
        self.client.force_login(self.users["reviewer_b"])
        assert slug not in self.client.get("/review/").content.decode()
        assert self.client.get(f"/review/{slug}/").status_code == 404
        assert self.client.post(f"/review/{slug}/next").status_code == 404
        headers = bearer(self.users["reviewer_b"])
        off = self.client.post(f"/api/v1/campaigns/{slug}/next", headers=headers)
        missing = self.client.post("/api/v1/campaigns/no-such-campaign/next", headers=headers)
        assert off.status_code == missing.status_code == 404
        assert off.json() == missing.json()
        assert not Assignment.objects.filter(reviewer=self.users["reviewer_b"]).exists()
        # The reviewer on it sees it and reviews.
        self.client.force_login(self.users["reviewer_a"])
        assert slug in self.client.get("/review/").content.decode()
        on = self.client.post(
            f"/api/v1/campaigns/{slug}/next", headers=bearer(self.users["reviewer_a"])
        )
        assert on.status_code == 200 and on.json()["token"]

    def test_an_arbiter_off_the_roster_sees_nothing_and_gets_the_404_of_no_campaign(self):
        slug = self.campaign.slug
        arbiter = self.users["arbiter"]
        self.client.force_login(arbiter)
        assert self.campaign.name not in self.client.get("/arbitration/").content.decode()
        assert self.client.post(f"/arbitration/{slug}/next").status_code == 404
        off = self.client.post(
            f"/api/v1/campaigns/{slug}/arbitration/next", headers=bearer(arbiter)
        )
        missing = self.client.post(
            "/api/v1/campaigns/no-such-campaign/arbitration/next", headers=bearer(arbiter)
        )
        assert off.status_code == missing.status_code == 404 and off.json() == missing.json()
        assert not Arbitration.objects.filter(arbiter=arbiter).exists()
        self.client.force_login(self.arbiter_b)
        assert self.campaign.name in self.client.get("/arbitration/").content.decode()
        on = self.client.post(
            f"/api/v1/campaigns/{slug}/arbitration/next", headers=bearer(self.arbiter_b)
        )
        assert on.status_code == 200

    def test_admins_and_leads_see_every_campaign(self):
        lead_reviewer = UserFactory(username="lead_reviewer", roles=["lead", "reviewer"])
        for role in ("reviewer", "arbiter"):
            assert Campaign.objects.visible_to(lead_reviewer, role).filter(pk=self.campaign.pk)
            assert self.campaign.on_roster(self.users["admin"], role)
        assert not self.campaign.on_roster(self.users["reviewer_b"], "reviewer")
        assert not self.campaign.on_roster(self.users["outsider"], "reviewer")
        assert self.campaign.on_roster(self.users["reviewer_a"], "reviewer")
        self.client.force_login(lead_reviewer)
        assert self.client.get(f"/review/{self.campaign.slug}/").status_code == 200


class RosterChangeTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def test_taking_a_reviewer_off_returns_their_item_and_naming_them_lets_them_back(self):
        campaign = campaign_ready(items=2, overlap=1)
        reviewer_b = self.users["reviewer_b"]
        held = assignment_claim_next(campaign=campaign, reviewer=reviewer_b).assignment
        returned = campaign_rosters_set(
            campaign=campaign,
            rosters={"reviewers": Roster(everyone=False, users=(self.users["reviewer_a"],))},
            by=self.users["admin"],
        )
        assert returned == {"leases": 1, "disputes": 0}
        held.refresh_from_db()
        assert held.state == Assignment.State.RELEASED
        assert ReviewerRemoval.objects.filter(campaign=campaign, reviewer=reviewer_b).exists()
        # Their own link to the item is now the 404 of no campaign.
        self.client.force_login(reviewer_b)
        assert self.client.get(f"/review/{campaign.slug}/{held.token}/").status_code == 404
        # The item went back: reviewer_a takes it.
        assert assignment_claim_next(campaign=campaign, reviewer=self.users["reviewer_a"])
        assert invariant_violations(campaign) == []
        campaign_rosters_set(
            campaign=campaign,
            rosters={
                "reviewers": Roster(everyone=False, users=(self.users["reviewer_a"], reviewer_b))
            },
        )
        assert not ReviewerRemoval.objects.filter(campaign=campaign, reviewer=reviewer_b).exists()
        assert assignment_claim_next(campaign=campaign, reviewer=reviewer_b) is not None

    def test_taking_an_arbiter_off_returns_their_dispute_to_the_queue(self):
        campaign = campaign_ready(items=0)
        disputed_item(campaign, self.users["reviewer_a"], self.users["reviewer_b"])
        arbiter = self.users["arbiter"]
        claimed = arbitration_claim_next(campaign=campaign, arbiter=arbiter)
        returned = campaign_rosters_set(
            campaign=campaign, rosters={"arbiters": Roster(everyone=False, users=())}
        )
        assert returned == {"leases": 0, "disputes": 1}
        claimed.refresh_from_db()
        assert claimed.state == Arbitration.State.OPEN and claimed.arbiter is None
        self.client.force_login(arbiter)
        assert self.client.post(f"/arbitration/{campaign.slug}/next").status_code == 404
        blockers = campaign_lifecycle(campaign)["blockers"]
        assert any(b.startswith("No arbiters on the roster: 1 disputed item") for b in blockers)

    def test_let_back_in_on_the_assignments_page_puts_them_on_a_named_roster(self):
        campaign = campaign_ready(items=2, reviewers_all=False)
        reviewer_b = self.users["reviewer_b"]
        campaign.reviewers.set([reviewer_b])
        self.client.force_login(self.users["lead"])
        url = f"/campaigns/{campaign.slug}/reviewers/{reviewer_b.pk}/remove"
        self.client.post(url)
        assert not campaign.reviewers.filter(pk=reviewer_b.pk).exists()
        self.client.post(url, {"restore": "1"})
        assert campaign.reviewers.filter(pk=reviewer_b.pk).exists()
        assert campaign.on_roster(reviewer_b, "reviewer")


class FormTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.ts = make_testset()
        cls.contenders = campaign_ready(items=0).contenders.all()

    def form_data(self, slug: str, **extra) -> dict:
        return {
            "slug": slug,
            "testset": self.ts.pk,
            "contenders": [c.pk for c in self.contenders],
            "mode": "pairwise",
            "samples_per_task": 1,
            "reviewed_samples": 1,
            "overlap": 2,
            "lease_minutes": 20,
            "pass_threshold": 0.6,
            **extra,
        }

    def test_the_new_campaign_form_starts_with_an_empty_roster(self):
        self.client.force_login(self.users["admin"])
        response = self.client.get("/campaigns/new/")
        form = response.context["form"]
        for name in ("reviewers_all", "arbiters_all", "reviewers", "arbiters"):
            assert not form[name].value(), name
        page = response.content.decode()
        assert "All reviewers" in page and "All arbiters" in page
        # Only people holding the role are offered.
        assert [c.data["label"] for c in form["reviewers"]] == ["reviewer_a", "reviewer_b"]
        assert [c.data["label"] for c in form["arbiters"]] == ["arbiter"]
        response = self.client.post("/campaigns/new/", self.form_data("picked-none"))
        campaign = Campaign.objects.get(slug="picked-none")
        assert not campaign.reviewers_all and not campaign.reviewers.exists()

    def test_the_form_creates_a_named_roster_or_all(self):
        self.client.force_login(self.users["admin"])
        reviewer_a = self.users["reviewer_a"]
        data = self.form_data("picked", reviewers=[reviewer_a.pk], arbiters_all="on")
        response = self.client.post("/campaigns/new/", data, headers={"HX-Request": "true"})
        assert response.headers["HX-Redirect"] == "/campaigns/picked/"
        campaign = Campaign.objects.get(slug="picked")
        assert list(campaign.reviewers.all()) == [reviewer_a] and campaign.arbiters_all
        # Someone without the role cannot be picked.
        data = self.form_data("picked-wrong", reviewers=[self.users["arbiter"].pk])
        response = self.client.post("/campaigns/new/", data, headers={"HX-Request": "true"})
        assert response.context["form"].errors["reviewers"] == [
            "Reviewers: choose one of the options listed"
        ]

    def test_the_campaign_page_edits_the_rosters_while_it_runs(self):
        campaign = campaign_ready(items=2, overlap=1)
        held = assignment_claim_next(campaign=campaign, reviewer=self.users["reviewer_b"])
        self.client.force_login(self.users["lead"])
        page = self.client.get(f"/campaigns/{campaign.slug}/").content.decode()
        assert "all: everyone with the reviewer role" in page and "Save rosters" not in page
        assert self.client.post(f"/campaigns/{campaign.slug}/rosters").status_code == 403
        self.client.force_login(self.users["admin"])
        page = self.client.get(f"/campaigns/{campaign.slug}/").content.decode()
        assert "Save rosters" in page
        response = self.client.post(
            f"/campaigns/{campaign.slug}/rosters",
            {"reviewers": [self.users["reviewer_a"].pk], "arbiters_all": "on"},
            headers={"HX-Request": "true"},
        )
        body = response.content.decode()
        assert "Rosters saved. 1 open review of people taken off went back to the queue." in body
        assert 'data-roster="reviewers">reviewer_a<' in body
        held.assignment.refresh_from_db()
        assert held.assignment.state == Assignment.State.RELEASED
        # Nobody: saved, and the header's stage warns (swapped out of band).
        response = self.client.post(
            f"/campaigns/{campaign.slug}/rosters",
            {"arbiters_all": "on"},
            headers={"HX-Request": "true"},
        )
        body = response.content.decode()
        assert "reviewers: nobody is on the roster" in body
        assert 'id="lifecycle-progress"' in body and "No reviewers on the roster" in body
