"""Every campaign and test-set text a reviewer or arbiter reads goes through the same masking
as the outputs (tasks.blinding.campaign_texts.text_shown): besides the prompt, messages, reference and
instructions, the task's category, the rubric's labels, descriptions and anchors (also in the
title= and aria-label= attributes they fill) and, for arbiters, the reviewers' comments."""

import json

from django.test import TestCase

from evalsite.models import ApiToken
from reviews.models import Arbitration
from tests.factories import (
    RUBRIC,
    CampaignFactory,
    ContenderFactory,
    ReviewItemFactory,
    TaskFactory,
    personas,
)
from tests.reviews.test_arbitration import disputed_item

SECRET = "zz-secret-model-9"
RUBRIC_NAMING = [
    {
        **RUBRIC[0],
        "label": f"Accuracy vs {SECRET}",
        "description": "As Claude would judge it",
        "anchors": {"1": f"wrong, like {SECRET}", "5": "as right as GPT-4o"},
    },
    RUBRIC[1],
]


class ShownTextTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        contenders = [ContenderFactory(name=SECRET), ContenderFactory()]
        for slug in ("rev", "arb"):
            campaign = CampaignFactory(slug=slug, contenders=contenders, rubric=RUBRIC_NAMING)
            task = TaskFactory(testset=campaign.testset, category=f"{SECRET}_tickets")
            if slug == "rev":
                ReviewItemFactory(campaign=campaign, task=task)
            else:
                item = disputed_item(
                    campaign, cls.users["reviewer_a"], cls.users["reviewer_b"], task=task
                )
                item.reviews.filter(reviewer=cls.users["reviewer_a"]).update(
                    comment=f"B reads like {SECRET}, or Claude."
                )

    def assert_masked(self, response, *, api: bool = False):
        assert response.status_code == 200, response.content
        body = response.content.decode()
        for word in (SECRET, "Claude", "GPT-4o"):
            assert word not in body, word
        if api:
            data = json.loads(body)
            assert data["task"]["category"] == "[redacted]_tickets"
            dim = data["rubric"][0]
            assert dim["label"] == "Accuracy vs [redacted]"
            assert dim["description"] == "As [redacted] would judge it"
            assert dim["anchors"] == {"1": "wrong, like [redacted]", "5": "as right as [redacted]"}
        else:
            assert "[redacted] tickets</span>" in body  # the category badge
            assert 'title="wrong, like [redacted]"' in body  # an anchor, as a point's title
            assert "Accuracy vs [redacted]" in body
        return body

    def test_reviewers_see_the_category_and_rubric_masked(self):
        self.client.force_login(self.users["reviewer_a"])
        body = self.assert_masked(self.client.get(self.client.post("/review/rev/next").url))
        assert 'aria-label="Accuracy vs [redacted], output A"' in body
        assert "As [redacted] would judge it" in body
        api = {"HTTP_AUTHORIZATION": f"Bearer {ApiToken.issue(self.users['reviewer_b'])}"}
        self.assert_masked(self.client.post("/api/v1/campaigns/rev/next", **api), api=True)

    def test_arbiters_see_the_category_rubric_and_comments_masked(self):
        self.client.force_login(self.users["arbiter"])
        body = self.assert_masked(self.client.get(self.client.post("/arbitration/arb/next").url))
        assert "B reads like [redacted], or [redacted]." in body
        Arbitration.objects.update(state="open", arbiter=None)
        api = {"HTTP_AUTHORIZATION": f"Bearer {ApiToken.issue(self.users['arbiter'])}"}
        response = self.client.post("/api/v1/campaigns/arb/arbitration/next", **api)
        data = json.loads(self.assert_masked(response, api=True))
        comments = [r["comment"] for r in data["reviews"]]
        assert "B reads like [redacted], or [redacted]." in comments
