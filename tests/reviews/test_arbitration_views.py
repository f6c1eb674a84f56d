"""Arbiter pages, the arbitration API, the lead's disputes view, and the blinding canary."""

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import TestCase
from django.utils import timezone

from evalsite.models import ApiToken
from reviews.disputes.rules import item_settle
from reviews.models import Arbitration, ItemOutput, ReviewItem
from reviews.rubric import label_map
from tasks.models import Contender, Generation
from tests.conftest import arrows_scroll, browser_login, wait_until
from tests.factories import (
    PASSWORD,
    CampaignFactory,
    ReviewItemFactory,
    TaskFactory,
    UserFactory,
    personas,
    review_create,
)
from tests.reviews.test_arbitration import disputed_item

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def api_token(user) -> str:
    return ApiToken.issue(user)


def htmx(**extra):
    return {"HTTP_HX_REQUEST": "true", **extra}


def o1_label(arbitration) -> str:
    labels = label_map(arbitration.order)
    return next(k for k, v in labels.items() if int(v) == min(int(x) for x in labels.values()))


class ArbitrationPageTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = CampaignFactory(slug="support-q4", name="Support Q4")
        cls.item = disputed_item(cls.campaign, cls.users["reviewer_a"], cls.users["reviewer_b"])
        cls.arbiter_2 = UserFactory(username="arbiter_2", roles=["arbiter"])

    def login(self, who):
        user = self.users[who] if isinstance(who, str) else who
        self.client.force_login(user)
        return user

    def claim(self):
        self.login("arbiter")
        response = self.client.post("/arbitration/support-q4/next")
        assert response.status_code == 302
        arbitration = Arbitration.objects.get(item=self.item)
        assert response.url == f"/arbitration/t/{arbitration.token}/"
        return arbitration

    def test_it_lists_the_queue_for_arbiters_only(self):
        self.login("arbiter")
        response = self.client.get("/arbitration/")
        assert response.status_code == 200
        body = response.content.decode()
        assert "Support Q4" in body and "Start arbitrating" in body
        for who in ("reviewer_a", "lead", "outsider"):
            self.login(who)
            assert self.client.get("/arbitration/").status_code == 403
        self.client.logout()
        assert self.client.get("/arbitration/").status_code == 302

    def test_it_shows_the_dispute_blind_with_reviewers_as_numbers(self):
        arbitration = self.claim()
        response = self.client.get(f"/arbitration/t/{arbitration.token}/")
        assert response.status_code == 200
        body = response.content.decode()
        assert "Reviewer 1" in body and "Reviewer 2" in body
        assert "reviewer_a" not in body and "reviewer_b" not in body
        assert 'hx-history="false"' in body
        label = o1_label(arbitration)
        # The disputed cell has required radios and no "keep"; the agreed ones keep the mean.
        assert f'name="score-{label}-accuracy" value="3" required' in body
        assert f'name="score-{label}-completeness" value="" checked' in body
        assert "keep 4" in body and "keep 3.5" in body
        assert 'data-arb-group="preference" data-disputed' in body
        # flags and choices worded as on the review page
        assert 'value="format_violation"> format violation' in body and "> Both bad" in body
        home = self.client.get("/arbitration/").content.decode()
        assert f'href="/arbitration/t/{arbitration.token}/"' in home and "Continue" in home
        # The partial is served to htmx from the same view.
        partial = self.client.get(f"/arbitration/t/{arbitration.token}/", **htmx())
        assert (
            partial.status_code == 200
            and b"<html" not in partial.content
            and b"arb-form" in partial.content
        )

    def test_it_returns_404_for_another_arbiters_token(self):
        arbitration = self.claim()
        self.login(self.arbiter_2)
        assert self.client.get(f"/arbitration/t/{arbitration.token}/").status_code == 404
        response = self.client.post(f"/arbitration/t/{arbitration.token}/resolve", {"note": "x"})
        assert response.status_code == 404
        assert Arbitration.objects.get(pk=arbitration.pk).state == "active"

    def test_it_rerenders_the_form_with_errors_then_resolves(self):
        arbitration = self.claim()
        label = o1_label(arbitration)
        url = f"/arbitration/t/{arbitration.token}/resolve"
        response = self.client.post(url, {f"score-{label}-accuracy": "4"}, **htmx())
        assert response.status_code == 200
        body = response.content.decode()
        assert "choose an output, Tie or Both bad" in body
        assert "a note explaining the decision is required" in body
        assert f'name="score-{label}-accuracy" value="4" checked' in body  # kept what was entered
        assert ReviewItem.objects.get(pk=self.item.pk).state == "disputed"
        response = self.client.post(
            url,
            {f"score-{label}-accuracy": "4", "preference": "tie", "note": "Both fine."},
            **htmx(),
        )
        assert response.status_code == 200
        assert b"Dispute resolved" in response.content
        assert b"No more disputed items are waiting for you in" in response.content  # not "0 more"
        item = ReviewItem.objects.get(pk=self.item.pk)
        assert item.state == "resolved" and item.final["preference"] == "tie"
        assert Arbitration.objects.get(pk=arbitration.pk).note == "Both fine."
        # A double submit (a retried request) changes nothing and still answers.
        again = self.client.post(
            url,
            {f"score-{label}-accuracy": "4", "preference": "tie", "note": "Both fine."},
            **htmx(),
        )
        assert again.status_code == 200 and b"Dispute resolved" in again.content
        # Other values (another tab still open) are not taken for saved.
        other = self.client.post(
            url, {f"score-{label}-accuracy": "2", "preference": "tie", "note": "x"}, **htmx()
        )
        assert other.status_code == 200 and b"Dispute resolved" not in other.content
        assert b"Already resolved" in other.content and b"were not saved" in other.content
        assert Arbitration.objects.get(pk=arbitration.pk).note == "Both fine."
        # Back to the page later (Back, a bookmark): it says the dispute was resolved.
        page = self.client.get(f"/arbitration/t/{arbitration.token}/")
        assert page.status_code == 200 and b"You resolved this dispute" in page.content
        self.login(self.arbiter_2)  # someone else's resolved token: nothing confirmed
        other = self.client.get(f"/arbitration/t/{arbitration.token}/")
        assert other.status_code == 404 and b"You resolved" not in other.content

    def test_it_lists_what_is_missing_in_the_pages_words_and_the_boxs_order(self):
        arbitration = self.claim()
        label = o1_label(arbitration)
        response = self.client.post(f"/arbitration/t/{arbitration.token}/resolve", {}, **htmx())
        body = response.content.decode()
        box = body.split('id="arb-reasons-h"')[1].split("</section>")[0]
        assert re.findall(r"<strong>(.*?)</strong>", box) == ["Preference", "Accuracy"]
        summary = body.split('class="error arb-errors"')[1].split("</ul>")[0]
        # The box's order, the form's names ("Tie", "Both bad"), none of the API's keys.
        assert re.findall(r"<li>(.*?)</li>", summary) == [
            "Preference: choose an output, Tie or Both bad",
            f"Output {label}, Accuracy: a value is required (disputed)",
            "Note: a note explaining the decision is required",
        ]
        assert "scores." not in body and "tie or both_bad" not in body

    def test_it_shows_role_labels_only_for_a_conversation(self):
        arbitration = self.claim()
        body = self.client.get(f"/arbitration/t/{arbitration.token}/").content.decode()
        task = body.split('id="arb-task-h"')[1].split("</section>")[0]
        assert task.count('<div class="md prompt"') == 1
        assert ">user<" not in task and 'class="role"' not in task
        chat = CampaignFactory(slug="chat", name="Chat")
        messages = [
            {"role": "user", "content": "My order **#7** is late."},
            {"role": "assistant", "content": "Sorry! Which address?"},
            {"role": "user", "content": "Berlin office."},
        ]
        turns = TaskFactory(testset=chat.testset, prompt="", messages=messages)
        disputed_item(chat, self.users["reviewer_a"], self.users["reviewer_b"], task=turns)
        page = self.client.get(self.client.post("/arbitration/chat/next").url).content.decode()
        task = page.split('id="arb-task-h"')[1].split("</section>")[0]
        assert re.findall(r'<span class="role">(\w+)</span>', task) == ["user", "assistant", "user"]
        assert '<li class="turn turn-assistant">' in task and "<strong>#7</strong>" in task

    def test_it_offers_the_review_pages_keys(self):
        arbitration = self.claim()
        body = self.client.get(f"/arbitration/t/{arbitration.token}/").content.decode()
        preference = body.split('data-arb-group="preference"')[1].split("</fieldset>")[0]
        # A digit picks the n-th choice, as in the review page's "Which output is better?".
        assert re.findall(r'value="(\w+)"[^>]*> ([^<]+) <kbd>(\d)</kbd>', preference) == [
            ("A", "Output A", "1"),
            ("B", "Output B", "2"),
            ("tie", "Tie", "3"),
            ("both_bad", "Both bad", "4"),
        ]
        shortcuts = body.split('<dialog id="shortcuts"')[1].split("</dialog>")[0]
        assert "<th><kbd>x</kbd></th><td>N/A, where a score allows it" in shortcuts
        # The old n (N/A) and t (tie) are gone; t moves between a conversation's turns.
        assert "<kbd>n</kbd>" not in shortcuts and "<kbd>t</kbd></th>" not in body
        assert "<kbd>t</kbd> / <kbd>T</kbd></th><td>next / previous turn" in shortcuts
        assert 'data-shortcuts-open aria-keyshortcuts="?"' in body

    def test_it_hands_an_item_back_to_the_queue(self):
        arbitration = self.claim()
        response = self.client.post(f"/arbitration/t/{arbitration.token}/release")
        assert response.status_code == 302
        home = self.client.get(response.url).content.decode()
        # Said in the status region (announced), and as the service has it: open to anyone.
        assert re.search(
            r'<div class="messages" role="status"[^>]*><ul><li class="msg-success">Handed back: '
            r"the dispute is in the arbitration queue again, for any arbiter \(you too\); "
            r"nothing you chose on it was saved\.</li>",
            home,
        )
        assert Arbitration.objects.get(pk=arbitration.pk).state == "open"
        again = self.client.get(f"/arbitration/t/{arbitration.token}/")
        assert again.status_code == 404 and b"handed back" in again.content

    def test_it_says_why_an_output_has_no_text(self):
        Generation.objects.filter(item_outputs__item=self.item).update(output="")
        arbitration = self.claim()
        body = self.client.get(f"/arbitration/t/{arbitration.token}/").content.decode()
        assert body.count("No text to show: this output is empty, or it has not been") == 2

    def test_it_says_how_many_disputes_another_arbiter_holds(self):
        self.claim()
        self.login(self.arbiter_2)
        home = self.client.get("/arbitration/").content.decode()
        assert "1 being arbitrated by another arbiter now" in home and "nothing waiting" in home
        empty = self.client.post("/arbitration/support-q4/next", **htmx())
        assert b"1 is being arbitrated by another arbiter now." in empty.content

    def test_it_says_when_nothing_is_left(self):
        self.login("reviewer_a")  # an arbiter who reviewed the only disputed item
        self.users["reviewer_a"].groups.add(self.users["arbiter"].groups.get())
        response = self.client.post("/arbitration/support-q4/next", **htmx())
        assert response.status_code == 200
        assert b"Nothing left for you" in response.content
        assert b"you reviewed yourself go to another arbiter" in response.content

    def test_it_shows_leads_the_disputes_with_filters_and_counts(self):
        agreed_campaign_item = disputed_item(
            self.campaign, self.users["reviewer_a"], self.arbiter_2, acc=(4, 4), prefs=("tie", "B")
        )
        arbitration = self.claim()
        label = o1_label(arbitration)
        self.client.post(
            f"/arbitration/t/{arbitration.token}/resolve",
            {f"score-{label}-accuracy": "4", "preference": "tie", "note": "Close call."},
        )
        self.login("lead")
        response = self.client.get("/campaigns/support-q4/disputes/")
        assert response.status_code == 200
        body = response.content.decode()
        assert "Close call." in body and "arbiter" in body
        assert "set accuracy, preference" in body
        # kept on one line, and opening the item's page
        assert f'<td class="task-id"><a href="/campaigns/{self.item.campaign.slug}/items/' in body
        assert f'">{self.item.task.external_id}</a>' in body
        assert re.search(r"Resolved</div><div class=\"stat\">1<", body)
        assert re.search(r"Open</div><div class=\"stat\">1<", body)
        contender = (
            ItemOutput.objects.filter(item=self.item)
            .order_by("pk")
            .first()
            .generation.contender.name
        )
        assert contender in body  # leads see identities
        only_accuracy = self.client.get(
            "/campaigns/support-q4/disputes/?dimension=accuracy", **htmx()
        )
        assert only_accuracy.status_code == 200 and b"<html" not in only_accuracy.content
        assert b"1 matching dispute." in only_accuracy.content
        by_reviewer = self.client.get(
            "/campaigns/support-q4/disputes/?reviewer=arbiter_2"
        ).content.decode()
        assert (
            "1 matching dispute." in by_reviewer
            and agreed_campaign_item.task.external_id in by_reviewer
        )
        resolved = self.client.get(
            "/campaigns/support-q4/disputes/?status=resolved"
        ).content.decode()
        assert "1 matching dispute." in resolved and "Close call." in resolved
        summary = self.client.get(
            "/campaigns/support-q4/disputes/?summary=1", **htmx()
        ).content.decode()
        assert (
            "2 disputed items: <strong>1</strong> open · <strong>0</strong> in progress · <strong>1</strong> resolved"
            in summary
        )
        campaign_page = self.client.get("/campaigns/support-q4/").content.decode()
        assert 'hx-get="/campaigns/support-q4/disputes/?summary=1"' in campaign_page
        for who in ("arbiter", "reviewer_a"):
            self.login(who)
            assert self.client.get("/campaigns/support-q4/disputes/").status_code == 403
        self.login("admin")
        assert self.client.get("/campaigns/support-q4/disputes/").status_code == 200


class ArbitrationApiTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = CampaignFactory(slug="api-camp")
        cls.item = disputed_item(cls.campaign, cls.users["reviewer_a"], cls.users["reviewer_b"])

    def setUp(self):
        self.token = api_token(self.users["arbiter"])
        self.auth = {"HTTP_AUTHORIZATION": f"Bearer {self.token}"}

    def post(self, url, data=None, **extra):
        return self.client.post(
            url, json.dumps(data or {}), content_type="application/json", **self.auth, **extra
        )

    def test_it_serves_the_next_dispute_mapped_to_labels_then_204(self):
        response = self.post("/api/v1/campaigns/api-camp/arbitration/next")
        assert response.status_code == 200
        data = response.json()
        arbitration = Arbitration.objects.get(item=self.item)
        assert data["token"] == arbitration.token
        assert [c["label"] for c in data["candidates"]] == ["A", "B"]
        # the task in the reviewer's shape: a single prompt is `prompt`, not `messages`
        assert data["task"] == {
            "category": self.item.task.category,
            "prompt": self.item.task.prompt,
        }
        assert [r["reviewer"] for r in data["reviews"]] == ["Reviewer 1", "Reviewer 2"]
        label = o1_label(arbitration)
        assert sorted(r["scores"][label]["accuracy"] for r in data["reviews"]) == [2.0, 5.0]
        assert {(d["part"], d["label"]) for d in data["disputed"]} == {
            ("accuracy", label),
            ("preference", None),
        }
        assert data["agreed"]["scores"][label] == {"accuracy": None, "completeness": 4.0}
        assert [d["key"] for d in data["rubric"]] == ["accuracy", "completeness"]
        # Resuming returns the same token; another campaign with nothing left answers 204.
        assert (
            self.post("/api/v1/campaigns/api-camp/arbitration/next").json()["token"]
            == arbitration.token
        )
        CampaignFactory(slug="empty-camp")
        assert self.post("/api/v1/campaigns/empty-camp/arbitration/next").status_code == 204

    def test_it_validates_and_resolves_idempotently(self):
        data = self.post("/api/v1/campaigns/api-camp/arbitration/next").json()
        arbitration = Arbitration.objects.get(item=self.item)
        # The arbiter sees the outputs in the reverse of their stored (contender) order.
        Arbitration.objects.filter(pk=arbitration.pk).update(
            order=sorted(arbitration.order, reverse=True)
        )
        arbitration.refresh_from_db()
        label = o1_label(arbitration)
        url = f"/api/v1/arbitrations/{data['token']}/resolve"
        bad = self.post(url, {"scores": {}, "preference": "tie"})
        assert bad.status_code == 400
        assert bad.json()["errors"] == {
            f"scores.{label}.accuracy": "disputed: a value is required",
            "note": "a note explaining the decision is required",
        }
        unknown = self.post(url, {"note": "x", "colour": 1})
        assert unknown.status_code == 400
        assert unknown.json()["errors"]["colour"] == (
            "unknown field; accepted: scores, preference, flags, note"
        )
        body = {"scores": {label: {"accuracy": 3}}, "preference": label, "note": "A is closer."}
        ok = self.post(url, body)
        assert ok.status_code == 200
        result = ok.json()
        assert result["state"] == "resolved" and result["already_resolved"] is False
        assert result["final"]["preference"] == label
        assert result["final"]["scores"][label]["accuracy"] == 3.0
        assert result["final"]["arbitrated"] == ["accuracy", "preference"]
        # keys in the arbiter's label order, never the contenders' (key order is identity too)
        assert list(result["final"]["scores"]) == ["A", "B"]
        assert list(result["final"]["flags"]) in (["A", "B"], ["A"], ["B"], [])
        # A retry of the same resolve answers as before; other values are refused, not dropped.
        again = self.post(url, body)
        assert again.status_code == 200 and again.json()["already_resolved"] is True
        assert again.json()["final"] == result["final"]
        changed = self.post(url, {**body, "preference": "tie"})
        assert changed.status_code == 409 and changed.json()["already_resolved"] is True
        assert "already resolved" in changed.json()["error"]
        assert "not saved" in changed.json()["error"]
        assert ReviewItem.objects.get(pk=self.item.pk).final["preference"] == str(
            label_map(arbitration.order)[label]
        )
        assert self.post("/api/v1/arbitrations/not-a-token/resolve", body).status_code == 404

    def test_it_lists_every_problem_of_a_malformed_resolve(self):
        data = self.post("/api/v1/campaigns/api-camp/arbitration/next").json()
        label = o1_label(Arbitration.objects.get(token=data["token"]))
        bad = self.post(data["resolve_url"], {"scores": "x", "note": 5, "flags": "y"})
        assert bad.status_code == 400
        assert bad.json()["errors"] == {
            "scores": "must be an object keyed by output label",
            f"scores.{label}.accuracy": "disputed: a value is required",
            "preference": "disputed: choose an output, tie or both_bad",
            "flags": "must be an object keyed by output label",
            "note": "must be a string: a note explaining the decision",
        }
        typed = self.post(data["resolve_url"], {"preference": ["A"], "note": "n", "x": 1})
        assert typed.status_code == 400
        assert set(typed.json()["errors"]) == {f"scores.{label}.accuracy", "preference", "x"}

    def test_it_refuses_a_new_fractional_value_on_an_ordinal_scale(self):
        data = self.post("/api/v1/campaigns/api-camp/arbitration/next").json()
        label = o1_label(Arbitration.objects.get(token=data["token"]))
        other = "B" if label == "A" else "A"
        body = {"scores": {label: {"accuracy": 3.5}}, "preference": "tie", "note": "n"}
        bad = self.post(data["resolve_url"], body)
        assert bad.status_code == 400
        assert bad.json()["errors"] == {
            f"scores.{label}.accuracy": "must be a whole number on this ordinal scale"
        }
        # The agreed 3.5 (the mean of 3 and 4) may be sent back as it is.
        body["scores"] = {label: {"accuracy": 3}, other: {"accuracy": 3.5}}
        ok = self.post(data["resolve_url"], body)
        assert ok.status_code == 200 and ok.json()["final"]["scores"][other]["accuracy"] == 3.5
        assert ok.json()["final"]["corrections"] == []

    def test_it_lists_errors_in_label_order_not_the_contenders(self):
        campaign = CampaignFactory(slug="two-disputes")
        item = ReviewItemFactory(campaign=campaign)
        o1, o2 = item.outputs.order_by("pk")  # in contender order
        for reviewer, (one, two) in (("reviewer_a", (5, 1)), ("reviewer_b", (1, 5))):
            review_create(
                item,
                self.users[reviewer],
                scores={o1: {"accuracy": one, "completeness": 3}, o2: {"accuracy": two}},
                preference="tie",
            )
        item_settle(item)
        data = self.post("/api/v1/campaigns/two-disputes/arbitration/next").json()
        # The arbiter's A is the second contender's output: the key order must not say so.
        Arbitration.objects.filter(token=data["token"]).update(order=[o2.pk, o1.pk])
        bad = self.post(f"/api/v1/arbitrations/{data['token']}/resolve", {"note": "x"})
        assert bad.status_code == 400
        assert list(bad.json()["errors"]) == ["scores.A.accuracy", "scores.B.accuracy"]

    def test_a_heartbeat_keeps_the_lease_and_says_when_it_is_gone(self):
        data = self.post("/api/v1/campaigns/api-camp/arbitration/next").json()
        assert data["resolve_url"] == f"/api/v1/arbitrations/{data['token']}/resolve"
        assert data["heartbeat_url"] == f"/api/v1/arbitrations/{data['token']}/heartbeat"
        Arbitration.objects.filter(token=data["token"]).update(
            lease_expires_at=timezone.now() + timedelta(minutes=1)
        )
        beat = self.post(data["heartbeat_url"])
        assert beat.status_code == 200 and beat.json()["ok"] is True
        stored = Arbitration.objects.get(token=data["token"])
        assert timezone.now() + timedelta(minutes=19) < stored.lease_expires_at
        assert beat.json()["lease_expires_at"] == stored.lease_expires_at.isoformat()
        # Another arbiter's bearer token, or an unknown one, finds nothing.
        other = UserFactory(username="arbiter_hb", roles=["arbiter"])
        foreign = self.client.post(
            data["heartbeat_url"],
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {api_token(other)}",
        )
        assert foreign.status_code == 404
        assert self.post("/api/v1/arbitrations/not-a-token/heartbeat").status_code == 404
        Arbitration.objects.filter(token=data["token"]).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
        lapsed = self.post(data["heartbeat_url"])
        assert lapsed.status_code == 409 and "ran out" in lapsed.json()["error"]
        # Once resolved, a heartbeat (a tab still open) says so, not that time ran out.
        Arbitration.objects.filter(token=data["token"]).update(
            lease_expires_at=timezone.now() + timedelta(minutes=5)
        )
        label = o1_label(Arbitration.objects.get(token=data["token"]))
        body = {"scores": {label: {"accuracy": 3}}, "preference": "tie", "note": "Fine."}
        assert self.post(data["resolve_url"], body).status_code == 200
        after = self.post(data["heartbeat_url"])
        assert after.status_code == 409 and "You resolved this dispute" in after.json()["error"]

    def test_it_rejects_a_stale_token(self):
        data = self.post("/api/v1/campaigns/api-camp/arbitration/next").json()
        Arbitration.objects.filter(token=data["token"]).update(
            lease_expires_at="2000-01-01T00:00:00Z"
        )
        other = UserFactory(username="arbiter_x", roles=["arbiter"])
        other_auth = {"HTTP_AUTHORIZATION": f"Bearer {api_token(other)}"}
        taken = self.client.post(
            "/api/v1/campaigns/api-camp/arbitration/next",
            content_type="application/json",
            **other_auth,
        )
        assert taken.status_code == 200 and taken.json()["token"] != data["token"]
        stale = self.post(
            f"/api/v1/arbitrations/{data['token']}/resolve",
            {
                "scores": {"A": {"accuracy": 3}, "B": {"accuracy": 3}},
                "preference": "tie",
                "note": "n",
            },
        )
        assert stale.status_code == 404
        assert "another arbiter" in stale.json()["error"]
        assert ReviewItem.objects.get(pk=self.item.pk).state == "disputed"

    def test_it_refuses_other_roles(self):
        from io import StringIO

        from django.core.management import call_command

        out = StringIO()
        call_command("add_user", "rev_api", "--role", "reviewer", stdout=out, stderr=StringIO())
        raw = out.getvalue().strip()
        response = self.client.post(
            "/api/v1/campaigns/api-camp/arbitration/next", HTTP_AUTHORIZATION=f"Bearer {raw}"
        )
        assert response.status_code == 403
        assert self.client.post("/api/v1/campaigns/api-camp/arbitration/next").status_code == 401


