"""Judges against the fake endpoint: scripted judges that agree, add one, prefer the first
position, answer at random or outside the rubric; what they are shown; their calibration."""

import json
import random
import re

from django.core.management import call_command
from django.test import TestCase, override_settings

from evalsite.models import ApiToken
from reviews.disputes.rules import item_settle
from reviews.judges.calibration import judge_calibration
from reviews.judges.models import Judgement
from reviews.judges.services import (
    JudgingError,
    judgement_run,
    judging_enqueue,
)
from reviews.report.campaign import campaign_report
from tasks.models import Judge
from tests.factories import (
    CampaignFactory,
    ContenderFactory,
    ReviewItemFactory,
    personas,
    review_create,
)
from tests.fake_llm import FakeLLM

RUBRIC = [
    {
        "key": "accuracy",
        "label": "Accuracy",
        "min": 1,
        "max": 5,
        "level": "interval",
        "max_gap": 1,
        "anchors": {"1": "wrong", "5": "fully correct"},
    }
]
QUALITY = re.compile(r"Quality (\d) of 5")


def truth(n: int) -> tuple[int, int]:
    """The true scores of item n's two outputs: spread over the scale, unequal mostly."""
    return 1 + (n * 3) % 5, 1 + (n * 7 + 2) % 5


def build(users, *, items: int, slug: str, mode: str = "both"):
    """A settled campaign: the outputs say their own quality; reviewer_a scores it, reviewer_b
    too except one point higher on every fifth output (still agreed: the gap allows 1); both
    prefer the better output (a tie when equal)."""
    contenders = [
        ContenderFactory(name="acme-large", model="acme-large-2026"),
        ContenderFactory(name="zeta-mini", model="zeta-mini-7b"),
    ]
    campaign = CampaignFactory(slug=slug, contenders=contenders, rubric=RUBRIC, mode=mode)
    unit = 0
    for n in range(items):
        item = ReviewItemFactory(campaign=campaign)
        outputs = list(item.outputs.select_related("generation").order_by("pk"))
        scores_a, scores_b = {}, {}
        for output, value in zip(outputs, truth(n), strict=True):
            output.generation.output = f"Quality {value} of 5. Restart the router, then call us."
            output.generation.save(update_fields=["output"])
            scores_a[output] = {"accuracy": float(value)}
            bump = 1 if unit % 5 == 4 and value < 5 else 0
            scores_b[output] = {"accuracy": float(value + bump)}
            unit += 1
        a, b = truth(n)
        preferred = outputs[0] if a > b else outputs[1] if b > a else "tie"
        for reviewer, scores in ((users["reviewer_a"], scores_a), (users["reviewer_b"], scores_b)):
            review_create(item, reviewer, scores=scores, preference=preferred)
        item.submitted_count = 2
        item.save(update_fields=["submitted_count"])
        item_settle(item)
    return campaign


def shown_quality(request) -> dict:
    return {label: int(QUALITY.search(text).group(1)) for label, text in request.answers.items()}


def answer(request, scores: dict, preference: str | None = None) -> dict:
    out = {"reasoning": "read both answers"}
    if request.dimensions:
        out["scores"] = {label: {"accuracy": v} for label, v in scores.items()}
    if request.choices:
        out["preference"] = preference
    return out


def better(values: dict) -> str:
    (la, a), (lb, b) = values.items()
    return la if a > b else lb if b > a else "tie"


def agreeing(request):
    values = shown_quality(request)
    return answer(request, values, better(values))


def plus_one(request):
    values = shown_quality(request)
    return answer(request, {k: min(v + 1, 5) for k, v in values.items()}, better(values))


def first_position(request):
    return answer(request, shown_quality(request), request.labels[0])


def at_random(seed: int):
    rng = random.Random(seed)

    def fn(request):
        return answer(
            request, {k: rng.randint(1, 5) for k in request.labels}, rng.choice(request.choices)
        )

    return fn


def off_scale(request):
    return answer(request, {k: 7 for k in request.labels}, request.labels[0])


