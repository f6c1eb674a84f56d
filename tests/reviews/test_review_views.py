"""Reviewer pages, the admin/lead assignment view and the reviewer JSON API."""

import json
import re
from datetime import timedelta
from urllib.parse import urlencode

from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from evalsite.models import ApiToken
from reviews.models import Assignment, ItemOutput, Review, ReviewItem
from tasks.models import Generation
from tests.factories import UserFactory, campaign_ready, personas

HTMX = {"HX-Request": "true"}
FORM = "application/x-www-form-urlencoded"  # as browsers and htmx send the review form


def form_data(assignment, value="4", preference="A", key="key-1"):
    data = {"submit_key": key, "preference": preference, "comment": "ok", "seconds_spent": "42"}
    for label in ("A", "B"):
        data[f"score-{label}-accuracy"] = value
        data[f"score-{label}-completeness"] = value
    return data


class ReviewerPageTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = campaign_ready(items=2, overlap=2)
        cls.reviewer = cls.users["reviewer_a"]

    def setUp(self):
        self.client.force_login(self.reviewer)

    def start(self):
        response = self.client.post(reverse("review_next", args=[self.campaign.slug]))
        assert response.status_code == 302
        return Assignment.objects.get(reviewer=self.reviewer, state="active"), response.url

    def test_it_lists_the_reviewers_campaigns_with_their_progress(self):
        response = self.client.get(reverse("reviewer_home"))
        assert response.status_code == 200
        assert self.campaign.name.encode() in response.content
        assert b"Start reviewing" in response.content

    def test_it_denies_the_reviewer_pages_to_other_roles(self):
        for persona in ("lead", "arbiter", "outsider"):
            self.client.force_login(self.users[persona])
            assert self.client.get(reverse("reviewer_home")).status_code == 403
            assert (
                self.client.post(reverse("review_next", args=[self.campaign.slug])).status_code
                == 403
            )
        self.client.logout()
        response = self.client.get(reverse("reviewer_home"))
        assert response.status_code == 302 and "/login/" in response.url

    def test_it_shows_the_item_blind_with_rubric_anchors_and_no_history(self):
        assignment, url = self.start()
        response = self.client.get(url)
        html = response.content.decode()
        assert response.status_code == 200
        assert 'hx-history="false"' in html
        assert "Output A" in html and "Output B" in html
        assert "fully correct" in html and "covers everything" in html
        assert "Which output is better?" in html
        assert response["Cache-Control"] == "no-store"
        # The htmx request gets only the swappable region.
        partial = self.client.get(url, headers=HTMX).content.decode()
        assert partial.lstrip().startswith('<section id="review"') and "<html" not in partial

    def test_it_shows_missing_scores_inline_and_saves_nothing(self):
        assignment, url = self.start()
        data = form_data(assignment)
        del data["score-B-accuracy"]
        data["preference"] = ""
        response = self.client.post(
            reverse("review_submit", args=[self.campaign.slug, assignment.token]),
            data,
            headers=HTMX,
        )
        html = response.content.decode()
        assert response.status_code == 200
        assert "Not saved yet" in html
        assert html.count("data-error>required<") == 1
        assert "required: choose an output, tie or both bad" in html
        # A screen reader hears which questions are marked, and why.
        assert html.count('aria-invalid="true"') == 2
        assert 'aria-describedby="score-B-accuracy-error"' in html
        assert 'id="score-B-accuracy-error" data-error>required<' in html
        assert 'aria-describedby="preference-error"' in html
        # What was entered stays entered.
        assert 'name="score-A-accuracy" value="4" checked' in html
        assert Review.objects.count() == 0

    def test_it_rejects_a_fractional_score_on_an_ordinal_scale_in_place(self):
        assignment, _ = self.start()
        data = form_data(assignment)
        data["score-B-accuracy"] = "4.5"  # not one of the page's choices: a crafted post
        response = self.client.post(
            reverse("review_submit", args=[self.campaign.slug, assignment.token]),
            data,
            headers=HTMX,
        )
        html = response.content.decode()
        assert response.status_code == 200 and "Not saved yet" in html
        assert "data-error>must be a whole number on this ordinal scale<" in html
        assert Review.objects.count() == 0

    def test_it_saves_and_swaps_in_the_next_item_without_a_reload(self):
        first, _ = self.start()
        response = self.client.post(
            reverse("review_submit", args=[self.campaign.slug, first.token]),
            form_data(first),
            headers=HTMX,
        )
        html = response.content.decode()
        assert response.status_code == 200 and "<html" not in html
        assert 'data-notice="ok"' in html and "Saved." in html
        second = Assignment.objects.get(reviewer=self.reviewer, state="active")
        assert second.item_id != first.item_id
        assert second.token in html
        assert response["HX-Replace-Url"] == reverse(
            "review_page", args=[self.campaign.slug, second.token]
        )
        review = Review.objects.get(assignment=first)
        assert review.seconds_spent == 42 and review.comment == "ok"

    def test_a_nul_character_pasted_into_the_form_is_dropped_not_a_500(self):
        # PostgreSQL refuses NUL in text: the save (and a skip's detail) crashed there.
        first, _ = self.start()
        url = reverse("review_submit", args=[self.campaign.slug, first.token])
        data = {**form_data(first), "comment": "pasted\x00 text"}
        response = self.client.post(url, urlencode(data), FORM, headers=HTMX)
        assert 'data-notice="ok"' in response.content.decode()
        assert Review.objects.get(assignment=first).comment == "pasted text"
        second = Assignment.objects.get(reviewer=self.reviewer, state="active")
        url = reverse("review_skip", args=[self.campaign.slug, second.token])
        data = urlencode({"reason": "expertise", "detail": "tax\x00 law"})
        self.client.post(url, data, FORM, headers=HTMX)
        second.refresh_from_db()
        assert second.skip_reason == "I can't judge this topic: tax law"

    def test_a_browser_clock_set_back_never_blocks_the_save(self):
        """The page's hidden time field comes from the browser's clock; the reviewer cannot
        correct it, so a negative or fractional value is clamped, not refused."""
        first, _ = self.start()
        url = reverse("review_submit", args=[self.campaign.slug, first.token])
        response = self.client.post(url, {**form_data(first), "seconds_spent": "-37"}, headers=HTMX)
        assert 'data-notice="ok"' in response.content.decode()
        assert Review.objects.get(assignment=first).seconds_spent == 0

    def test_it_says_so_on_a_double_submit_and_saves_once(self):
        first, _ = self.start()
        url = reverse("review_submit", args=[self.campaign.slug, first.token])
        self.client.post(url, form_data(first), headers=HTMX)
        again = self.client.post(url, form_data(first), headers=HTMX).content.decode()
        assert "Already saved: this review arrived before, it was not saved twice." in again
        assert Review.objects.filter(reviewer=self.reviewer).count() == 1

    def test_it_says_so_when_the_item_was_reassigned(self):
        campaign = campaign_ready(items=1, overlap=2)
        self.client.post(reverse("review_next", args=[campaign.slug]))
        first = Assignment.objects.get(reviewer=self.reviewer, item__campaign=campaign)
        Assignment.objects.filter(pk=first.pk).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
        for user in (
            self.users["reviewer_b"],
            UserFactory(username="reviewer_c", roles=["reviewer"]),
        ):
            self.client.force_login(user)
            self.client.post(reverse("review_next", args=[campaign.slug]))
        assert ReviewItem.objects.get(pk=first.item_id).live_count == 2
        self.client.force_login(self.reviewer)
        html = self.client.post(
            reverse("review_submit", args=[campaign.slug, first.token]),
            form_data(first),
            headers=HTMX,
        ).content.decode()
        assert 'data-notice="warn"' in html and "given to another reviewer" in html
        assert not Review.objects.filter(reviewer=self.reviewer).exists()

    def test_it_says_when_the_queue_is_finished(self):
        for _ in range(2):
            assignment = (
                Assignment.objects.filter(reviewer=self.reviewer, state="active").first()
                or self.start()[0]
            )
            response = self.client.post(
                reverse("review_submit", args=[self.campaign.slug, assignment.token]),
                form_data(assignment, key=assignment.token),
                headers=HTMX,
            )
        html = response.content.decode()
        assert "Your queue is finished" in html and "data-finished" in html
        assert response["HX-Replace-Url"] == reverse("review_campaign", args=[self.campaign.slug])
        page = self.client.get(
            reverse("review_campaign", args=[self.campaign.slug])
        ).content.decode()
        assert "Your queue is finished" in page
        # Without JavaScript: a plain POST redirects to the campaign page, which says the same.
        response = self.client.post(reverse("review_next", args=[self.campaign.slug]))
        assert response.url == reverse("review_campaign", args=[self.campaign.slug])

    def test_it_offers_a_retry_not_a_finished_queue_when_claims_collide(self):
        from unittest import mock

        from reviews import review as services

        # Contention itself is exercised on PostgreSQL in test_assignment_concurrency; here only
        # what the page says when every candidate was taken concurrently CLAIM_ATTEMPTS times.
        with mock.patch.object(
            services, "assignment_claim_next", side_effect=services.ClaimBusy("x")
        ):
            html = self.client.post(reverse("review_next", args=[self.campaign.slug]), headers=HTMX)
        html = html.content.decode()
        assert "data-busy" in html and "Try again" in html and "data-finished" not in html
        assert "try again in a moment" in html

    def test_it_returns_404_for_another_reviewers_token(self):
        assignment, url = self.start()
        self.client.force_login(self.users["reviewer_b"])
        assert self.client.get(url).status_code == 404
        submit = reverse("review_submit", args=[self.campaign.slug, assignment.token])
        assert self.client.post(submit, form_data(assignment)).status_code == 404
        heartbeat = reverse("review_heartbeat", args=[self.campaign.slug, assignment.token])
        assert self.client.post(heartbeat).status_code == 404
        assert (
            self.client.get(
                reverse("review_page", args=["no-such-campaign", assignment.token])
            ).status_code
            == 404
        )

    def test_it_skips_with_a_reason(self):
        assignment, _ = self.start()
        url = reverse("review_skip", args=[self.campaign.slug, assignment.token])
        html = self.client.post(url, {"reason": ""}, headers=HTMX).content.decode()
        assert "Choose a reason" in html
        html = self.client.post(
            url, {"reason": "expertise", "detail": "tax law"}, headers=HTMX
        ).content.decode()
        assert "Skipped; you will not get this item again." in html
        assignment.refresh_from_db()
        assert (
            assignment.state == "skipped"
            and assignment.skip_reason == "I can't judge this topic: tax law"
        )

    def test_it_extends_the_lease_on_heartbeat_and_reports_a_lost_one(self):
        assignment, _ = self.start()
        url = reverse("review_heartbeat", args=[self.campaign.slug, assignment.token])
        response = self.client.post(url)
        assert response.status_code == 200 and response.json()["ok"] is True
        assert self.client.get(url).status_code == 405
        Assignment.objects.filter(pk=assignment.pk).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
        response = self.client.post(url)
        assert response.status_code == 409 and "ran out" in response.json()["message"]

    def test_it_tells_a_reviewer_removed_mid_item_why_the_submit_failed(self):
        from reviews import review as services

        assignment, url = self.start()
        services.reviewer_remove_from_campaign(
            campaign=self.campaign, reviewer=self.reviewer, by=self.users["admin"]
        )
        heartbeat = self.client.post(
            reverse("review_heartbeat", args=[self.campaign.slug, assignment.token])
        )
        assert heartbeat.status_code == 409
        assert "removed you from this campaign" in heartbeat.json()["message"]
        for name, data in (
            ("review_submit", form_data(assignment)),
            ("review_skip", {"reason": "expertise"}),
        ):
            # Not a 404 that the page reads as a server fault to retry: the item's own page.
            response = self.client.post(
                reverse(name, args=[self.campaign.slug, assignment.token]), data, headers=HTMX
            )
            assert response.status_code == 200 and response["HX-Redirect"] == url
            page = self.client.get(url).content.decode()
            assert "Not saved: this item can no longer be reviewed." in page
            assert "An administrator removed you from this campaign" in page
        plain = self.client.post(
            reverse("review_submit", args=[self.campaign.slug, assignment.token]),
            form_data(assignment),
        )
        assert plain.status_code == 302 and plain.url == url
        assert not Review.objects.exists()
        # Someone else's token says nothing more than before.
        self.client.force_login(self.users["reviewer_b"])
        submit = reverse("review_submit", args=[self.campaign.slug, assignment.token])
        assert self.client.post(submit, form_data(assignment)).status_code == 404

    def test_it_tells_a_removed_reviewer_why_at_the_campaign_entry(self):
        """Their start page, a bookmark or "Start reviewing" on a page open since: a bare
        404 there said nothing of the removal."""
        from reviews import review as services

        services.reviewer_remove_from_campaign(
            campaign=self.campaign, reviewer=self.reviewer, by=self.users["admin"]
        )
        entry = reverse("review_campaign", args=[self.campaign.slug])
        response = self.client.get(entry)
        assert response.status_code == 403
        assert "An administrator removed you from this campaign" in response.content.decode()
        start = reverse("review_next", args=[self.campaign.slug])
        assert self.client.post(start).url == entry
        assert self.client.post(start, headers=HTMX)["HX-Redirect"] == entry
        assert not Assignment.objects.filter(reviewer=self.reviewer).exists()
        # A campaign they were never removed from and cannot review stays a plain 404.
        self.campaign.status = "draft"
        self.campaign.save(update_fields=["status"])
        services.reviewer_restore_to_campaign(campaign=self.campaign, reviewer=self.reviewer)
        assert self.client.get(entry).status_code == 404
        assert self.client.post(start).status_code == 404

    def test_it_shows_a_closed_item_for_what_it_is(self):
        assignment, url = self.start()
        self.client.post(
            reverse("review_submit", args=[self.campaign.slug, assignment.token]),
            form_data(assignment),
        )
        response = self.client.get(url)
        assert response.status_code == 200
        assert b"You already submitted a review for this item." in response.content
        assert b"score-A-accuracy" not in response.content

    def test_it_works_without_javascript(self):
        assignment, url = self.start()
        response = self.client.post(
            reverse("review_submit", args=[self.campaign.slug, assignment.token]),
            form_data(assignment),
        )
        assert response.status_code == 302
        nxt = Assignment.objects.get(reviewer=self.reviewer, state="active")
        assert response.url == reverse("review_page", args=[self.campaign.slug, nxt.token])


class AssignmentAdminTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = campaign_ready(items=3, overlap=2)

    def claim(self, persona):
        self.client.force_login(self.users[persona])
        self.client.post(reverse("review_next", args=[self.campaign.slug]))
        return Assignment.objects.get(reviewer=self.users[persona], state="active")

    def test_it_shows_assignment_state_to_admins_and_leads_only(self):
        held = self.claim("reviewer_a")
        Assignment.objects.filter(pk=held.pk).update(
            lease_expires_at=timezone.now() - timedelta(minutes=3)
        )
        url = reverse("campaign_assignments", args=[self.campaign.slug])
        for persona in ("admin", "lead"):
            self.client.force_login(self.users[persona])
            response = self.client.get(url)
            assert response.status_code == 200
            html = response.content.decode()
            assert "reviewer_a" in html and "stale" in html and "Remove from campaign" in html
            assert 'data-confirm="Remove reviewer_a from this campaign?' in html  # asks first
            # states read as the filter names them; keyboard users can skip the top bar
            assert '<span class="badge">in review</span>' in html
            assert '<a class="skip-link" href="#main">' in html
            partial = self.client.get(url + "?state=open", headers=HTMX).content.decode()
            assert partial.lstrip().startswith('<div id="items">')
        for persona in ("reviewer_a", "arbiter", "outsider"):
            self.client.force_login(self.users[persona])
            assert self.client.get(url).status_code == 403

    def test_the_item_filter_is_in_the_url_and_survives_a_release(self):
        held = self.claim("reviewer_a")
        self.client.force_login(self.users["admin"])
        url = reverse("campaign_assignments", args=[self.campaign.slug])
        page = self.client.get(url).content.decode()
        assert 'hx-trigger="change" hx-push-url="true"' in page  # reload and Back keep it
        restore = {**HTMX, "HX-History-Restore-Request": "true"}
        assert "<html" in self.client.get(url + "?state=open", headers=restore).content.decode()
        release = reverse("assignment_release", args=[self.campaign.slug, held.token])
        back = self.client.post(release, headers={"Referer": f"http://testserver{url}?state=open"})
        assert back.url == f"{url}?state=open"
        elsewhere = self.client.post(
            release, headers={"Referer": "http://testserver/users/?page=2"}
        )
        assert elsewhere.url == url

    def test_the_campaign_page_links_to_the_assignments(self):
        self.client.force_login(self.users["admin"])
        page = self.client.get(reverse("campaign_detail", args=[self.campaign.slug]))
        assert reverse("campaign_assignments", args=[self.campaign.slug]).encode() in page.content

    def test_it_releases_a_lease_and_removes_a_reviewer(self):
        held = self.claim("reviewer_a")
        self.client.force_login(self.users["lead"])
        response = self.client.post(
            reverse("assignment_release", args=[self.campaign.slug, held.token])
        )
        assert response.status_code == 302
        held.refresh_from_db()
        assert held.state == "released"
        other = self.claim("reviewer_b")
        self.client.force_login(self.users["admin"])
        url = reverse("reviewer_remove", args=[self.campaign.slug, self.users["reviewer_b"].pk])
        assert self.client.post(url).status_code == 302
        other.refresh_from_db()
        assert other.state == "released"
        self.client.force_login(self.users["reviewer_b"])
        # No more items: the campaign's entry says why instead.
        response = self.client.post(reverse("review_next", args=[self.campaign.slug]))
        assert response.url == reverse("review_campaign", args=[self.campaign.slug])
        assert not Assignment.objects.filter(reviewer=self.users["reviewer_b"], state="active")
        assert self.campaign.name.encode() not in self.client.get(reverse("reviewer_home")).content
        self.client.force_login(self.users["reviewer_a"])
        assert (
            self.client.post(
                reverse("assignment_release", args=[self.campaign.slug, other.token])
            ).status_code
            == 403
        )


class ReviewApiTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = campaign_ready(items=1, overlap=1)
        cls.token = ApiToken.issue(cls.users["reviewer_a"])
        cls.lead_token = ApiToken.issue(cls.users["lead"])

    def post(self, url, body=None, token=None, **headers):
        return self.client.post(
            url,
            data=json.dumps(body or {}),
            content_type="application/json",
            headers={"Authorization": f"Bearer {token or self.token}", **headers},
        )

    def test_it_runs_the_reviewer_loop(self):
        response = self.post(f"/api/v1/campaigns/{self.campaign.slug}/next")
        assert response.status_code == 200
        body = response.json()
        assert set(body) == {
            "token",
            "resumed",
            "lease_expires_at",
            "campaign",
            "mode",
            "task",
            "instructions",
            "candidates",
            "rubric",
            "preference_choices",
            "flags",
            "submit_url",
            "heartbeat_url",
        }
        assert [c["label"] for c in body["candidates"]] == ["A", "B"]
        # A plain output's transcript is empty (tool calls and turns: test_transcripts_review).
        assert set(body["candidates"][0]) == {"label", "text", "transcript"}
        assert body["candidates"][0]["transcript"] == []
        assert body["task"]["prompt"].startswith("Summarise ticket")
        assert body["rubric"][0]["anchors"] == {"1": "wrong", "5": "fully correct"}
        assert body["preference_choices"] == ["A", "B", "tie", "both_bad"]
        assert body["submit_url"] == f"/api/v1/assignments/{body['token']}/submit"
        again = self.post(f"/api/v1/campaigns/{self.campaign.slug}/next").json()
        assert again["token"] == body["token"] and again["resumed"] is True

        invalid = self.post(
            body["submit_url"], {"scores": {"A": {"accuracy": 7}}, "preference": "A"}
        )
        assert invalid.status_code == 400
        assert invalid.json()["errors"]["scores.A.accuracy"] == "must be from 1 to 5"
        review = {
            "scores": {
                "A": {"accuracy": 4, "completeness": "na"},
                "B": {"accuracy": 2, "completeness": 3},
            },
            "preference": "A",
            "flags": {"B": ["hallucination"]},
            "comment": "B made it up",
        }
        too_long = self.post(body["submit_url"], review, **{"Idempotency-Key": "abc" * 22})
        assert too_long.status_code == 400 and set(too_long.json()["errors"]) == {"key"}
        saved = self.post(body["submit_url"], review, **{"Idempotency-Key": "abc"})
        assert saved.status_code == 201 and saved.json()["status"] == "saved"
        duplicate = self.post(body["submit_url"], {**review, "key": "abc"})
        assert duplicate.status_code == 200 and duplicate.json()["status"] == "duplicate"
        conflict = self.post(body["submit_url"], {**review, "key": "another"})
        assert conflict.status_code == 409 and conflict.json()["status"] == "already_submitted"
        empty = self.post(f"/api/v1/campaigns/{self.campaign.slug}/next")
        assert empty.status_code == 204 and not empty.content
        assert "Content-Type" not in empty.headers  # no body, so not "text/html"
        assert Review.objects.count() == 1

    def test_the_same_key_with_different_answers_is_refused_not_called_a_duplicate(self):
        body = self.post(f"/api/v1/campaigns/{self.campaign.slug}/next").json()
        review = {
            "scores": {
                "A": {"accuracy": 4, "completeness": 3},
                "B": {"accuracy": 2, "completeness": 1},
            },
            "preference": "A",
            "flags": {"B": ["hallucination", "unsafe"]},
            "comment": "B is wrong ",
            "seconds_spent": 30,
            "key": "k1",
        }
        assert self.post(body["submit_url"], review).status_code == 201
        # A retry: same answers (flags in another order, the clock moved on): a duplicate.
        retry = {**review, "flags": {"B": ["unsafe", "hallucination"]}, "seconds_spent": 95}
        again = self.post(body["submit_url"], retry)
        assert again.status_code == 200 and again.json()["status"] == "duplicate"
        # Changed answers under the same key: said so, not "Already saved".
        for change in (
            {
                "scores": {
                    "A": {"accuracy": 5, "completeness": 3},
                    "B": {"accuracy": 2, "completeness": 1},
                }
            },
            {"preference": "B"},
            {"comment": "changed my mind"},
            {"flags": {}},
        ):
            reused = self.post(body["submit_url"], {**review, **change})
            assert reused.status_code == 409, change
            assert reused.json()["status"] == "key_reused"
        stored = Review.objects.get()
        assert stored.comment == "B is wrong" and stored.preference == "output"

    def test_it_rejects_a_fractional_score_on_an_ordinal_scale(self):
        body = self.post(f"/api/v1/campaigns/{self.campaign.slug}/next").json()
        review = {
            "scores": {"A": {"accuracy": 4.5, "completeness": 3}, "B": {"accuracy": 2.0}},
            "preference": "A",
        }
        invalid = self.post(body["submit_url"], review)
        assert invalid.status_code == 400 and invalid.json()["status"] == "invalid"
        errors = invalid.json()["errors"]
        assert errors["scores.A.accuracy"] == "must be a whole number on this ordinal scale"
        assert "scores.B.accuracy" not in errors  # 2.0 is the point 2
        assert Review.objects.count() == 0

    def test_it_refuses_an_integer_beyond_float_range_instead_of_crashing(self):
        # float(10**400) raised OverflowError: a 500 from the score and seconds checks.
        body = self.post(f"/api/v1/campaigns/{self.campaign.slug}/next").json()
        huge = "1" + "0" * 400
        raw = '{"scores": {"A": {"accuracy": ' + huge + '}}, "seconds_spent": ' + huge + "}"
        response = self.client.post(
            body["submit_url"],
            raw,
            content_type="application/json",
            headers={"Authorization": f"Bearer {self.token}"},
        )
        assert response.status_code == 400
        assert (
            response.json()["error"]
            == "request body: the number 100000000000000000000000000000... is out of range"
        )
        assert Review.objects.count() == 0

    def test_it_takes_a_fractional_score_on_an_interval_scale(self):
        campaign = campaign_ready(
            items=1,
            overlap=1,
            slug="interval-camp",
            rubric=[{"key": "accuracy", "min": 1, "max": 5, "level": "interval"}],
        )
        body = self.post(f"/api/v1/campaigns/{campaign.slug}/next").json()
        review = {"scores": {"A": {"accuracy": 4.5}, "B": {"accuracy": 2}}, "preference": "A"}
        saved = self.post(body["submit_url"], review)
        assert saved.status_code == 201, saved.json()
        assert sorted(Review.objects.get().scores.values_list("value", flat=True)) == [2.0, 4.5]

    def test_it_rejects_unknown_and_wrongly_typed_fields_all_at_once(self):
        body = self.post(f"/api/v1/campaigns/{self.campaign.slug}/next").json()
        review = {
            "scores": {
                "A": {"accuracy": 4, "completeness": 3},
                "B": {"accuracy": 2, "completeness": None},
            },
            "preference": "A",
        }
        accepted = "unknown field; accepted: scores, preference, flags, comment, seconds_spent, key"
        for extra, errors in (
            ({"bogus": 1}, {"bogus": accepted}),
            ({"seconds": "abc"}, {"seconds": accepted}),
            ({"seconds_spent": "abc"}, {"seconds_spent": "must be a number of seconds"}),
            ({"seconds_spent": True}, {"seconds_spent": "must be a number of seconds"}),
            ({"key": {"a": 1}}, {"key": "must be a string"}),
            # Cut to 64, two keys sharing their start would be one: refused instead.
            ({"key": "k" * 65}, {"key": "at most 64 characters (a UUID has 36)"}),
            (
                {"comment": 5, "flags": []},
                {"comment": "must be text", "flags": "must be an object keyed by label"},
            ),
            ({"preference": 1}, {"preference": "must be a string: one of A, B, tie, both_bad"}),
        ):
            invalid = self.post(body["submit_url"], {**review, **extra})
            assert invalid.status_code == 400, extra
            assert invalid.json()["status"] == "invalid"
            assert invalid.json()["errors"] == errors, extra
        both = self.post(body["submit_url"], {"bogus": 1, "scores": "x", "preference": "A"})
        assert set(both.json()["errors"]) >= {"bogus", "scores", "scores.A.accuracy"}
        assert Review.objects.count() == 0
        saved = self.post(body["submit_url"], {**review, "seconds_spent": 61, "key": "k-1"})
        assert saved.status_code == 201 and Review.objects.get().seconds_spent == 61

    def test_the_claim_reads_its_answer_under_the_item_lock(self):
        # A new claim answers from the rows it read while holding the item (no query of its
        # own); a resumed claim reads them afresh. Both must show the same blinded item.
        with CaptureQueriesContext(connection) as queries:
            first = self.post(f"/api/v1/campaigns/{self.campaign.slug}/next").json()
        output_reads = [q["sql"] for q in queries if Generation._meta.db_table in q["sql"]]
        assert len(output_reads) == 1, output_reads
        resumed = self.post(f"/api/v1/campaigns/{self.campaign.slug}/next").json()
        assert resumed["resumed"] is True and first["resumed"] is False
        for part in ("token", "task", "candidates", "rubric", "lease_expires_at"):
            assert first[part] == resumed[part], part
        order = Assignment.objects.get(token=first["token"]).order
        texts = dict(ItemOutput.objects.values_list("pk", "generation__output"))
        assert [c["text"] for c in first["candidates"]] == [texts[pk] for pk in order]

    def test_the_claim_checks_the_reviewers_standing_before_it_locks_an_item(self):
        # The campaign, the reviewer's removal and a lease they already hold are read first;
        # then the claim locks its item, skipping items others hold (SKIP LOCKED).
        with CaptureQueriesContext(connection) as queries:
            response = self.post(f"/api/v1/campaigns/{self.campaign.slug}/next")
        assert response.status_code == 200 and response.json()["resumed"] is False
        statements = [q["sql"] for q in queries]
        # The roster check (the campaign's reviewer list) rides in the claim's first read,
        # with the removal: once, before any item is read.
        roster = [n for n, q in enumerate(statements) if "tasks_campaign_reviewers" in q]
        items = [n for n, q in enumerate(statements) if "FROM reviews_reviewitem i" in q]
        removal = [n for n, q in enumerate(statements) if "reviews_reviewerremoval" in q]
        assert len(roster) == 1 and items and roster[0] < items[0], statements
        assert len(removal) == 1 and removal[0] < items[0], statements
        # One read per pass of the offer order until one finds an item.
        assert 1 <= len(items) <= 3, statements
        if connection.vendor == "postgresql":  # SQLite has no row locks: one writer at a time
            locked = [statements[n] for n in items]
            assert all(q.endswith("FOR NO KEY UPDATE OF i SKIP LOCKED") for q in locked), locked
        assignment = Assignment.objects.get(token=response.json()["token"])
        lease = assignment.lease_expires_at - assignment.created_at
        assert abs(lease - timedelta(minutes=self.campaign.lease_minutes)) < timedelta(seconds=1)

    def test_the_submit_writes_its_review_only_after_the_fence(self):
        # The fence (the assignment still this reviewer's active one) is the first write; the
        # review, its scores and the item's count follow it in the same transaction.
        body = self.post(f"/api/v1/campaigns/{self.campaign.slug}/next").json()
        review = {
            "scores": {
                "A": {"accuracy": 4, "completeness": "na"},
                "B": {"accuracy": 2, "completeness": 3},
            },
            "preference": "tie",
            "comment": "close",
        }
        with CaptureQueriesContext(connection) as queries:
            saved = self.post(body["submit_url"], review)
        assert saved.status_code == 201 and saved.json()["status"] == "saved"
        # (The item is then settled: its first review completes it here, in later statements.)
        parts = [
            re.compile(pattern)
            for pattern in (
                r"""UPDATE "?reviews_assignment"? SET "?state"? = 'submitted'""",
                r'INSERT INTO "?reviews_review"? ',
                r'INSERT INTO "?reviews_score"? ',
                r'SET "?submitted_count"? = \(?("?reviews_reviewitem"?\.)?"?submitted_count"? \+ 1',
            )
        ]
        writes = [q["sql"] for q in queries if any(part.search(q["sql"]) for part in parts)]
        if connection.vendor == "postgresql":
            # One statement (reviews/review/sql.py): the other writes happen only if the fence matched.
            assert len(writes) == 1 and all(part.search(writes[0]) for part in parts), writes
        else:
            order = [next(n for n, part in enumerate(parts) if part.search(q)) for q in writes]
            assert order == [0, 1, 2, 3], writes
        stored = Review.objects.get()
        assert stored.assignment.state == Assignment.State.SUBMITTED
        assert stored.submitted_at >= stored.assignment.submitted_at
        assert set(stored.scores.values_list("dimension", "value")) == {
            ("accuracy", 2.0),
            ("accuracy", 4.0),
            ("completeness", 3.0),
            ("completeness", None),
        }
        assert stored.item.submitted_count == 1 and stored.preference == "tie"

    def test_a_heartbeat_keeps_the_lease_and_says_when_it_is_gone(self):
        body = self.post(f"/api/v1/campaigns/{self.campaign.slug}/next").json()
        assert body["heartbeat_url"] == f"/api/v1/assignments/{body['token']}/heartbeat"
        Assignment.objects.filter(token=body["token"]).update(
            lease_expires_at=timezone.now() + timedelta(minutes=1)
        )
        beat = self.post(body["heartbeat_url"])
        assert beat.status_code == 200 and beat.json()["ok"] is True
        stored = Assignment.objects.get(token=body["token"])
        # One more lease length (the campaign's 20 minutes) from now, on the database clock.
        assert timezone.now() + timedelta(minutes=19) < stored.lease_expires_at
        assert beat.json()["lease_expires_at"] == stored.lease_expires_at.isoformat()
        assert stored.heartbeat_at is not None
        # Someone else's token is not found; a lapsed lease is not revived by a heartbeat.
        other = ApiToken.issue(self.users["reviewer_b"])
        assert self.post(body["heartbeat_url"], token=other).status_code == 404
        assert self.post("/api/v1/assignments/not-a-token/heartbeat").status_code == 404
        Assignment.objects.filter(token=body["token"]).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
        lapsed = self.post(body["heartbeat_url"])
        assert lapsed.status_code == 409 and "ran out" in lapsed.json()["error"]
        assert Assignment.objects.get(token=body["token"]).lease_expires_at < timezone.now()

    def test_it_says_reassigned_on_a_late_submit(self):
        body = self.post(f"/api/v1/campaigns/{self.campaign.slug}/next").json()
        Assignment.objects.filter(token=body["token"]).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
        other = ApiToken.issue(self.users["reviewer_b"])
        assert (
            self.post(f"/api/v1/campaigns/{self.campaign.slug}/next", token=other).status_code
            == 200
        )
        late = self.post(
            body["submit_url"],
            {
                "scores": {
                    "A": {"accuracy": 4, "completeness": 4},
                    "B": {"accuracy": 4, "completeness": 4},
                },
                "preference": "tie",
                "key": "k",
            },
        )
        assert late.status_code == 409 and late.json()["status"] == "reassigned"

    def test_it_denies_by_default(self):
        url = f"/api/v1/campaigns/{self.campaign.slug}/next"
        assert self.client.post(url).status_code == 401
        assert self.post(url, token=self.lead_token).status_code == 403
        assert self.post("/api/v1/campaigns/nope/next").status_code == 404
        assert (
            self.post("/api/v1/assignments/not-a-token/submit", {"scores": {}}).status_code == 404
        )
        mine = self.post(url).json()
        other = ApiToken.issue(self.users["reviewer_b"])
        assert self.post(mine["submit_url"], {}, token=other).status_code == 404
        assert (
            self.client.get(url, headers={"Authorization": f"Bearer {self.token}"}).status_code
            == 405
        )

    def test_it_documents_the_loop_in_the_openapi_schema(self):
        paths = self.client.get("/api/v1/schema").json()["paths"]
        nxt = paths["/api/v1/campaigns/{slug}/next"]["post"]
        assert set(nxt["responses"]) >= {"200", "204"}
        submit = paths["/api/v1/assignments/{token}/submit"]["post"]
        assert "requestBody" in submit and set(submit["responses"]) >= {"201", "200", "400", "409"}
        beat = paths["/api/v1/assignments/{token}/heartbeat"]["post"]
        assert set(beat["responses"]) >= {"200", "404", "409"}