class ArbitrationBlindingCanaryTests(TestCase):
    """Every arbiter-visible page, partial and API response, checked for identity leaks."""

    NAMES = [
        "Zebra Nine",
        "zebra-llm-9",
        "Okapi Seven",
        "okapi/okapi-7b-chat",
        "okapi-7b-chat",
        "anthropic",
        "Zebracorp",
    ]

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        zebra = Contender.objects.create(
            id=770011,
            name="Zebra Nine",
            provider="anthropic",
            model="zebra-llm-9",
            base_url="http://zebra.invalid/v1",
        )
        okapi = Contender.objects.create(
            id=770022,
            name="Okapi Seven",
            provider="anthropic",
            model="okapi/okapi-7b-chat",
            base_url="http://okapi.invalid/v1",
        )
        cls.campaign = CampaignFactory(
            slug="canary", name="Canary campaign", contenders=[zebra, okapi], redact=["Zebracorp"]
        )
        task = TaskFactory(testset=cls.campaign.testset, prompt="Explain the refund policy.")
        item = ReviewItemFactory(id=660033, campaign=cls.campaign, task=task, outputs=False)
        texts = {
            zebra: "As an AI developed by Zebracorp, I am zebra-llm-9. Refunds take **5 days**.",
            okapi: "I'm okapi-7b-chat by Okapi Seven. Refunds <script>alert(1)</script> take a week.",
        }
        outputs = []
        for n, (contender, text) in enumerate(texts.items()):
            gen = Generation.objects.create(
                id=880044 + n,
                campaign=cls.campaign,
                task=task,
                contender=contender,
                sample_index=0,
                status="done",
                output=text,
            )
            outputs.append(ItemOutput.objects.create(id=990055 + n, item=item, generation=gen))
        o1, o2 = outputs
        review_create(
            item,
            cls.users["reviewer_a"],
            scores={o1: {"accuracy": 5, "completeness": 4}, o2: {"accuracy": 2, "completeness": 4}},
            preference=o1,
            comment="I think A is Zebra Nine",
            flags={o2: ["identity_leak"]},
        )
        review_create(
            item,
            cls.users["reviewer_b"],
            scores={
                o1: {"accuracy": 2, "completeness": 4},
                o2: {"accuracy": 2, "completeness": None},
            },
            preference=o2,
        )
        item_settle(item)
        cls.item = item
        cls.pks = ["770011", "770022", "660033", "880044", "880045", "990055", "990056"]

    def assert_blind(self, response):
        blob = (
            response.content.decode()
            + "\n"
            + "\n".join(f"{k}: {v}" for k, v in response.headers.items())
        )
        lowered = blob.lower()
        for name in self.NAMES:
            assert name.lower() not in lowered, (
                f"{name!r} leaked in {response.request['PATH_INFO']}"
            )
        for pk in self.pks:
            assert pk not in blob, f"pk {pk} leaked in {response.request['PATH_INFO']}"
        for username in ("reviewer_a", "reviewer_b"):
            assert username not in blob
        if response.get("Content-Type", "").startswith("text/html"):
            assert "<script>alert" not in blob  # model text is escaped or sanitized in pages

    def test_no_arbiter_page_partial_or_api_response_reveals_identity(self):
        self.client.force_login(self.users["arbiter"])
        responses = [self.client.get("/arbitration/")]
        claim = self.client.post("/arbitration/canary/next")
        token = Arbitration.objects.get(item=self.item).token
        responses += [
            claim,
            self.client.get(f"/arbitration/t/{token}/"),
            self.client.get(f"/arbitration/t/{token}/", **htmx()),
        ]
        responses.append(
            self.client.post(f"/arbitration/t/{token}/resolve", {"note": ""}, **htmx())
        )
        responses.append(self.client.post(f"/arbitration/t/{token}/resolve", {"note": ""}))
        page = responses[2].content.decode()
        assert "Refunds take <strong>5 days</strong>" in page and "[redacted]" in page
        # Fresh claim through htmx (the "next" partial) after releasing.
        responses.append(self.client.post(f"/arbitration/t/{token}/release"))
        responses.append(self.client.post("/arbitration/canary/next", **htmx()))
        token = Arbitration.objects.get(item=self.item).token
        arbitration = Arbitration.objects.get(item=self.item)
        label = o1_label(arbitration)
        other = "B" if label == "A" else "A"
        done = self.client.post(
            f"/arbitration/t/{token}/resolve",
            {
                f"score-{label}-accuracy": "3",
                f"score-{other}-completeness": "na",
                "preference": "tie",
                "note": "ok",
            },
            **htmx(),
        )
        assert b"Dispute resolved" in done.content
        responses += [
            done,
            self.client.post("/arbitration/canary/next", **htmx()),
            self.client.get(f"/arbitration/t/{token}/"),
        ]
        for response in responses:
            assert response.status_code in (200, 302, 404)
            self.assert_blind(response)

    def test_no_api_response_reveals_identity(self):
        auth = {"HTTP_AUTHORIZATION": f"Bearer {api_token(self.users['arbiter'])}"}
        nxt = self.client.post("/api/v1/campaigns/canary/arbitration/next", **auth)
        assert nxt.status_code == 200
        data = nxt.json()
        assert any("[redacted]" in c["text"] for c in data["candidates"])
        url = f"/api/v1/arbitrations/{data['token']}/resolve"
        beat = self.client.post(data["heartbeat_url"], **auth)
        bad = self.client.post(url, "{}", content_type="application/json", **auth)
        label = o1_label(Arbitration.objects.get(item=self.item))
        other = "B" if label == "A" else "A"
        good = self.client.post(
            url,
            json.dumps(
                {
                    "scores": {label: {"accuracy": 3}, other: {"completeness": None}},
                    "preference": "tie",
                    "note": "ok",
                }
            ),
            content_type="application/json",
            **auth,
        )
        assert good.json()["final"]["scores"][other]["completeness"] is None
        empty = self.client.post("/api/v1/campaigns/canary/arbitration/next", **auth)
        gone = self.client.post(data["heartbeat_url"], **auth)
        assert (beat.status_code, bad.status_code, good.status_code) == (200, 400, 200)
        assert (empty.status_code, gone.status_code) == (204, 409)
        for response in (nxt, beat, bad, good, empty, gone):
            self.assert_blind(response)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_arbiter_resolves_with_the_keyboard_and_the_lead_sees_it(browser_page):
    users = personas()
    campaign = CampaignFactory(
        slug="browser-camp", name="Browser campaign", instructions="Prefer *safe* answers."
    )
    item = disputed_item(campaign, users["reviewer_a"], users["reviewer_b"])
    second = disputed_item(campaign, users["reviewer_a"], users["reviewer_b"])
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser_page
    errors = page.js_errors

    browser_login(page, "arbiter", PASSWORD)
    page.goto("/arbitration/")
    page.get_by_role("button", name="Start arbitrating").click()
    page.wait_for_url(re.compile(r"/arbitration/t/"))
    arbitration = Arbitration.objects.get(item=item)
    label = o1_label(arbitration)
    # A single prompt, as on the review page: no role label above it.
    assert page.locator("#workspace .arb-task .prompt").count() == 1
    assert "user" not in page.inner_text("#workspace .arb-task").lower()
    # Resolving with nothing chosen lists, in the page, what the dispute still needs: in the
    # order of the disagreement box, in the page's words.
    assert wait_until(page, lambda: page.evaluate("() => document.activeElement?.type") == "radio")
    page.keyboard.press("Control+Enter")
    page.locator(".arb-errors").wait_for()
    box = page.locator("#workspace .arb-reasons li").all_inner_texts()
    assert [reason.split(":")[0] for reason in box] == ["Preference", f"Accuracy · output {label}"]
    assert page.locator(".arb-errors li").all_inner_texts() == [
        "Preference: choose an output, Tie or Both bad",
        f"Output {label}, Accuracy: a value is required (disputed)",
        "Note: a note explaining the decision is required",
    ]
    # Focus starts on the first disputed field; "4" scores it and moves on to the preference.
    assert wait_until(page, lambda: page.evaluate("() => document.activeElement?.type") == "radio")
    # `i` shows the campaign's instructions and hides them again; the focus stays put.
    instructions = page.locator("#workspace details.instructions em", has_text="safe")
    page.keyboard.press("i")
    assert instructions.is_visible()
    page.keyboard.press("i")
    assert not instructions.is_visible()
    assert page.evaluate("() => document.activeElement?.type") == "radio"
    # The review page's keys: `x` = N/A (accuracy offers none), a digit scores...
    page.keyboard.press("x")
    assert page.locator(f"input[name=score-{label}-accuracy]:checked").count() == 0
    page.keyboard.press("4")
    assert page.locator(f"input[name=score-{label}-accuracy][value='4']").is_checked()
    # ...and in the preference picks the n-th choice: 1 A, 2 B, 3 tie, 4 both bad.
    assert page.evaluate("document.activeElement.name") == "preference"
    page.keyboard.press("3")
    assert page.locator("input[name=preference][value=tie]").is_checked()
    assert page.evaluate("document.activeElement.name") == "note"
    # `x` on a field that allows N/A (an agreed one, changed: recorded as a correction).
    page.focus(f"input[name=score-{label}-completeness][value='']")
    page.keyboard.press("x")
    assert page.locator(f"input[name=score-{label}-completeness][value=na]").is_checked()
    assert page.evaluate("document.activeElement.name") == "note"
    page.keyboard.type("Both answers are acceptable.")
    page.screenshot(path=str(ARTIFACTS / "arbitration-filled.png"), full_page=True)
    page.keyboard.press("Control+Enter")
    page.get_by_text("Dispute resolved").wait_for()
    # Read out from the status region the page keeps (the swapped-in card's would be silent).
    announced = "document.querySelector('[role=status][data-announce]')?.textContent || ''"
    assert wait_until(page, lambda: "Dispute resolved" in page.evaluate(announced))
    page.screenshot(path=str(ARTIFACTS / "arbitration-resolved.png"), full_page=True)
    item.refresh_from_db()
    assert item.state == "resolved"
    final = item.final["scores"][str(label_map(arbitration.order)[label])]
    assert final["accuracy"] == 4.0 and final["completeness"] is None
    assert item.final["preference"] == "tie"
    # Enter on the focused "Next dispute" loads the next one in place (no full page load).
    page.evaluate("window.__same_document = true")
    page.keyboard.press("Enter")
    page.locator("#arb-form").wait_for()
    nxt = Arbitration.objects.get(item=second)
    assert nxt.state == "active" and page.url.endswith(f"/arbitration/t/{nxt.token}/")
    # On a phone the score grid stacks (one output under the other) instead of being clipped.
    page.set_viewport_size({"width": 390, "height": 844})
    fits = "() => { const t = document.querySelector('.arb-grid'); return [t.scrollWidth, t.parentElement.clientWidth]; }"
    table_width, box_width = page.evaluate(fits)
    assert table_width <= box_width, (table_width, box_width)
    page.set_viewport_size({"width": 1280, "height": 800})
    assert page.evaluate("window.__same_document === true")

    page.click("form.logout button")
    browser_login(page, "lead", PASSWORD)
    page.goto("/campaigns/browser-camp/disputes/")
    rows = page.locator("table.disputes tbody tr")
    assert rows.count() == 2
    assert "resolved" in rows.first.inner_text()
    assert "Both answers are acceptable." in rows.first.inner_text()
    page.select_option("select[name=status]", "open")
    page.get_by_text("0 matching disputes.").wait_for()
    page.select_option("select[name=status]", "in_progress")
    page.get_by_text("1 matching dispute.").wait_for()
    assert "in progress" in page.locator("table.disputes tbody tr").first.inner_text()
    page.select_option("select[name=status]", "resolved")
    page.wait_for_url(re.compile(r"status=resolved"))
    resolved = page.locator("table.disputes tbody tr")
    resolved.filter(has_text="Both answers are acceptable.").wait_for()
    assert resolved.count() == 1 and "resolved" in resolved.first.inner_text()
    page.screenshot(path=str(ARTIFACTS / "disputes-lead.png"), full_page=True)
    assert errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_arbiter_reads_a_conversation_and_hears_a_hand_back(browser_page):
    users = personas()
    campaign = CampaignFactory(slug="chat-camp", name="Chat campaign")
    messages = [
        {"role": "user", "content": "My order is late."},
        {"role": "assistant", "content": "Sorry! Which address?"},
        {"role": "user", "content": "Berlin office."},
    ]
    task = TaskFactory(testset=campaign.testset, prompt="", messages=messages)
    item = disputed_item(campaign, users["reviewer_a"], users["reviewer_b"], task=task)
    page = browser_page

    browser_login(page, "arbiter", PASSWORD)
    page.goto("/arbitration/")
    page.get_by_role("button", name="Start arbitrating").click()
    page.wait_for_url(re.compile(r"/arbitration/t/"))
    roles = page.locator("#workspace .arb-task .turn .role").all_inner_texts()
    assert [r.lower() for r in roles] == ["user", "assistant", "user"]
    # `?` shows the keys and hides them again; the focus goes back to the field.
    assert wait_until(page, lambda: page.evaluate("() => document.activeElement?.type") == "radio")
    page.keyboard.press("?")
    dialog = page.locator("dialog#shortcuts")
    assert dialog.is_visible() and "N/A, where a score allows it" in dialog.inner_text()
    page.keyboard.press("?")
    assert not dialog.is_visible()
    assert page.evaluate("() => document.activeElement?.type") == "radio"
    page.keyboard.press("5")  # the dialog took no key: scoring goes on
    assert page.locator("input[type=radio][value='5']:checked").count() == 1

    page.get_by_role("button", name="Hand back to the queue").click()
    page.wait_for_url(re.compile(r"/arbitration/$"))
    status = page.get_by_role("status")
    assert "Handed back: the dispute is in the arbitration queue again" in status.inner_text()
    # Focused, so a screen reader reads it out (a region filled before load is not announced).
    assert page.evaluate("() => document.activeElement?.hasAttribute('data-messages')")
    assert Arbitration.objects.get(item=item).state == "open"
    assert page.js_errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_unsaved_choices_come_back_after_a_reload_and_go_once_resolved(browser_page):
    users = personas()
    campaign = CampaignFactory()
    item = disputed_item(campaign, users["reviewer_a"], users["reviewer_b"])
    second = disputed_item(campaign, users["reviewer_a"], users["reviewer_b"])
    page = browser_page
    drafts = "Object.keys(localStorage).filter((k) => k.startsWith('evalsite-draft:'))"
    chosen = "Array.from(document.querySelectorAll('#arb-form input:checked'), (i) => `${i.name}=${i.value}`).sort()"
    note = "document.querySelector('#arb-form textarea[name=note]').value"
    status = "#arb-form [data-status]"

    browser_login(page, "arbiter", PASSWORD)
    page.goto("/arbitration/")
    page.get_by_role("button", name="Start arbitrating").click()
    page.wait_for_url(re.compile(r"/arbitration/t/"))
    arbitration = Arbitration.objects.get(item=item)
    label = o1_label(arbitration)
    assert wait_until(page, lambda: page.evaluate("() => document.activeElement?.type") == "radio")
    page.keyboard.press("4")  # the disputed accuracy
    page.keyboard.press("3")  # the preference: tie
    page.keyboard.type("Both are fine.")
    typed = page.evaluate(chosen)
    assert f"score-{label}-accuracy=4" in typed and "preference=tie" in typed

    page.reload()
    page.locator("#arb-form").wait_for()
    assert page.evaluate(chosen) == typed
    assert page.evaluate(note) == "Both are fine."
    assert page.inner_text(status) == "Your unsaved answers to this item were restored."
    assert page.evaluate(drafts) == [f"evalsite-draft:arbitration:{arbitration.token}"]
    page.keyboard.press("Control+Enter")
    page.get_by_text("Dispute resolved").wait_for()
    item.refresh_from_db()
    assert item.state == "resolved" and item.final["preference"] == "tie"
    assert page.evaluate(drafts) == []

    # The next dispute starts as the server shows it; one handed back leaves no draft either.
    page.keyboard.press("Enter")  # "Next dispute"
    page.locator("#arb-form").wait_for()
    nxt = Arbitration.objects.get(item=second)
    assert page.locator("#arb-form [data-disputed] input:checked").count() == 0
    assert page.evaluate(note) == ""
    assert page.inner_text(status) == ""
    assert wait_until(page, lambda: page.evaluate("() => document.activeElement?.type") == "radio")
    page.keyboard.press("5")
    assert page.evaluate(drafts) == [f"evalsite-draft:arbitration:{nxt.token}"]
    page.get_by_role("button", name="Hand back to the queue").click()
    page.wait_for_url(re.compile(r"/arbitration/$"))
    assert page.evaluate(drafts) == []
    assert page.js_errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_long_code_line_scrolls_in_its_block_not_the_page(browser_page):
    users = personas()
    item = disputed_item(CampaignFactory(), users["reviewer_a"], users["reviewer_b"])
    code = "```python\nfor line in f:\n    print(line)  # " + "a long comment " * 20 + "\n```"
    Generation.objects.filter(pk=item.outputs.order_by("pk").first().generation_id).update(
        output=code
    )
    page = browser_page
    browser_login(page, "arbiter", PASSWORD)
    page.goto("/arbitration/")
    page.get_by_role("button", name="Start arbitrating").click()
    block = page.locator("#workspace .arb-output pre").first
    block.wait_for()
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 800})
        assert block.evaluate("el => el.scrollWidth > el.clientWidth")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        card = page.locator("#workspace .arb-output").first.bounding_box()
        assert card["x"] + card["width"] <= width, card  # the card stays in its column