def make_judge(fake, name: str, provider: str = "openai", **fields) -> Judge:
    return Judge.objects.create(
        name=name,
        provider=provider,
        base_url=fake.base_url,
        model=name,
        price_in_per_mtok=1,
        price_out_per_mtok=2,
        **fields,
    )


def run_all(campaign, judge) -> None:
    """Run every queued judgement to the end in this process, as the workers would."""
    for _ in range(10):
        pending = list(
            Judgement.objects.filter(campaign=campaign, judge=judge, status="pending").values_list(
                "pk", flat=True
            )
        )
        if not pending:
            return
        for pk in pending:
            judgement_run(judgement_id=pk)
    raise AssertionError("judgements still pending after 10 rounds")


@override_settings(JUDGE_MAX_ATTEMPTS=3)
class ScriptedJudgeTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = build(cls.users, items=36, slug="calib")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fake = FakeLLM()

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    def judged(self, name: str, fn, provider: str = "openai", **fields) -> dict:
        self.fake.judge(name, fn)
        judge = make_judge(self.fake, name, provider, **fields)
        judging_enqueue(campaign=self.campaign, judge=judge)
        run_all(self.campaign, judge)
        return judge_calibration(campaign=self.campaign, judge=judge, n_boot=400)

    def test_a_judge_that_agrees_is_calibrated(self):
        out = self.judged("agreeing", agreeing)
        accuracy = out["dimensions"]["accuracy"]
        assert out["judgements"] == 72 and out["items"] == 36
        assert accuracy["n"] == 36
        assert accuracy["verdict"] == "calibrated", accuracy["reason"]
        assert accuracy["advantage"]["ci95"][0] > -0.1
        assert accuracy["bias"]["value"] < 0  # the panel leans up where reviewer_b added one
        assert out["preference"]["verdict"] == "calibrated", out["preference"]["reason"]
        assert out["preference"]["position_consistency"]["rate"] == 1.0
        assert out["cost"] > 0

    def test_a_judge_that_adds_one_is_biased_and_not_calibrated(self):
        out = self.judged("lenient", plus_one, provider="anthropic")
        accuracy = out["dimensions"]["accuracy"]
        assert accuracy["bias"]["ci95"][0] > 0.3
        assert accuracy["verdict"] == "not_calibrated"
        assert "systematically higher" in accuracy["reason"]
        assert accuracy["exact"] < 0.5

    def test_a_judge_that_prefers_the_first_position_is_inconsistent(self):
        out = self.judged("first", first_position)
        pc = out["preference"]["position_consistency"]
        assert pc["n"] == 36 and pc["rate"] < 0.2
        assert out["preference"]["verdict"] == "not_calibrated"
        # Its scores are right: the dimension is still calibrated.
        assert out["dimensions"]["accuracy"]["verdict"] == "calibrated"

    def test_a_judge_at_random_is_not_calibrated(self):
        out = self.judged("coin", at_random(7))
        assert out["dimensions"]["accuracy"]["verdict"] == "not_calibrated"
        assert out["dimensions"]["accuracy"]["advantage"]["value"] < -0.3

    def test_answers_outside_the_rubric_fail_their_attempts_and_store_nothing(self):
        out = self.judged("wild", off_scale, samples=1, position_swap=False)
        rows = Judgement.objects.filter(judge__name="wild")
        assert rows.count() == 36
        assert set(rows.values_list("status", flat=True)) == {"failed"}
        assert not rows.filter(scores__isnull=False).exists()
        row = rows.first()
        assert row.attempts == 3 and len(row.failures) == 3
        assert "outside the scale" in row.failures[0]["cause"]
        assert "gave up after 3 attempts" in row.error
        assert out["judgements"] == 0 and out["failed"] == 36
        assert out["dimensions"]["accuracy"]["verdict"] == "insufficient"
        # The admin's page lists the failures with their causes; a lead's does not.
        self.client.force_login(self.users["admin"])
        page = self.client.get(f"/campaigns/{self.campaign.slug}/judges/wild/").content.decode()
        assert "Failed judgements" in page and "is outside the scale" in page
        self.client.force_login(self.users["lead"])
        page = self.client.get(f"/campaigns/{self.campaign.slug}/judges/wild/").content.decode()
        assert "Failed judgements" not in page

    def test_a_failed_attempt_is_retried_and_the_next_answer_kept(self):
        seen = set()

        def wrong_first(request):
            # The first answer for each prompt is off the scale, the next one right.
            first = request.prompt not in seen
            seen.add(request.prompt)
            return off_scale(request) if first else agreeing(request)

        self.judged("second-try", wrong_first, samples=1, position_swap=False)
        rows = Judgement.objects.filter(judge__name="second-try").order_by("pk")
        first = rows.first()
        assert first.status == "done" and first.attempts == 2
        assert len(first.failures) == 1 and "outside the scale" in first.failures[0]["cause"]
        assert first.error == ""
        # Both calls were paid for: the failed attempt's tokens are in the row's totals.
        calls = [c for c in self.fake.calls_for("second-try")][:2]
        assert first.input_tokens == sum(c["usage"][0] for c in calls)
        assert all(r.status == "done" and r.attempts == 2 for r in rows)

    def test_an_answer_that_is_not_json_is_a_failed_attempt(self):
        self.judged("prose", lambda r: "I think A is better.", position_swap=False)
        row = Judgement.objects.filter(judge__name="prose").first()
        assert row.status == "failed" and "not JSON" in row.failures[0]["cause"]
        assert row.raw_answer == "I think A is better."

    def test_an_endpoint_that_refuses_structured_output_fails_at_once(self):
        self.fake.no_structured.add("plain")
        self.judged("plain", agreeing, position_swap=False)
        rows = Judgement.objects.filter(judge__name="plain")
        assert set(rows.values_list("status", flat=True)) == {"failed"}
        row = rows.first()
        assert row.attempts == 1
        assert "refused" in row.error and "structured output is not supported" in row.error

    def test_the_judge_sees_the_reviewer_view_and_never_a_contender(self):
        self.judged("watcher", agreeing, samples=2)
        calls = self.fake.calls_for("watcher")
        assert len(calls) == 36 * 2 * 2
        for call in calls:
            body = json.dumps(call["body"]["messages"]).lower()
            for secret in ("acme", "zeta", "large-2026", "mini-7b", "contender"):
                assert secret not in body
            schema = call["body"]["response_format"]["json_schema"]
            assert schema["strict"] is True
            props = schema["schema"]["properties"]
            assert props["preference"]["enum"] == ["A", "B", "tie", "both_bad"]
            assert props["scores"]["properties"]["A"]["properties"]["accuracy"]["enum"] == [
                1,
                2,
                3,
                4,
                5,
            ]
            prompt = call["body"]["messages"][-1]["content"]
            assert "1: wrong" in prompt and "5: fully correct" in prompt
        # Each (item, sample): the swapped row shows the reverse of the drawn order.
        for row in Judgement.objects.filter(judge__name="watcher", swapped=False):
            twin = Judgement.objects.get(
                judge=row.judge, item=row.item, sample=row.sample, swapped=True
            )
            assert twin.order == row.order[::-1]
        # The drawn orders are not all the same (randomized, not by id).
        firsts = {
            row.order[0] == min(row.order)
            for row in Judgement.objects.filter(judge__name="watcher", swapped=False)
        }
        assert firsts == {True, False}

    def test_a_self_naming_output_reaches_the_judge_masked(self):
        campaign = build(self.users, items=1, slug="self-naming")
        output = campaign.generations.order_by("pk").first()
        output.output = "Quality 4 of 5. As acme-large-2026, built by Acme, I suggest a restart."
        output.save(update_fields=["output"])
        self.fake.judge("masked", agreeing)
        judge = make_judge(self.fake, "masked", position_swap=False)
        judging_enqueue(campaign=campaign, judge=judge)
        run_all(campaign, judge)
        prompt = self.fake.calls_for("masked")[0]["body"]["messages"][-1]["content"]
        assert "I suggest a restart" in prompt
        # Masked as a reviewer sees it: the contender's name and model id are the campaign's
        # masking words (a vendor word alone is masked where the campaign's redact lists it).
        assert "As [redacted], built by" in prompt
        assert "acme-large" not in prompt.lower()

    def test_the_report_has_a_judges_key_and_running_again_judges_nothing_twice(self):
        self.fake.judge("agree2", agreeing)
        judge = make_judge(self.fake, "agree2")
        assert judging_enqueue(campaign=self.campaign, judge=judge) == 72
        run_all(self.campaign, judge)
        assert judging_enqueue(campaign=self.campaign, judge=judge) == 0
        # A duplicated message for a done row does nothing.
        row = Judgement.objects.filter(judge=judge).first()
        assert judgement_run(judgement_id=row.pk).action == "skip"
        assert len(self.fake.calls_for("agree2")) == 72
        report = campaign_report(campaign=self.campaign, n_boot=100)
        entry = report["judges"]["agree2"]
        assert {"items", "judgements", "cost", "dimensions", "preference"} <= set(entry)
        accuracy = entry["dimensions"]["accuracy"]
        for key in (
            "n",
            "judge_vs_panel",
            "reviewer_vs_panel",
            "advantage",
            "epsilon",
            "bias",
            "exact",
            "within_one",
            "confusion",
            "verdict",
            "reason",
        ):
            assert key in accuracy
        assert "ac1" in accuracy["judge_vs_panel"] or "ac2" in accuracy["judge_vs_panel"]
        assert {"n", "agreement", "position_consistency", "verdict", "reason"} <= set(
            entry["preference"]
        )


