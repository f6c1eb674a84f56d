"""A reviewer's history and corrections: a submitted review changes until its item settles,
as a new version (the old one kept), and the settle reads the latest; never after."""

import threading

import pytest
from django.db import close_old_connections, connection
from django.test import TestCase, TransactionTestCase
from django.urls import reverse

from reviews import review as services
from reviews.models import Assignment, Review, ReviewItem, ReviewVersion
from tests.factories import UserFactory, campaign_ready, personas
from tests.reviews.helpers import full_review


def claim_and_submit(campaign, reviewer, value: int, preference: str = "tie") -> Assignment:
    assignment = services.assignment_claim_next(campaign=campaign, reviewer=reviewer).assignment
    result = services.assignment_submit(
        token=assignment.token,
        reviewer=reviewer,
        key=f"k-{assignment.token}",
        data=full_review(assignment, value=value, preference=preference),
    )
    assert result.ok, result.message
    assignment.refresh_from_db()
    return assignment


def scores_of(assignment: Assignment) -> set[float]:
    return set(Review.objects.get(assignment=assignment).scores.values_list("value", flat=True))


class CorrectionServiceTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = campaign_ready(items=1, overlap=2)

    def test_it_keeps_the_old_answers_and_the_settle_reads_the_corrected_ones(self):
        a = claim_and_submit(self.campaign, self.users["reviewer_a"], value=1)
        result = services.review_correct(
            token=a.token,
            reviewer=self.users["reviewer_a"],
            data=full_review(a, value=4, preference="tie"),
        )
        assert (result.code, result.version) == ("saved", 2)
        assert scores_of(a) == {4.0}
        kept = ReviewVersion.objects.get(review__assignment=a)
        assert kept.version == 1 and {s[2] for s in kept.answers["scores"]} == {1.0}
        # reviewer_b scores 5: with the first answers (1) a gap of 4 would dispute the item;
        # with the correction (4) the gap is 1, which the rubric allows.
        claim_and_submit(self.campaign, self.users["reviewer_b"], value=5)
        item = ReviewItem.objects.get(pk=a.item_id)
        assert item.state == ReviewItem.State.AGREED
        output = str(a.order[0])
        assert item.final["scores"][output]["accuracy"] == 4.5

    def test_it_refuses_once_the_item_is_settled_and_changes_nothing(self):
        a = claim_and_submit(self.campaign, self.users["reviewer_a"], value=1)
        claim_and_submit(self.campaign, self.users["reviewer_b"], value=5)  # disputed
        result = services.review_correct(
            token=a.token, reviewer=self.users["reviewer_a"], data=full_review(a, value=5)
        )
        assert result.code == "settled"
        assert result.message == (
            "This item is disputed and waiting for an arbiter; your review can no longer be changed."
        )
        assert scores_of(a) == {1.0}
        assert not ReviewVersion.objects.exists()

    def test_it_refuses_another_reviewers_token(self):
        a = claim_and_submit(self.campaign, self.users["reviewer_a"], value=3)
        with pytest.raises(Assignment.DoesNotExist):
            services.review_correct(
                token=a.token, reviewer=self.users["reviewer_b"], data=full_review(a)
            )

    def test_it_checks_the_answers_like_a_submit(self):
        a = claim_and_submit(self.campaign, self.users["reviewer_a"], value=3)
        result = services.review_correct(
            token=a.token, reviewer=self.users["reviewer_a"], data={"scores": {"A": {}}}
        )
        assert result.code == "invalid"
        assert result.errors["scores.A.accuracy"] == "required"
        assert scores_of(a) == {3.0}


class HistoryPageTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = campaign_ready(
            items=2, overlap=2, outputs=["I am a model by OpenAI.", "Hello"]
        )

    def test_it_lists_the_reviewers_own_reviews_with_their_state_and_a_correct_link(self):
        a = claim_and_submit(self.campaign, self.users["reviewer_a"], value=3)
        self.client.force_login(self.users["reviewer_a"])
        html = self.client.get(
            reverse("review_history", args=[self.campaign.slug])
        ).content.decode()
        assert "waiting for the other reviews" in html
        assert reverse("review_correct", args=[self.campaign.slug, a.token]) in html
        # Blind: nothing but the token names the item; no contender, no item id.
        for contender in self.campaign.contenders.all():
            assert contender.name not in html and contender.model not in html

    def test_it_shows_another_reviewer_nothing_of_it(self):
        a = claim_and_submit(self.campaign, self.users["reviewer_a"], value=3)
        self.client.force_login(self.users["reviewer_b"])
        html = self.client.get(
            reverse("review_history", args=[self.campaign.slug])
        ).content.decode()
        assert a.token not in html and "You have not submitted a review" in html
        url = reverse("review_correct", args=[self.campaign.slug, a.token])
        assert self.client.get(url).status_code == 404

    def test_it_denies_the_history_to_other_roles(self):
        for persona in ("lead", "arbiter", "outsider"):
            self.client.force_login(self.users[persona])
            url = reverse("review_history", args=[self.campaign.slug])
            assert self.client.get(url).status_code == 403

    def test_the_correction_page_shows_the_saved_answers_and_saves_a_new_version(self):
        a = claim_and_submit(self.campaign, self.users["reviewer_a"], value=3, preference="B")
        self.client.force_login(self.users["reviewer_a"])
        url = reverse("review_correct", args=[self.campaign.slug, a.token])
        html = self.client.get(url).content.decode()
        assert "Correcting your review" in html
        for label in ("A", "B"):
            for dim in ("accuracy", "completeness"):
                assert f'name="score-{label}-{dim}" value="3" checked' in html
        assert 'name="preference" value="B" checked' in html
        assert "Skip this item" not in html  # a submitted review is corrected, not skipped
        data = {"preference": "tie", "comment": "on second thought"}
        for label in ("A", "B"):
            data[f"score-{label}-accuracy"] = "5"
            data[f"score-{label}-completeness"] = "4"
        response = self.client.post(url, data)
        assert response.status_code == 302 and response.url.endswith("/mine/")
        review = Review.objects.get(assignment=a)
        assert review.comment == "on second thought"
        assert review.versions.count() == 1

    def test_a_settled_item_is_not_correctable_from_its_page(self):
        a = claim_and_submit(self.campaign, self.users["reviewer_a"], value=1)
        other = UserFactory(username="reviewer_c", roles=["reviewer"])
        while True:  # reviewer_b and reviewer_c settle a's item (both items, in some order)
            item = ReviewItem.objects.get(pk=a.item_id)
            if item.state != ReviewItem.State.OPEN:
                break
            reviewer = (
                other
                if Assignment.objects.filter(reviewer=self.users["reviewer_b"], item=item).exists()
                else self.users["reviewer_b"]
            )
            claim_and_submit(self.campaign, reviewer, value=1)
        self.client.force_login(self.users["reviewer_a"])
        response = self.client.get(reverse("review_correct", args=[self.campaign.slug, a.token]))
        assert response.status_code == 302
        page = self.client.get(response.url).content.decode()
        assert "settled: the reviewers agreed; your review can no longer be changed" in page


@pytest.mark.postgres
class CorrectionRaceTests(TransactionTestCase):
    """The correction against the k-th submit, at once, on real PostgreSQL with threads:
    whichever wins, the item's settled outcome is the one its latest reviews give."""

    def test_a_correction_and_the_settling_submit_never_interleave(self):
        a_user = UserFactory(username="ra", roles=["reviewer"])
        b_user = UserFactory(username="rb", roles=["reviewer"])
        campaign = campaign_ready(items=12, overlap=2)
        outcomes = []
        for _ in range(12):
            a = claim_and_submit(campaign, a_user, value=1)
            b = services.assignment_claim_next(campaign=campaign, reviewer=b_user).assignment
            assert b.item_id == a.item_id  # items in review are offered first
            barrier = threading.Barrier(2)
            results = {}

            def correct(token=a.token, order=a.order, barrier=barrier, results=results):
                try:
                    barrier.wait()
                    fake = Assignment(order=order)
                    results["correct"] = services.review_correct(
                        token=token,
                        reviewer=a_user,
                        data=full_review(fake, value=5, preference="tie"),
                    ).code
                finally:
                    connection.close()

            def submit(token=b.token, order=b.order, barrier=barrier, results=results):
                try:
                    barrier.wait()
                    fake = Assignment(order=order)
                    results["submit"] = services.assignment_submit(
                        token=token,
                        reviewer=b_user,
                        key=token,
                        data=full_review(fake, value=5, preference="tie"),
                    ).code
                finally:
                    connection.close()

            threads = [threading.Thread(target=correct), threading.Thread(target=submit)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
            close_old_connections()
            assert results["submit"] == "saved"
            assert results["correct"] in ("saved", "settled")
            item = ReviewItem.objects.get(pk=a.item_id)
            # Corrected first: both 5, agreed. Settled first: 1 against 5, disputed, and the
            # review is still the 1 it was when the item settled.
            if results["correct"] == "saved":
                assert item.state == ReviewItem.State.AGREED, item.dispute_reasons
                assert scores_of(a) == {5.0}
            else:
                assert item.state == ReviewItem.State.DISPUTED
                assert scores_of(a) == {1.0}
                assert not ReviewVersion.objects.filter(review__assignment=a).exists()
            outcomes.append(results["correct"])
        assert len(outcomes) == 12
