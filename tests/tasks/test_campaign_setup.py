"""Setup on the campaign page: a campaign opens for review as soon as an item is ready, the
header names the real wait, and while generation runs its progress comes first."""

import json
import re

from django.test import TestCase
from django.urls import reverse

from reviews.models import Assignment, ReviewItem
from tasks.campaigns.definition import campaign_create
from tasks.generation.outputs_import import outputs_import
from tasks.models import Campaign, Generation
from tests.factories import CampaignFactory, personas
from tests.tasks.test_campaigns import imported_pairwise, make_testset
from tests.tasks.test_identity_hold import imported_campaign


def imported_lines(*task_ids: str, says: str) -> bytes:
    return "".join(
        json.dumps({"task_id": t, "output": f"{says} on {t}"}) + "\n" for t in task_ids
    ).encode()


class OpensForReviewTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def test_part_of_the_outputs_imported_opens_the_ready_items_to_reviewers(self):
        make_testset(n=3)
        campaign, _ = campaign_create(definition=imported_pairwise("partial", ("a", "b")))
        assert campaign.status == "draft"
        # Both sides of T-1 only: one item ready, two still waiting for outputs.
        for name in ("a", "b"):
            outputs_import(
                campaign=campaign, contender_name=name, raw=imported_lines("T-1", says=name)
            )
        campaign.refresh_from_db()
        assert campaign.status == "reviewing"
        assert ReviewItem.objects.filter(campaign=campaign, ready=True).count() == 1
        self.client.force_login(self.users["reviewer_a"])
        response = self.client.post(reverse("review_next", args=[campaign.slug]))
        assert response.status_code == 302
        assert Assignment.objects.filter(reviewer=self.users["reviewer_a"]).count() == 1

    def test_one_side_imported_opens_nothing(self):
        make_testset(n=2)
        campaign, _ = campaign_create(definition=imported_pairwise("oneside", ("a", "b")))
        outputs_import(campaign=campaign, contender_name="a", raw=imported_lines("T-1", says="a"))
        assert Campaign.objects.get(pk=campaign.pk).status == "draft"


class HeaderWaitTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def items_line(self, campaign) -> str:
        self.client.force_login(self.users["admin"])
        html = self.client.get(reverse("campaign_detail", args=[campaign.slug])).content.decode()
        block = html[html.index('id="review-items"') :]
        return " ".join(re.sub(r"<[^>]+>", "", block[: block.index("</div>")]).split())

    def test_an_item_held_for_approval_is_said_to_wait_for_an_admin(self):
        campaign = imported_campaign("held-head")  # every output in, one names its vendor
        line = self.items_line(campaign)
        assert "1 waiting for admin approval" in line
        assert "waiting for outputs" not in line

    def test_an_item_without_its_outputs_is_said_to_wait_for_outputs(self):
        make_testset(n=1)
        campaign, _ = campaign_create(definition=imported_pairwise("no-out", ("a", "b")))
        line = self.items_line(campaign)
        assert "1 waiting for outputs" in line and "approval" not in line


class ActionsAndProgressTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def page(self, campaign) -> str:
        self.client.force_login(self.users["admin"])
        return self.client.get(reverse("campaign_detail", args=[campaign.slug])).content.decode()

    def test_while_generating_the_progress_comes_before_the_rest_and_cancel_is_offered(self):
        campaign = CampaignFactory(slug="running", status="generating")
        Generation.objects.create(
            campaign=campaign,
            task=campaign.testset.tasks.first() or _task(campaign),
            contender=campaign.contenders.first(),
            sample_index=0,
            status=Generation.Status.RUNNING,
        )
        html = self.page(campaign)
        assert html.index("progress-table") < html.index('id="instructions"')
        assert "Cancel</button>" in html and "Retry failed</button>" not in html

    def test_a_draft_offers_generate_only(self):
        campaign = CampaignFactory(slug="drafty", status="draft")
        html = self.page(campaign)
        assert "Generate</button>" in html
        assert "Cancel</button>" not in html and "Retry failed</button>" not in html
        assert html.index("progress-table") > html.index('id="instructions"')


def _task(campaign):
    from tests.factories import TaskFactory

    return TaskFactory(testset=campaign.testset, position=0, external_id="T-run")