class PublishedAlphaThroughTheJudgeTests(TestCase):
    """The published two reviewers, ten items: the judge answers r1, the panel is r2."""

    R1 = [5, 4, 4, 3, 2, 5, 1, 3, 4, 2]
    R2 = [4, 4, 5, 3, 2, 5, 2, 3, 3, 2]

    def test_the_judge_path_gives_the_published_alpha(self):
        users = personas()
        contender = ContenderFactory(name="solo")
        rubric = [dict(RUBRIC[0], level="ordinal", max_gap=4)]
        campaign = CampaignFactory(
            slug="published", contenders=[contender], rubric=rubric, mode="rubric", overlap=1
        )
        for n, (r1, r2) in enumerate(zip(self.R1, self.R2, strict=True)):
            item = ReviewItemFactory(campaign=campaign)
            output = item.outputs.get()
            output.generation.output = f"Quality {r1} of 5. Item {n}."
            output.generation.save(update_fields=["output"])
            review_create(item, users["reviewer_a"], scores={output: {"accuracy": float(r2)}})
            item.submitted_count = 1
            item.save(update_fields=["submitted_count"])
            item_settle(item)
        with FakeLLM() as fake:
            fake.judge("r1", lambda r: answer(r, shown_quality(r)))
            judge = make_judge(fake, "r1", position_swap=False)
            judging_enqueue(campaign=campaign, judge=judge)
            run_all(campaign, judge)
        out = judge_calibration(campaign=campaign, judge=judge, n_boot=200)
        figures = out["dimensions"]["accuracy"]
        assert round(figures["judge_vs_panel"]["alpha"], 3) == 0.888
        assert figures["exact"] == 0.6
        assert figures["verdict"] == "insufficient"
        assert out["preference"] is None  # rubric mode asks for no preference


class JudgeDefinitionTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def test_create_judge_reads_a_yaml_file(self):
        path = self.tmp("judge.yaml")
        path.write_text(
            "name: judge-a\nprovider: openai\nbase_url: http://127.0.0.1:8001/v1\n"
            "model: judge-model\napi_key_env: JUDGE_KEY\nparams: {temperature: 0}\n"
            "price_in_per_mtok: 0.5\nprice_out_per_mtok: 1.5\nmax_concurrency: 8\n"
            "samples: 3\nposition_swap: true\ninstructions: Be strict about facts.\n"
        )
        call_command("create_judge", str(path), stdout=open("/dev/null", "w"))
        judge = Judge.objects.get(name="judge-a")
        assert (judge.samples, judge.max_concurrency, judge.position_swap) == (3, 8, True)
        assert judge.params == {"temperature": 0} and judge.instructions == "Be strict about facts."

    def test_it_rejects_a_bad_definition_with_every_problem_and_stores_nothing(self):
        from django.core.management.base import CommandError

        path = self.tmp("bad.json")
        path.write_text(
            json.dumps(
                {
                    "name": "bad/name",
                    "provider": "imported",
                    "model": "m",
                    "samples": 0,
                    "api_key_env": "sk-123 secret",
                    "colour": "red",
                }
            )
        )
        try:
            call_command("create_judge", str(path))
        except CommandError as exc:
            message = str(exc)
        else:
            raise AssertionError("a bad definition was accepted")
        for part in ("name:", "provider:", "samples:", "api_key_env:", "colour: unknown field"):
            assert part in message
        assert not Judge.objects.exists()

    def test_the_api_creates_judges_for_admins_only(self):
        body = {"name": "api-judge", "provider": "anthropic", "model": "claude-judge"}

        def post(persona):
            token = ApiToken.issue(self.users[persona])
            return self.client.post(
                "/api/v1/judges",
                json.dumps(body),
                content_type="application/json",
                headers={"Authorization": f"Bearer {token}"},
            )

        assert post("lead").status_code == 403
        assert post("reviewer_a").status_code == 403
        response = post("admin")
        assert response.status_code == 201, response.content
        assert response.json()["samples"] == 1 and response.json()["position_swap"] is True
        again = post("admin")
        assert again.status_code == 400 and "already exists" in json.dumps(again.json())

    def test_the_judge_pages_are_for_admins_and_leads(self):
        Judge.objects.create(name="paged", provider="openai", model="m")
        self.client.force_login(self.users["lead"])
        page = self.client.get("/judges/").content.decode()
        assert "paged" in page and 'href="/judges/" aria-current="page">Judges</a>' in page
        assert self.client.get("/judges/paged/").status_code == 200
        self.client.force_login(self.users["reviewer_a"])
        assert self.client.get("/judges/").status_code == 403

    def tmp(self, name):
        import tempfile
        from pathlib import Path

        folder = Path(tempfile.mkdtemp())
        return folder / name


class JudgingEntryPointTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = build(cls.users, items=3, slug="entry")
        cls.judge = Judge.objects.create(name="entry-judge", provider="openai", model="m")

    def api(self, persona, method, path):
        token = ApiToken.issue(self.users[persona])
        return getattr(self.client, method)(path, headers={"Authorization": f"Bearer {token}"})

    def test_the_api_queues_judging_with_202_and_reports_progress(self):
        url = "/api/v1/campaigns/entry/judges/entry-judge"
        assert self.api("lead", "post", url + "/runs").status_code == 403
        response = self.api("admin", "post", url + "/runs")
        assert response.status_code == 202
        assert response.json()["queued"] == 3 * 2
        detail = self.api("lead", "get", url).json()
        assert detail["progress"]["pending"] == 6
        assert detail["calibration"]["dimensions"]["accuracy"]["verdict"] == "insufficient"
        assert (
            self.api("admin", "post", "/api/v1/campaigns/entry/judges/nobody/runs").status_code
            == 404
        )

    def test_a_campaign_with_nothing_ready_is_refused_and_nothing_is_made(self):
        empty = CampaignFactory(slug="empty", rubric=RUBRIC)
        try:
            judging_enqueue(campaign=empty, judge=self.judge)
        except JudgingError as exc:
            assert "no review item ready" in str(exc)
        else:
            raise AssertionError("judging a campaign with no ready item was accepted")
        assert not Judgement.objects.filter(campaign=empty).exists()

    def test_a_missing_api_key_variable_is_refused(self):
        judge = Judge.objects.create(
            name="keyed", provider="openai", model="m", api_key_env="NO_SUCH_JUDGE_KEY_VAR"
        )
        response = self.api("admin", "post", "/api/v1/campaigns/entry/judges/keyed/runs")
        assert response.status_code == 400 and "NO_SUCH_JUDGE_KEY_VAR" in response.json()["error"]
        assert not Judgement.objects.filter(judge=judge).exists()

    def test_the_campaign_judge_page_and_button(self):
        self.client.force_login(self.users["admin"])
        page = self.client.get("/campaigns/entry/judges/?summary=1")
        assert b"entry-judge" in page.content and b"Judge</button>" in page.content
        response = self.client.post("/campaigns/entry/judges/entry-judge/run")
        assert response.status_code == 302
        assert Judgement.objects.filter(campaign=self.campaign, judge=self.judge).count() == 6
        # While the judge works, the campaign page's section polls for its progress.
        summary = self.client.get("/campaigns/entry/judges/?summary=1").content.decode()
        assert 'hx-trigger="load delay:2s"' in summary and "0 of 6" in summary
        page = self.client.get("/campaigns/entry/judges/entry-judge/")
        assert page.status_code == 200 and b"insufficient" in page.content
        self.client.force_login(self.users["reviewer_a"])
        assert self.client.get("/campaigns/entry/judges/entry-judge/").status_code == 403
        assert self.client.post("/campaigns/entry/judges/entry-judge/run").status_code == 403


class ReconcilerTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.campaign = build(personas(), items=2, slug="reconciled")
        cls.judge = Judge.objects.create(name="lost", provider="openai", model="m")

    def test_it_returns_lapsed_claims_and_resends_lost_messages(self):
        from datetime import timedelta

        from django.utils import timezone

        from reviews.judges.services import judgement_reconcile

        judging_enqueue(campaign=self.campaign, judge=self.judge)
        rows = list(Judgement.objects.filter(judge=self.judge).order_by("pk"))
        long_ago = timezone.now() - timedelta(hours=1)
        # A worker died holding the first; the second's message was lost; the rest are fresh.
        Judgement.objects.filter(pk=rows[0].pk).update(
            status="running", claim_token="t", lease_expires_at=long_ago
        )
        Judgement.objects.filter(pk=rows[1].pk).update(queued_at=long_ago)
        with self.captureOnCommitCallbacks() as sent:
            result = judgement_reconcile(requeue_after=60)
        assert result == {"lapsed": 1, "requeued": 2}
        assert len(sent) == 1  # one callback sends both messages after the commit
        first = Judgement.objects.get(pk=rows[0].pk)
        assert (
            first.status == "pending" and first.claim_token == "" and first.lease_expires_at is None
        )


class ThreeOutputsTests(TestCase):
    def test_an_item_of_three_outputs_is_judged_under_three_labels_and_stored_unpermuted(self):
        contenders = [ContenderFactory(name=f"trio-{n}") for n in range(3)]
        campaign = CampaignFactory(slug="trio", contenders=contenders, rubric=RUBRIC, mode="both")
        item = ReviewItemFactory(campaign=campaign)
        truth_of = {}
        for value, output in zip((2, 5, 3), item.outputs.order_by("pk"), strict=True):
            output.generation.output = f"Quality {value} of 5. Call us."
            output.generation.save(update_fields=["output"])
            truth_of[output.pk] = value

        def best_of_three(request):
            values = shown_quality(request)
            return answer(request, values, max(values, key=values.get))

        with FakeLLM() as fake:
            fake.judge("trio-judge", best_of_three)
            judge = make_judge(fake, "trio-judge")
            judging_enqueue(campaign=campaign, judge=judge)
            run_all(campaign, judge)
            schema = fake.calls_for("trio-judge")[0]["body"]["response_format"]["json_schema"]
        choices = schema["schema"]["properties"]["preference"]["enum"]
        assert choices == ["A", "B", "C", "tie", "both_bad"]
        rows = list(Judgement.objects.filter(judge=judge).order_by("swapped"))
        assert rows[1].order == rows[0].order[::-1]
        for row in rows:
            assert row.status == "done"
            assert {int(o): s["accuracy"] for o, s in row.scores.items()} == truth_of
            assert int(row.preference) == max(truth_of, key=truth_of.get)
