"""The arbitration page's lease heartbeat: service, view, page and browser."""

import re
from datetime import datetime, timedelta

import pytest
from django.test import TestCase
from django.urls import reverse
from django.utils import timezone

from reviews.arbitration.services import (
    ArbitrationGone,
    arbitration_claim_next,
    arbitration_heartbeat,
    arbitration_release,
    arbitration_resolve,
)
from reviews.models import Arbitration
from reviews.review import LeaseGone
from reviews.rubric import label_map
from tests.conftest import browser_login
from tests.factories import PASSWORD, CampaignFactory, UserFactory, personas
from tests.reviews.test_arbitration import disputed_item


def lapse(arbitration):
    Arbitration.objects.filter(pk=arbitration.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )


def resolve(arbitration, arbiter):
    labels = {label: int(pk) for label, pk in label_map(arbitration.order).items()}
    o1_label = min(labels, key=labels.get)
    other = next(label for label in labels if label != o1_label)
    return arbitration_resolve(
        token=arbitration.token,
        arbiter=arbiter,
        scores={o1_label: {"accuracy": 4}},
        preference=other,
        note="Output 1 is mostly right.",
    )


class ArbitrationHeartbeatServiceTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.arbiter = cls.users["arbiter"]
        cls.other = UserFactory(username="arbiter_2", roles=["arbiter"])
        cls.campaign = CampaignFactory()  # lease_minutes = 20
        cls.item = disputed_item(cls.campaign, cls.users["reviewer_a"], cls.users["reviewer_b"])

    def claim(self, user=None):
        return arbitration_claim_next(campaign=self.campaign, arbiter=user or self.arbiter)

    def test_it_extends_a_live_lease_by_one_lease_length(self):
        arbitration = self.claim()
        assert arbitration.claimed_at is not None
        Arbitration.objects.filter(pk=arbitration.pk).update(
            lease_expires_at=timezone.now() + timedelta(minutes=1)
        )
        extended = arbitration_heartbeat(token=arbitration.token, arbiter=self.arbiter)
        assert timezone.now() + timedelta(minutes=19) < extended
        assert extended <= timezone.now() + timedelta(minutes=20)
        assert Arbitration.objects.get(pk=arbitration.pk).lease_expires_at == extended

    def test_it_caps_the_lease_at_four_leases_after_the_claim(self):
        arbitration = self.claim()
        Arbitration.objects.filter(pk=arbitration.pk).update(
            claimed_at=timezone.now() - timedelta(minutes=79),
            lease_expires_at=timezone.now() + timedelta(seconds=30),
        )
        capped = arbitration_heartbeat(token=arbitration.token, arbiter=self.arbiter)
        assert capped < timezone.now() + timedelta(minutes=1, seconds=5)
        # Past the cap a heartbeat keeps what is left and never shortens it.
        left = timezone.now() + timedelta(minutes=5)
        Arbitration.objects.filter(pk=arbitration.pk).update(
            claimed_at=timezone.now() - timedelta(hours=5), lease_expires_at=left
        )
        assert arbitration_heartbeat(token=arbitration.token, arbiter=self.arbiter) == left

    def test_it_refuses_someone_elses_or_an_unknown_token(self):
        arbitration = self.claim()
        with pytest.raises(ArbitrationGone):
            arbitration_heartbeat(token=arbitration.token, arbiter=self.other)
        with pytest.raises(ArbitrationGone):
            arbitration_heartbeat(token="no-such-token", arbiter=self.arbiter)
        before = Arbitration.objects.get(pk=arbitration.pk).lease_expires_at
        assert before == arbitration.lease_expires_at

    def test_it_refuses_a_released_arbitration(self):
        arbitration = self.claim()
        arbitration_release(token=arbitration.token, arbiter=self.arbiter)
        with pytest.raises(ArbitrationGone):
            arbitration_heartbeat(token=arbitration.token, arbiter=self.arbiter)
        released = Arbitration.objects.get(pk=arbitration.pk)
        assert released.lease_expires_at is None and released.claimed_at is None

    def test_it_refuses_a_resolved_arbitration(self):
        arbitration = self.claim()
        resolve(arbitration, self.arbiter)
        before = Arbitration.objects.get(pk=arbitration.pk).lease_expires_at
        with self.assertRaisesMessage(LeaseGone, "You resolved this dispute"):
            arbitration_heartbeat(token=arbitration.token, arbiter=self.arbiter)
        assert Arbitration.objects.get(pk=arbitration.pk).lease_expires_at == before

    def test_it_does_not_revive_a_lapsed_lease(self):
        arbitration = self.claim()
        lapse(arbitration)
        assert arbitration_heartbeat(token=arbitration.token, arbiter=self.arbiter) is None
        assert Arbitration.objects.get(pk=arbitration.pk).lease_expires_at < timezone.now()

    def test_it_refuses_a_lapsed_lease_another_arbiter_took(self):
        first = self.claim()
        lapse(first)
        Arbitration.objects.filter(pk=first.pk).update(
            claimed_at=timezone.now() - timedelta(hours=2)
        )
        second = self.claim(self.other)
        assert second.pk == first.pk and second.token != first.token
        with pytest.raises(ArbitrationGone):
            arbitration_heartbeat(token=first.token, arbiter=self.arbiter)
        # The new holder's window starts at their own claim, not the first one's.
        assert second.claimed_at > timezone.now() - timedelta(minutes=1)
        extended = arbitration_heartbeat(token=second.token, arbiter=self.other)
        assert extended > timezone.now() + timedelta(minutes=19)

    def test_it_starts_a_new_window_only_when_resuming_a_lapsed_lease(self):
        first = self.claim()
        long_ago = timezone.now() - timedelta(hours=2)
        Arbitration.objects.filter(pk=first.pk).update(claimed_at=long_ago)
        # Resuming a live lease keeps its window (asking again cannot dodge the cap)...
        assert self.claim().claimed_at == long_ago
        # ...taking back a lapsed one nobody took is a new claim, as a revived review is.
        lapse(first)
        resumed = self.claim()
        assert resumed.token == first.token
        assert resumed.claimed_at > timezone.now() - timedelta(minutes=1)


class ArbitrationHeartbeatViewTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.other = UserFactory(username="arbiter_2", roles=["arbiter"])
        cls.campaign = CampaignFactory(slug="hb-camp")
        cls.item = disputed_item(cls.campaign, cls.users["reviewer_a"], cls.users["reviewer_b"])

    def setUp(self):
        self.arbitration = arbitration_claim_next(
            campaign=self.campaign, arbiter=self.users["arbiter"]
        )
        self.url = reverse("arbitration_heartbeat", args=[self.arbitration.token])

    def test_it_answers_the_new_expiry_as_json(self):
        self.client.force_login(self.users["arbiter"])
        response = self.client.post(self.url)
        assert response.status_code == 200 and response["Content-Type"] == "application/json"
        body = response.json()
        assert body["ok"] is True
        expires = datetime.fromisoformat(body["lease_expires_at"])
        assert expires == Arbitration.objects.get(pk=self.arbitration.pk).lease_expires_at
        assert expires > timezone.now() + timedelta(minutes=19)
        assert self.client.get(self.url).status_code == 405

    def test_it_says_when_the_lease_ran_out_and_when_the_item_went_to_someone_else(self):
        self.client.force_login(self.users["arbiter"])
        lapse(self.arbitration)
        response = self.client.post(self.url)
        assert response.status_code == 409
        assert response.json() == {
            "ok": False,
            "message": "Your time on this dispute ran out. "
            "Resolving may still work if no other arbiter took it.",
        }
        arbitration_claim_next(campaign=self.campaign, arbiter=self.other)
        response = self.client.post(self.url)
        assert response.status_code == 404
        assert response.json()["ok"] is False
        assert "not in your hands" in response.json()["message"]

    def test_it_requires_the_csrf_token(self):
        client = self.client_class(enforce_csrf_checks=True)
        client.force_login(self.users["arbiter"])
        assert client.post(self.url).status_code == 403
        client.get(reverse("arbitration_page", args=[self.arbitration.token]))
        token = client.cookies["csrftoken"].value
        response = client.post(self.url, headers={"X-CSRFToken": token})
        assert response.status_code == 200 and response.json()["ok"] is True

    def test_it_refuses_everybody_but_the_holder(self):
        before = Arbitration.objects.get(pk=self.arbitration.pk).lease_expires_at
        for who in ("admin", "lead", "reviewer_a", "outsider"):
            self.client.force_login(self.users[who])
            assert self.client.post(self.url).status_code == 403, who
        self.client.logout()
        assert self.client.post(self.url).status_code == 302
        # Another arbiter gets the same answer as for a token that does not exist.
        self.client.force_login(self.other)
        theirs = self.client.post(self.url)
        unknown = self.client.post(reverse("arbitration_heartbeat", args=["no-such-token"]))
        assert theirs.status_code == unknown.status_code == 404
        assert theirs.json() == unknown.json()
        assert Arbitration.objects.get(pk=self.arbitration.pk).lease_expires_at == before

    def test_the_page_carries_the_heartbeat_url_and_interval(self):
        self.client.force_login(self.users["arbiter"])
        page = self.client.get(reverse("arbitration_page", args=[self.arbitration.token]))
        html = page.content.decode()
        assert f'data-heartbeat-url="{self.url}"' in html
        assert 'data-heartbeat-ms="60000"' in html  # a 20-minute lease: once a minute
        assert "data-lease-status" in html
        # A dispute swapped in by htmx beats for its own token, a third of a short lease.
        resolve(self.arbitration, self.users["arbiter"])
        self.campaign.lease_minutes = 1
        self.campaign.save(update_fields=["lease_minutes"])
        second = disputed_item(self.campaign, self.users["reviewer_a"], self.users["reviewer_b"])
        response = self.client.post(
            reverse("arbitration_next", args=[self.campaign.slug]), HTTP_HX_REQUEST="true"
        )
        token = Arbitration.objects.get(item=second).token
        html = response.content.decode()
        assert f'data-heartbeat-url="{reverse("arbitration_heartbeat", args=[token])}"' in html
        assert 'data-heartbeat-ms="20000"' in html


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_open_page_keeps_its_lease_and_says_when_it_is_gone(browser_page):
    users = personas()
    other = UserFactory(username="arbiter_2", roles=["arbiter"])
    campaign = CampaignFactory(slug="hb-browser", name="Heartbeat campaign")
    item = disputed_item(campaign, users["reviewer_a"], users["reviewer_b"])
    page = browser_page
    # A fake clock in the page: the heartbeat's minute passes at once.
    page.clock.install()
    browser_login(page, "arbiter", PASSWORD)
    page.goto("/arbitration/")
    page.get_by_role("button", name="Start arbitrating").click()
    page.wait_for_url(re.compile(r"/arbitration/t/"))
    arbitration = Arbitration.objects.get(item=item)
    url = reverse("arbitration_heartbeat", args=[arbitration.token])

    with page.expect_response(lambda r: r.url.endswith(url)) as beat:
        page.clock.run_for(60_000)
    assert beat.value.status == 200 and beat.value.json()["ok"] is True
    assert beat.value.request.method == "POST"
    assert page.locator("[data-lease-status]").is_hidden()

    # The lease lapses and another arbiter takes the item: the next beat says so on the page.
    lapse(arbitration)
    arbitration_claim_next(campaign=campaign, arbiter=other)
    with page.expect_response(lambda r: r.url.endswith(url)) as beat:
        page.clock.run_for(60_000)
    assert beat.value.status == 404
    status = page.locator("[data-lease-status]")
    status.wait_for()
    assert "not in your hands" in status.inner_text()
    # The 404 is the expected answer, logged by Chromium as a failed resource; nothing else.
    assert [e for e in page.js_errors if "status of 404" not in e] == []