class ArbitrationPersonaTests(TestCase):
    """Every arbitration URL for every persona: deny by default, 404 for other people's work."""

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = CampaignFactory(slug="persona-camp")
        cls.item = disputed_item(cls.campaign, cls.users["reviewer_a"], cls.users["reviewer_b"])

    def test_it_answers_each_persona_as_expected(self):
        from reviews.arbitration.services import arbitration_claim_next

        token = arbitration_claim_next(campaign=self.campaign, arbiter=self.users["arbiter"]).token
        urls = [
            ("get", "/arbitration/"),
            ("get", f"/arbitration/t/{token}/"),
            ("post", f"/arbitration/t/{token}/resolve"),
            ("post", f"/arbitration/t/{token}/release"),
            ("post", "/arbitration/persona-camp/next"),
            ("get", "/campaigns/persona-camp/disputes/"),
        ]
        expected = {
            # arbiter_home, page, resolve, release, next, disputes
            "admin": [403, 403, 403, 403, 403, 200],
            "lead": [403, 403, 403, 403, 403, 200],
            "reviewer_a": [403, 403, 403, 403, 403, 403],
            "outsider": [403, 403, 403, 403, 403, 403],
            None: [302, 302, 302, 302, 302, 302],
        }
        for who, codes in expected.items():
            if who:
                self.client.force_login(self.users[who])
            else:
                self.client.logout()
            got = [getattr(self.client, method)(url).status_code for method, url in urls]
            assert got == codes, (who, got)
        # The holder sees their page; another arbiter gets 404 for it, not a 403 that confirms it.
        self.client.force_login(self.users["arbiter"])
        assert self.client.get(f"/arbitration/t/{token}/").status_code == 200
        other = UserFactory(username="arbiter_other", roles=["arbiter"])
        self.client.force_login(other)
        assert self.client.get(f"/arbitration/t/{token}/").status_code == 404
        assert self.client.post(f"/arbitration/t/{token}/release").status_code == 404
        assert self.client.get("/arbitration/").status_code == 200
        assert self.client.get("/arbitration/nope/next").status_code == 405
        assert self.client.post("/arbitration/no-such-campaign/next").status_code == 404


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_long_output_or_task_scrolls_in_its_box_and_the_grid_stays_near(browser_page):
    """As on the review page: a long output or task is clipped to part of the window and
    scrolls on its own (Tab reaches it, the arrows scroll it), instead of putting the reviews
    and the score grid thousands of pixels below the outputs."""
    users = personas()
    campaign = CampaignFactory()
    long_prompt = "\n\n".join(f"Paragraph {n} of a long question." for n in range(80))
    task = TaskFactory(testset=campaign.testset, prompt=long_prompt)
    item = disputed_item(campaign, users["reviewer_a"], users["reviewer_b"], task=task)
    long_text = "\n\n".join(f"Paragraph {n} of a long answer." for n in range(80))
    Generation.objects.filter(pk=item.outputs.order_by("pk").first().generation_id).update(
        output=long_text
    )
    page = browser_page
    browser_login(page, "arbiter", PASSWORD)
    page.goto("/arbitration/")
    page.get_by_role("button", name="Start arbitrating").click()
    page.locator("#arb-form").wait_for()
    for width, height in ((1280, 800), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        top = page.evaluate("document.querySelector('#arb-form').offsetTop")
        assert top < 4 * height, (width, top)
    pane = page.locator("#workspace .arb-output [tabindex='0']").filter(has_text="long answer")
    for box in (page.get_by_label("Task text"), pane):
        assert box.get_attribute("tabindex") == "0"
        assert box.evaluate("el => el.scrollHeight > el.clientHeight")  # clipped
    assert arrows_scroll(page, pane)
    assert page.js_errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_key_that_is_no_choice_says_so(browser_page):
    """`x` on a score without N/A, or a digit off the scale, did nothing and said nothing;
    the review page says so, and so does this one now."""
    users = personas()
    item = disputed_item(CampaignFactory(), users["reviewer_a"], users["reviewer_b"])
    page = browser_page
    browser_login(page, "arbiter", PASSWORD)
    page.goto("/arbitration/")
    page.get_by_role("button", name="Start arbitrating").click()
    page.wait_for_url(re.compile(r"/arbitration/t/"))
    label = o1_label(Arbitration.objects.get(item=item))
    status = "#arb-form [data-status]"
    assert wait_until(page, lambda: page.evaluate("() => document.activeElement?.type") == "radio")
    page.keyboard.press("x")  # the disputed accuracy offers no N/A
    assert page.inner_text(status) == "N/A is not a choice here"
    page.keyboard.press("9")  # accuracy runs 1-5
    assert page.inner_text(status) == "9 is not a choice here"
    assert page.locator("#arb-form [data-disputed] input:checked").count() == 0
    assert page.evaluate("document.activeElement.name") == f"score-{label}-accuracy"
    page.keyboard.press("4")  # the keys go on as before
    assert page.locator(f"input[name=score-{label}-accuracy][value='4']").is_checked()
    assert page.evaluate("document.activeElement.name") == "preference"
    assert page.js_errors == []