class MultiTurnTests(TestCase):
    def test_it_shows_the_conversation_of_a_multi_turn_task(self):
        from tests.factories import ReviewItemFactory, TaskFactory

        users = personas()
        campaign = campaign_ready(items=0, overlap=1, show_reference=True)
        task = TaskFactory(
            testset=campaign.testset,
            prompt="",
            messages=[
                {"role": "user", "content": "My order **#7** is late."},
                {"role": "assistant", "content": "Sorry! Which address?"},
                {"role": "user", "content": "Berlin <b>office</b>."},
            ],
            reference="Offer a refund of the shipping fee.",
        )
        ReviewItemFactory(campaign=campaign, task=task)
        self.client.force_login(users["reviewer_a"])
        page = self.client.get(self.client.post(reverse("review_next", args=[campaign.slug])).url)
        html = page.content.decode()
        assert html.count('class="turn turn-user"') == 2 and 'class="turn turn-assistant"' in html
        assert "<strong>#7</strong>" in html and "Berlin &lt;b&gt;office&lt;/b&gt;." in html
        assert "Offer a refund of the shipping fee." in html
        token = ApiToken.issue(users["reviewer_b"])
        body = self.client.post(
            f"/api/v1/campaigns/{campaign.slug}/next", headers={"Authorization": f"Bearer {token}"}
        )
        assert body.status_code == 204  # k=1 and reviewer_a holds the only item
        Assignment.objects.update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        body = self.client.post(
            f"/api/v1/campaigns/{campaign.slug}/next", headers={"Authorization": f"Bearer {token}"}
        ).json()
        assert body["task"]["messages"][1] == {
            "role": "assistant",
            "content": "Sorry! Which address?",
        }
        assert (
            "prompt" not in body["task"]
            and body["task"]["reference"] == "Offer a refund of the shipping fee."
        )
