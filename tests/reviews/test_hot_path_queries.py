"""The review loop's SQL statements on PostgreSQL, counted: a claim, a page and a submit, on
the web and in the API. The loop runs once per reviewed item, so a statement added to it costs
every review; these counts are today's, and a change that adds one must change them here,
where a reviewer of the change sees it. The statements are listed when a count is off.

Counted after one item went through the loop, as in a worker serving reviewers: the first
screen of a campaign in a process also reads its contenders' names to mask (then cached)."""

import json

import pytest
from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evalsite.models import ApiToken
from reviews.models import Assignment, Review, ReviewItem
from reviews.review.order import SHUFFLE_SPACE
from tests.factories import campaign_ready, personas
from tests.reviews.test_review_views import HTMX, form_data

# Statements per request (SAVEPOINT lines aside: the test's transaction turns a request's
# transactions into savepoints). A web submit also claims and shows the next item.
WEB_CLAIM, WEB_PAGE, WEB_SUBMIT = 8, 4, 14
API_CLAIM, API_SUBMIT = 8, 6
API_REVIEW = {
    "scores": {"A": {"accuracy": 4, "completeness": 3}, "B": {"accuracy": 2, "completeness": 3}},
    "preference": "A",
}


def statements(queries: CaptureQueriesContext) -> list[str]:
    sql = [q["sql"] for q in queries]
    return [q for q in sql if not q.startswith(("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO"))]


@pytest.mark.postgres
class HotPathQueryTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.reviewer = cls.users["reviewer_a"]
        cls.campaign = campaign_ready(items=4, overlap=1)
        # Every item after any reviewer's start in the offer order: each claim finds its item
        # in the same pass (the first fresh one), whatever the rows' ids in this test run.
        ReviewItem.objects.filter(campaign=cls.campaign).update(shuffle_key=SHUFFLE_SPACE - 1)
        cls.token = ApiToken.issue(cls.reviewer)

    def web_submit(self, assignment: Assignment, key: str):
        url = reverse("review_submit", args=[self.campaign.slug, assignment.token])
        response = self.client.post(url, form_data(assignment, key=key), headers=HTMX)
        assert response.status_code == 200 and "Saved." in response.content.decode()
        return response

    def api(self, url: str, body: dict | None = None):
        return self.client.post(
            url,
            data=json.dumps(body or {}),
            content_type="application/json",
            headers={"Authorization": f"Bearer {self.token}"},
        )

    def warm(self):
        """One item through the API loop: the campaign's masking words read and cached."""
        body = self.api(f"/api/v1/campaigns/{self.campaign.slug}/next").json()
        assert self.api(body["submit_url"], API_REVIEW).status_code == 201

    def test_a_web_claim_page_and_submit(self):
        self.warm()
        self.client.force_login(self.reviewer)
        with CaptureQueriesContext(connection) as claim:
            claimed = self.client.post(reverse("review_next", args=[self.campaign.slug]))
        assert claimed.status_code == 302
        assignment, url = (
            Assignment.objects.get(reviewer=self.reviewer, state="active"),
            claimed.url,
        )
        with CaptureQueriesContext(connection) as page:
            assert self.client.get(url).status_code == 200
        with CaptureQueriesContext(connection) as submit:
            self.web_submit(assignment, "key-1")  # saves, then claims and shows the next item
        assert Review.objects.filter(reviewer=self.reviewer).count() == 2
        assert len(statements(claim)) == WEB_CLAIM, statements(claim)
        assert len(statements(page)) == WEB_PAGE, statements(page)
        assert len(statements(submit)) == WEB_SUBMIT, statements(submit)

    def test_an_api_claim_and_submit(self):
        self.warm()
        next_url = f"/api/v1/campaigns/{self.campaign.slug}/next"
        with CaptureQueriesContext(connection) as claim:
            body = self.api(next_url).json()
        with CaptureQueriesContext(connection) as submit:
            saved = self.api(body["submit_url"], API_REVIEW)
        assert body["resumed"] is False and saved.status_code == 201
        assert len(statements(claim)) == API_CLAIM, statements(claim)
        assert len(statements(submit)) == API_SUBMIT, statements(submit)
