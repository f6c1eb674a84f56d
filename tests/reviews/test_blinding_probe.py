"""The blinding probe: after every Nth item a reviewer is asked which contender wrote one
answer of it; the answers give Bang's blinding index per contender in the report, and the
campaign page says whether reviewers could tell."""

import json

import pytest
from django.test import SimpleTestCase, TestCase
from django.urls import reverse

from evalsite.models import ApiToken
from reviews.blinding_probe.selectors import probe_sentence
from reviews.models import Assignment, BlindingGuess, ItemOutput
from reviews.report.campaign import campaign_report
from reviews.stats.blinding import bang_index
from tasks.campaigns.definition import DefinitionError, campaign_create
from tests.factories import ContenderFactory, TestSetFactory, campaign_ready, personas
from tests.reviews.helpers import full_review
from tests.reviews.test_review_views import form_data


class BangIndexTests(SimpleTestCase):
    def test_two_contenders_match_bangs_formula_worked_by_hand(self):
        # 21 of 30 correct: BI = (21 - 9) / 30 = 0.4; Bang's variance with no "don't know"
        # (P11 (1 - P11) + P12 (1 - P12) + 2 P11 P12) / n = (0.21 + 0.21 + 0.42) / 30 = 0.028,
        # so the 95% CI is 0.4 +- 1.959964 * 0.1673320 = 0.4 +- 0.3279648.
        index = bang_index(correct=21, n=30, choices=2)
        assert index["value"] == pytest.approx(0.4)
        assert index["ci95"] == pytest.approx([0.0720352, 0.7279648], abs=1e-6)

    def test_the_anchors_all_correct_chance_and_all_wrong(self):
        assert bang_index(correct=12, n=12, choices=3)["value"] == pytest.approx(1.0)
        assert bang_index(correct=4, n=12, choices=3)["value"] == pytest.approx(0.0)
        assert bang_index(correct=0, n=12, choices=3)["value"] == pytest.approx(-1.0)
        assert bang_index(correct=0, n=10, choices=2)["ci95"] == pytest.approx([-1.0, -1.0])

    def test_three_contenders_relative_to_chance(self):
        # p = 0.6 with chance 1/3: (0.6 - 1/3) / (2/3) = 0.4; half-width
        # 1.959964 * sqrt(0.24 / 20) * 1.5 = 1.959964 * 0.1095445 * 1.5 = 0.322055.
        index = bang_index(correct=12, n=20, choices=3)
        assert index["value"] == pytest.approx(0.4)
        assert index["ci95"] == pytest.approx([0.077945, 0.722055], abs=1e-6)

    def test_it_gives_no_index_below_ten_guesses_and_says_why(self):
        index = bang_index(correct=9, n=9, choices=2)
        assert index["value"] is None and index["ci95"] is None
        assert "9 guesses; the index needs at least 10" == index["reason"]

    def test_the_sentence_says_whether_reviewers_could_tell(self):
        told = {"north": {"guesses": 30, "correct": 28, "chance": 0.5, "bang_index": {}}}
        told["north"]["bang_index"] = {
            k: bang_index(correct=28, n=30, choices=2)[k] for k in ("value", "ci95")
        }
        assert probe_sentence(told).startswith("Reviewers could tell who wrote some answers")
        assert "north (28 of 30 named correctly, chance 50%)" in probe_sentence(told)
        held = {"north": {**told["north"], "correct": 15}}
        held["north"]["bang_index"] = {
            k: bang_index(correct=15, n=30, choices=2)[k] for k in ("value", "ci95")
        }
        assert probe_sentence(held).startswith("Reviewers could not tell the contenders apart")
        few = {
            "north": {**told["north"], "guesses": 3, "bang_index": {"value": None, "ci95": None}}
        }
        assert "3 guesses so far" in probe_sentence(few)


class ProbeDefinitionTests(TestCase):
    def definition(self, **extra):
        ts = TestSetFactory(frozen=False, task_count=1)
        return {
            "slug": f"probe-{ts.pk}",
            "testset": ts.name,
            "rubric": [{"key": "accuracy"}],
            "contenders": [
                {"name": "north", "provider": "imported"},
                {"name": "south", "provider": "imported"},
            ],
            **extra,
        }

    def test_it_stores_the_interval_and_is_off_by_default(self):
        on, _ = campaign_create(definition=self.definition(blinding_probe={"every": 20}))
        assert on.blinding_probe == {"every": 20}
        off, _ = campaign_create(definition=self.definition())
        assert off.blinding_probe is None

    def test_it_rejects_a_malformed_probe(self):
        for bad, says in (
            ({"every": 0}, "blinding_probe.every: must be between 1 and 1000"),
            ({"every": "5"}, "blinding_probe.every: must be an integer"),
            ({}, "blinding_probe.every: required"),
            (7, "blinding_probe: must be"),
            ({"every": 2, "after": 1}, "blinding_probe.after: unknown field"),
        ):
            with pytest.raises(DefinitionError) as exc:
                campaign_create(definition=self.definition(blinding_probe=bad))
            assert any(says in e for e in exc.value.errors), (bad, exc.value.errors)

    def test_the_campaign_form_has_the_interval(self):
        self.client.force_login(personas()["admin"])
        body = self.client.get(reverse("campaign_new")).content.decode()
        assert 'name="probe_every"' in body and "Blinding probe" in body


class ProbeFlowTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.tokens = {who: ApiToken.issue(u) for who, u in cls.users.items()}
        cls.contenders = [ContenderFactory(name="zephyr"), ContenderFactory(name="aurora")]

    def setUp(self):
        self.campaign = campaign_ready(
            items=4, overlap=1, contenders=self.contenders, blinding_probe={"every": 2}
        )

    def api(self, who, path, body):
        auth = {"HTTP_AUTHORIZATION": f"Bearer {self.tokens[who]}"}
        return self.client.post(path, json.dumps(body), "application/json", **auth)

    def submit_on_page(self):
        mine = Assignment.objects.get(reviewer=self.users["reviewer_a"], state="active")
        url = reverse("review_submit", args=[self.campaign.slug, mine.token])
        return self.client.post(url, form_data(mine, key=mine.token))

    def test_the_page_asks_after_every_second_item_and_then_goes_on(self):
        self.client.force_login(self.users["reviewer_a"])
        self.client.post(reverse("review_next", args=[self.campaign.slug]))
        first = self.submit_on_page()
        assert "/probe/" not in first["Location"]  # one item: no question yet
        second = self.submit_on_page()
        assert "/probe/" in second["Location"]
        probe = BlindingGuess.objects.get()
        assert second["Location"] == reverse("review_probe", args=[self.campaign.slug, probe.token])
        # No next item while the question waits, however it is asked for.
        again = self.client.post(reverse("review_next", args=[self.campaign.slug]))
        assert again["Location"] == second["Location"]
        assert not Assignment.objects.filter(reviewer=self.users["reviewer_a"], state="active")
        page = self.client.get(second["Location"]).content.decode()
        assert "Who wrote this answer?" in page
        # The names in alphabetical order, and no label anywhere near them.
        assert page.index("> aurora</label>") < page.index("> zephyr</label>")
        assert "Output A" not in page and ">A<" not in page
        answer_text = ItemOutput.objects.get(pk=probe.output_id).generation.output
        assert answer_text in page
        wrong = self.client.post(second["Location"], {"guess": "nobody"})
        assert "Choose one of the names." in wrong.content.decode()
        done = self.client.post(second["Location"], {"guess": "aurora"})
        assert done.status_code == 302 and "/probe/" not in done["Location"]
        probe.refresh_from_db()
        assert probe.guessed.name == "aurora" and probe.answered_at is not None
        assert Assignment.objects.filter(reviewer=self.users["reviewer_a"], state="active")
        assert self.client.get(second["Location"]).status_code == 404  # answered

    def test_only_its_reviewer_sees_the_question(self):
        self.client.force_login(self.users["reviewer_a"])
        self.client.post(reverse("review_next", args=[self.campaign.slug]))
        self.submit_on_page()
        url = self.submit_on_page()["Location"]
        for who in ("reviewer_b", "arbiter", "lead"):
            self.client.force_login(self.users[who])
            assert self.client.get(url).status_code in (403, 404), who

    def test_the_api_submit_carries_the_question_and_takes_the_answer(self):
        url = f"/api/v1/campaigns/{self.campaign.slug}/next"
        bodies = []
        for _ in range(2):
            claim = self.api("reviewer_b", url, {}).json()
            mine = Assignment.objects.get(token=claim["token"])
            bodies.append(self.api("reviewer_b", claim["submit_url"], full_review(mine)).json())
        assert "blinding_probe" not in bodies[0]
        probe = bodies[1]["blinding_probe"]
        assert probe["choices"] == ["aurora", "zephyr"] and probe["text"]
        assert self.api("reviewer_a", probe["answer_url"], {"guess": "aurora"}).status_code == 404
        assert self.api("arbiter", probe["answer_url"], {"guess": "aurora"}).status_code == 403
        assert self.api("reviewer_b", probe["answer_url"], {"guess": "x"}).status_code == 400
        assert self.api("reviewer_b", probe["answer_url"], {"guess": "zephyr"}).status_code == 200
        assert self.api("reviewer_b", probe["answer_url"], {"guess": "zephyr"}).status_code == 404

    def test_the_report_key_and_the_campaign_page_say_whether_reviewers_could_tell(self):
        # Ten answered questions about zephyr's answers, nine named correctly (and one
        # about aurora's): zephyr's index is (0.9 - 0.5) / 0.5 = 0.8.
        aurora, zephyr = sorted(self.contenders, key=lambda c: c.name)
        item_ids = list(self.campaign.items.values_list("pk", flat=True))
        for n in range(11):
            user = personas_extra(n)
            item_id = item_ids[n % len(item_ids)]
            of = zephyr if n < 10 else aurora
            output = ItemOutput.objects.get(item_id=item_id, generation__contender=of)
            BlindingGuess.objects.create(
                campaign=self.campaign,
                reviewer=user,
                item_id=item_id,
                output=output,
                contender=of,
                guessed=zephyr if n < 9 else aurora,
                answered_at="2026-01-01T00:00:00Z",
            )
        blinding = campaign_report(campaign=self.campaign, n_boot=10)["blinding"]
        assert blinding["reports"] == 0 and blinding["held"] == 0
        assert blinding["probe_every"] == 2
        z = blinding["probe"]["zephyr"]
        assert (z["guesses"], z["correct"], z["chance"]) == (10, 9, 0.5)
        assert z["bang_index"]["value"] == pytest.approx(0.8)
        low, high = z["bang_index"]["ci95"]
        assert low == pytest.approx(0.8 - 1.959964 * (0.09 / 10) ** 0.5 * 2, abs=1e-6)
        assert high == 1.0
        a = blinding["probe"]["aurora"]
        assert a["guesses"] == 1 and a["bang_index"]["value"] is None and a["reason"]
        self.client.force_login(self.users["lead"])
        page = self.client.get(reverse("campaign_detail", args=[self.campaign.slug]))
        assert "Reviewers could tell who wrote some answers: they recognised zephyr" in (
            page.content.decode()
        )


def personas_extra(n: int):
    from tests.factories import UserFactory

    return UserFactory(username=f"probe-reviewer-{n}", roles=["reviewer"])
