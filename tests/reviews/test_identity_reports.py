"""Reports that an answer reveals its model: reviewers and arbiters report, the item leaves
every queue at once with its reviews kept and marked, admins approve (optionally masking) or
drop it (out of the campaign and its figures), counted per campaign."""

import io
import json

from django.core.management import call_command
from django.test import TestCase
from django.urls import reverse

from evalsite.models import ApiToken
from reviews import review as services
from reviews.arbitration.services import arbitration_claim_next, arbitration_resolve
from reviews.identity_reports.services import identity_report_file, reviewer_report
from reviews.models import Arbitration, Assignment, IdentityReport, ReviewItem
from reviews.report.campaign import campaign_report
from tests.factories import CampaignFactory, UserFactory, campaign_ready, personas
from tests.reviews.helpers import full_review, invariant_violations
from tests.reviews.test_arbitration import disputed_item

LEAKY = "Hello, Orchid Pilot here: restart the router."
PLAIN = "Restart the router, then call support."


class ReportTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.tokens = {who: ApiToken.issue(u) for who, u in cls.users.items()}

    def setUp(self):
        self.campaign = campaign_ready(items=1, overlap=2, outputs=[LEAKY, PLAIN])
        self.item = ReviewItem.objects.get(campaign=self.campaign)

    def api(self, who: str, path: str, body=None):
        auth = {"HTTP_AUTHORIZATION": f"Bearer {self.tokens[who]}"}
        if body is None:
            return self.client.get(path, **auth)
        return self.client.post(path, json.dumps(body), "application/json", **auth)

    def claim(self, who: str) -> Assignment | None:
        claim = services.assignment_claim_next(campaign=self.campaign, reviewer=self.users[who])
        return claim.assignment if claim else None

    def report(self, who="reviewer_b", note="it says Orchid Pilot"):
        mine = self.claim(who)
        answer = self.api(who, f"/api/v1/assignments/{mine.token}/report-identity", {"note": note})
        assert answer.status_code == 201, answer.content
        return mine, IdentityReport.objects.get(item=self.item, reporter=self.users[who])

    def test_a_report_takes_the_item_out_of_every_queue_and_keeps_the_reviews_marked(self):
        first = self.claim("reviewer_a")
        services.assignment_submit(
            token=first.token, reviewer=self.users["reviewer_a"], key="k", data=full_review(first)
        )
        mine, report = self.report()
        assert report.note == "it says Orchid Pilot" and report.role == "reviewer"
        assert report.state == "open" and len(report.reviews_marked) == 1
        self.item.refresh_from_db()
        assert not self.item.ready and self.item.live_count == 1
        mine.refresh_from_db()
        assert mine.state == "released"  # their lease ended with the report
        # nobody else gets it now, on the page or the API
        third = UserFactory(username="reviewer_c", roles=["reviewer"])
        auth = {"HTTP_AUTHORIZATION": f"Bearer {ApiToken.issue(third)}"}
        assert (
            self.client.post(f"/api/v1/campaigns/{self.campaign.slug}/next", **auth).status_code
            == 204
        )
        self.client.force_login(third)
        self.client.post(reverse("review_next", args=[self.campaign.slug]))
        assert not Assignment.objects.filter(reviewer=third).exists()
        assert invariant_violations(self.campaign) == []
        # Its review so far is kept, marked on the item's page for admins and leads.
        self.client.force_login(self.users["lead"])
        page = self.client.get(
            reverse("campaign_item", args=[self.campaign.slug, self.item.task.external_id])
        ).content.decode()
        assert page.count("before a leak report") == 1

    def test_a_submit_after_the_report_is_refused(self):
        mine, _ = self.report()
        result = services.assignment_submit(
            token=mine.token, reviewer=self.users["reviewer_b"], key="k2", data=full_review(mine)
        )
        assert not result.ok and result.code == "released"

    def test_only_the_assignments_reviewer_may_report_it(self):
        mine = self.claim("reviewer_a")
        url = f"/api/v1/assignments/{mine.token}/report-identity"
        assert self.api("reviewer_b", url, {}).status_code == 404
        for who in ("arbiter", "outsider", "lead"):
            assert self.api(who, url, {}).status_code == 403
        assert self.api("reviewer_a", url, {"note": 3}).status_code == 400
        assert self.api("reviewer_a", url, {"why": "x"}).status_code == 400
        assert not IdentityReport.objects.exists()
        assert self.api("reviewer_a", url, {}).status_code == 201  # the note is optional

    def test_admins_list_and_leads_read_the_reports_with_the_texts(self):
        self.report()
        url = f"/api/v1/campaigns/{self.campaign.slug}/identity-reports"
        for who in ("admin", "lead"):
            answer = self.api(who, url)
            assert answer.status_code == 200
        body = answer.json()
        assert body["counts"] == {"reports": 1, "open": 1, "approved": 0, "dropped": 0}
        [report] = body["reports"]
        assert report["note"] == "it says Orchid Pilot" and report["reporter"] == "reviewer_b"
        assert sorted(o["text"] for o in report["outputs"]) == sorted([LEAKY, PLAIN])
        for who in ("reviewer_a", "arbiter", "outsider"):
            assert self.api(who, url).status_code == 403

    def test_approve_with_a_mask_returns_the_item_and_reviewers_get_it_masked(self):
        _, report = self.report()
        leaky = self.item.outputs.get(generation__output=LEAKY).generation
        start = LEAKY.index("Orchid Pilot")
        url = f"/api/v1/campaigns/{self.campaign.slug}/identity-reports/{report.pk}/resolve"
        assert self.api("lead", url, {"action": "approve"}).status_code == 403
        bad = self.api("admin", url, {"action": "approve", "mask": {str(leaky.pk): [[0, 999]]}})
        assert bad.status_code == 400 and bad.json()["errors"]
        answer = self.api(
            "admin",
            url,
            {"action": "approve", "mask": {str(leaky.pk): [[start, start + len("Orchid Pilot")]]}},
        )
        assert answer.status_code == 200 and answer.json() == {"resolved": 1, "state": "approved"}
        self.item.refresh_from_db()
        assert self.item.ready
        claim = self.api("reviewer_a", f"/api/v1/campaigns/{self.campaign.slug}/next", {})
        assert claim.status_code == 200
        texts = json.dumps([c["text"] for c in claim.json()["candidates"]])
        assert "Orchid" not in texts and "Hello, [redacted] here" in texts
        assert self.api("admin", url, {"action": "approve"}).status_code == 409

    def test_drop_takes_the_item_out_of_the_campaign_and_its_figures(self):
        first = self.claim("reviewer_a")
        services.assignment_submit(
            token=first.token, reviewer=self.users["reviewer_a"], key="k", data=full_review(first)
        )
        _, report = self.report()
        url = f"/api/v1/campaigns/{self.campaign.slug}/identity-reports/{report.pk}/resolve"
        no_reason = self.api("admin", url, {"action": "drop"})
        assert no_reason.status_code == 400 and "reason" in json.dumps(no_reason.json())
        answer = self.api("admin", url, {"action": "drop", "reason": "names the model twice"})
        assert answer.status_code == 200
        self.item.refresh_from_db()
        assert self.item.state == "dropped" and not self.item.ready
        report.refresh_from_db()
        assert report.resolution == "names the model twice" and report.resolved_by is not None
        figures = campaign_report(campaign=self.campaign, n_boot=10)
        assert figures["progress"]["items"] == 0
        assert self.claim("lead") is None


class ArbiterReportTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.tokens = {who: ApiToken.issue(u) for who, u in cls.users.items()}

    def test_an_arbiter_report_takes_the_dispute_back_until_an_admin_approves(self):
        campaign = CampaignFactory()
        item = disputed_item(campaign, self.users["reviewer_a"], self.users["reviewer_b"])
        arbitration = arbitration_claim_next(campaign=campaign, arbiter=self.users["arbiter"])
        url = f"/api/v1/arbitrations/{arbitration.token}/report-identity"
        auth = {"HTTP_AUTHORIZATION": f"Bearer {self.tokens['reviewer_a']}"}
        assert self.client.post(url, "{}", "application/json", **auth).status_code == 403
        auth = {"HTTP_AUTHORIZATION": f"Bearer {self.tokens['arbiter']}"}
        answer = self.client.post(
            url, '{"note": "B says it is Orchid"}', "application/json", **auth
        )
        assert answer.status_code == 201
        arbitration.refresh_from_db()
        assert arbitration.state == "open" and arbitration.arbiter is None
        report = IdentityReport.objects.get(item=item)
        assert report.role == "arbiter" and len(report.reviews_marked) == 2
        assert arbitration_claim_next(campaign=campaign, arbiter=self.users["arbiter"]) is None
        self.client.force_login(self.users["admin"])
        self.client.post(
            reverse("campaign_identity_report_resolve", args=[campaign.slug, report.pk]),
            {"action": "approve"},
        )
        again = arbitration_claim_next(campaign=campaign, arbiter=self.users["arbiter"])
        assert again is not None and again.pk == arbitration.pk