class WeightsFormTests(TestCase):
    """Decision weights and gates are fields of the new-campaign form, not a JSON box."""

    @classmethod
    def setUpTestData(cls):
        from tasks.models import Contender
        from tests.factories import TaskFactory, TestSetFactory

        cls.users = personas()
        cls.ts = TestSetFactory(name="wsupport", frozen=False, task_count=2)
        for i, category in enumerate(("billing", "shipping")):
            TaskFactory(testset=cls.ts, position=i, external_id=f"T-{i}", category=category)
        cls.alpha = Contender.objects.create(name="w-alpha", provider="imported")
        cls.beta = Contender.objects.create(name="w-beta", provider="imported")

    def post(self, **fields):
        self.client.force_login(self.users["admin"])
        data = {
            "slug": "weighed",
            "testset": self.ts.pk,
            "contenders": [self.alpha.pk, self.beta.pk],
            "mode": "pairwise",
            "samples_per_task": 1,
            "reviewed_samples": 1,
            "overlap": 2,
            "lease_minutes": 20,
            "pass_threshold": 0.6,
            **fields,
        }
        return self.client.post("/campaigns/new/", data)

    def test_it_stores_weights_gates_and_per_tier_thresholds_from_fields(self):
        response = self.post(
            weight_quality="0.5",
            weight_stability="0.5",
            category_weights="billing=2, shipping=0.5",
            min_quality="0.4",
            pass_threshold_advanced="0.8",
        )
        assert response.status_code == 302, response.content.decode()[:2000]
        campaign = Campaign.objects.get(slug="weighed")
        assert campaign.weights["quality"] == 0.5 and campaign.weights["stability"] == 0.5
        assert campaign.weights["categories"] == {"billing": 2.0, "shipping": 0.5}
        assert campaign.weights["min_quality"] == 0.4
        assert campaign.weights["pass_thresholds"] == {
            "base": 0.6,
            "advanced": 0.8,
            "boundary": 0.6,
        }

    def test_it_says_which_category_weight_is_wrong(self):
        response = self.post(category_weights="billing=2, shipping=lots")
        assert response.status_code == 200
        assert "“shipping=lots”: write category=weight, a number from 0 to 1,000" in (
            response.content.decode()
        )
        assert not Campaign.objects.filter(slug="weighed").exists()

    def test_the_form_has_no_json_box_for_weights(self):
        self.client.force_login(self.users["admin"])
        html = self.client.get("/campaigns/new/").content.decode()
        assert 'name="weights"' not in html
        assert 'name="weight_quality"' in html and 'name="min_quality"' in html


class BulkRetryTests(TestCase):
    """The failed outputs list takes a bulk action: retry the ticked ones."""

    @classmethod
    def setUpTestData(cls):
        from tests.factories import campaign_ready

        cls.users = personas()
        cls.campaign = campaign_ready(items=2, overlap=1)
        cls.failed = list(Generation.objects.filter(campaign=cls.campaign).order_by("pk")[:2])
        Generation.objects.filter(pk__in=[g.pk for g in cls.failed]).update(
            status=Generation.Status.FAILED, error="HTTP 500", attempts=3
        )

    def test_an_admin_retries_the_ticked_failed_outputs_only(self):
        self.client.force_login(self.users["admin"])
        page = self.client.get(f"/campaigns/{self.campaign.slug}/generations/?only=failed")
        html = page.content.decode()
        assert "Retry selected" in html
        assert f'name="ids" value="{self.failed[0].pk}" form="bulk-retry"' in html
        url = f"/campaigns/{self.campaign.slug}/generations/retry"
        response = self.client.post(url, {"ids": [self.failed[0].pk]})
        assert response.status_code == 302 and response.url.endswith("?only=failed")
        first, second = (Generation.objects.get(pk=g.pk) for g in self.failed)
        assert first.status == "pending" and first.attempts == 0 and first.queued_at
        assert second.status == "failed"

    def test_a_lead_may_not(self):
        self.client.force_login(self.users["lead"])
        url = f"/campaigns/{self.campaign.slug}/generations/retry"
        assert self.client.post(url, {"ids": [self.failed[0].pk]}).status_code == 403
        html = self.client.get(f"/campaigns/{self.campaign.slug}/generations/?only=failed").content
        assert b"Retry selected" not in html