class ArbiterPageTests(TestCase):
    def test_the_arbitration_page_has_the_key_and_its_form_reports(self):
        users = personas()
        campaign = CampaignFactory()
        item = disputed_item(campaign, users["reviewer_a"], users["reviewer_b"])
        self.client.force_login(users["arbiter"])
        self.client.post(reverse("arbitration_next", args=[campaign.slug]))
        arbitration = Arbitration.objects.get(item=item)
        page = self.client.get(reverse("arbitration_page", args=[arbitration.token]))
        body = page.content.decode()
        assert "This answer reveals the model <kbd>r</kbd>" in body
        assert "<kbd>r</kbd></th><td>report that an answer reveals which model wrote it" in body
        url = reverse("arbitration_report_identity", args=[arbitration.token])
        self.client.force_login(users["reviewer_a"])
        assert self.client.post(url, {"note": "x"}).status_code == 403
        self.client.force_login(users["arbiter"])
        done = self.client.post(url, {"note": "B signs as Orchid"}, follow=True)
        assert "Reported: the item left every queue" in done.content.decode()
        report = IdentityReport.objects.get(item=item)
        assert report.role == "arbiter" and report.note == "B signs as Orchid"
        arbitration.refresh_from_db()
        assert arbitration.state == "open" and arbitration.arbiter is None


class ReportPageTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def setUp(self):
        self.campaign = campaign_ready(items=2, overlap=1, outputs=[LEAKY, PLAIN])

    def test_the_review_page_has_the_key_and_reporting_moves_on(self):
        self.client.force_login(self.users["reviewer_a"])
        page = self.client.post(reverse("review_next", args=[self.campaign.slug]), follow=True)
        body = page.content.decode()
        assert "This answer reveals the model <kbd>r</kbd>" in body
        assert "<kbd>r</kbd></th><td>report that an answer reveals which model wrote it" in body
        token = Assignment.objects.get(reviewer=self.users["reviewer_a"]).token
        url = reverse("review_report_identity", args=[self.campaign.slug, token])
        after = self.client.post(url, {"note": "Orchid"}, follow=True).content.decode()
        assert "Reported: the item left every queue" in after
        mine = Assignment.objects.filter(reviewer=self.users["reviewer_a"])
        assert mine.count() == 2 and mine.filter(state="active").exists()  # the next item
        assert IdentityReport.objects.get().note == "Orchid"
        # someone else's token: 404
        self.client.force_login(self.users["reviewer_b"])
        assert self.client.post(url).status_code == 404

    def test_admins_resolve_on_the_reports_page_and_leads_only_read(self):
        claim = services.assignment_claim_next(
            campaign=self.campaign, reviewer=self.users["reviewer_a"]
        )
        report = reviewer_report(token=claim.assignment.token, reviewer=self.users["reviewer_a"])
        page = reverse("campaign_identity_reports", args=[self.campaign.slug])
        self.client.force_login(self.users["lead"])
        body = self.client.get(page).content.decode()
        assert "1 report" in body and LEAKY in body and 'value="approve"' not in body
        resolve = reverse("campaign_identity_report_resolve", args=[self.campaign.slug, report.pk])
        assert self.client.post(resolve, {"action": "approve"}).status_code == 403
        self.client.force_login(self.users["reviewer_a"])
        assert self.client.get(page).status_code == 403
        self.client.force_login(self.users["admin"])
        body = self.client.get(page).content.decode()
        assert 'value="approve"' in body and "[redacted]" not in body.split(LEAKY)[0][-5:]
        leaky = claim.assignment.item.outputs.get(generation__output=LEAKY).generation
        done = self.client.post(
            resolve, {"action": "approve", f"mask-{leaky.pk}": "orchid pilot"}, follow=True
        )
        assert "Approved: the item is back in the queues." in done.content.decode()
        leaky.refresh_from_db()
        assert [m["text"] for m in leaky.identity_masks] == ["Orchid Pilot"]
        detail = self.client.get(reverse("campaign_detail", args=[self.campaign.slug]))
        assert "1 identity report (an answer that reveals its model)" in detail.content.decode()


class DroppedItemExportTests(TestCase):
    """A dropped item is out of the review-records export (API and command, JSONL and CSV) and
    out of the report, its reviews and its arbitration alike; the other items' stay."""

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.tokens = {who: ApiToken.issue(u) for who, u in cls.users.items()}

    def export(self, fmt: str = "jsonl") -> str:
        auth = {"HTTP_AUTHORIZATION": f"Bearer {self.tokens['lead']}"}
        url = f"/api/v1/campaigns/{self.campaign.slug}/reviews?format={fmt}"
        answer = self.client.get(url, **auth)
        assert answer.status_code == 200
        return b"".join(answer.streaming_content).decode()

    def test_a_dropped_items_reviews_and_arbitration_leave_the_export_and_the_report(self):
        reviewers = self.users["reviewer_a"], self.users["reviewer_b"]
        self.campaign = CampaignFactory()
        dropped = disputed_item(self.campaign, *reviewers)
        arbitration = arbitration_claim_next(campaign=self.campaign, arbiter=self.users["arbiter"])
        label_of = dict(zip(["A", "B"], arbitration.order, strict=True))
        first = next(
            label for label, pk in label_of.items() if int(pk) == min(map(int, label_of.values()))
        )
        result, _ = arbitration_resolve(
            token=arbitration.token,
            arbiter=self.users["arbiter"],
            scores={first: {"accuracy": 4}},
            preference="A",
            note="settled",
        )
        assert result.state == "resolved"
        kept = disputed_item(self.campaign, *reviewers)
        records = [json.loads(line) for line in self.export().splitlines()]
        assert len(records) == 5  # two reviews of each item, then the arbitration
        report = identity_report_file(
            item_id=dropped.pk, reporter=self.users["reviewer_a"], role="reviewer", note="leak"
        )
        url = f"/api/v1/campaigns/{self.campaign.slug}/identity-reports/{report.pk}/resolve"
        auth = {"HTTP_AUTHORIZATION": f"Bearer {self.tokens['admin']}"}
        answer = self.client.post(
            url,
            json.dumps({"action": "drop", "reason": "names its model"}),
            "application/json",
            **auth,
        )
        assert answer.status_code == 200
        records = [json.loads(line) for line in self.export().splitlines()]
        assert [r["task_id"] for r in records] == [kept.task.external_id] * 2
        assert not any(r.get("arbitration") for r in records)
        csv_rows = self.export("csv").splitlines()
        assert len(csv_rows) == 3 and dropped.task.external_id not in "\n".join(csv_rows)
        out = io.StringIO()
        call_command("export_reviews", "--campaign", self.campaign.slug, stdout=out)
        assert [json.loads(line)["task_id"] for line in out.getvalue().splitlines()] == [
            kept.task.external_id
        ] * 2
        figures = campaign_report(campaign=self.campaign, n_boot=10)
        assert figures["progress"]["items"] == 1 and figures["progress"]["reviews_done"] == 2
        assert figures["progress"]["resolved"] == 0
