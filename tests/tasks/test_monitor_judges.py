"""Monitors graded by a judge: refused unless the judge is calibrated on a named campaign (or
let in on purpose, and then marked), and a calibrated judge catching what no check sees."""

import io
import json
import re
from unittest import mock

from django.core.management import call_command
from django.test import TestCase, TransactionTestCase
from django.urls import reverse

from reviews.disputes.rules import item_settle
from reviews.judges import services as judging
from reviews.judges.models import Judgement
from reviews.judges.services import judgement_run, judging_enqueue
from tasks.campaigns.definition import DefinitionError
from tasks.models import Judge, Monitor, MonitorAlert
from tasks.monitors.alerts import alert_json
from tasks.monitors.definition import monitor_create, monitor_definition, monitor_update
from tasks.monitors.metrics import (
    compare_tables,
    judge_preferences_add,
    judge_scores_add,
    run_metrics,
    run_table,
)
from tasks.monitors.selectors import trend_charts
from tests.factories import (
    CampaignFactory,
    ContenderFactory,
    ReviewItemFactory,
    personas,
    review_create,
)
from tests.fake_llm import FakeLLM
from tests.tasks.test_monitors import definition, inline_pipeline, make_testset

TONE = [
    {"key": "tone", "label": "Tone", "min": 1, "max": 5, "level": "interval", "max_gap": 1,
     "anchors": {"1": "rude", "5": "courteous"}},
]  # fmt: skip
QUALITY = re.compile(r"Quality (\d) of 5")
RUDE = "Whatever. "


def truth(n: int) -> tuple[int, int]:
    return 1 + (n * 3) % 5, 1 + (n * 7 + 2) % 5


def settled_campaign(users, *, slug: str, items: int = 36):
    """A campaign on tone whose 36 items two reviewers settled: the outputs say their own
    tone, reviewer_a gives it, reviewer_b one more on every fifth output (still agreed)."""
    contenders = [
        ContenderFactory(name="acme-large", model="acme-large-2026"),
        ContenderFactory(name="zeta-mini", model="zeta-mini-7b"),
    ]
    campaign = CampaignFactory(slug=slug, contenders=contenders, rubric=TONE, mode="both")
    unit = 0
    for n in range(items):
        item = ReviewItemFactory(campaign=campaign)
        outputs = list(item.outputs.select_related("generation").order_by("pk"))
        scores_a, scores_b = {}, {}
        for output, value in zip(outputs, truth(n), strict=True):
            output.generation.output = f"Quality {value} of 5. Restart the router, then call us."
            output.generation.save(update_fields=["output"])
            scores_a[output] = {"tone": float(value)}
            bump = 1 if unit % 5 == 4 and value < 5 else 0
            scores_b[output] = {"tone": float(value + bump)}
            unit += 1
        a, b = truth(n)
        preferred = outputs[0] if a > b else outputs[1] if b > a else "tie"
        for reviewer, scores in ((users["reviewer_a"], scores_a), (users["reviewer_b"], scores_b)):
            review_create(item, reviewer, scores=scores, preference=preferred)
        item.submitted_count = 2
        item.save(update_fields=["submitted_count"])
        item_settle(item)
    return campaign


def tone_of(text: str) -> int:
    """The scripted judge's reading of one answer: the tone an answer states, else 2 for a
    curt answer and 5 for any other."""
    stated = QUALITY.search(text)
    if stated:
        return int(stated.group(1))
    return 2 if RUDE.strip() in text else 5


def fair(request) -> dict:
    """Scores the tone an answer states; prefers the better one. A judgement against a
    baseline asks no scores: then only the preference."""
    values = {label: tone_of(text) for label, text in request.answers.items()}
    out = {"reasoning": "read the answers"}
    if request.dimensions:
        out["scores"] = {k: {"tone": v} for k, v in values.items()}
    if request.choices:
        (la, a), (lb, b) = values.items()
        out["preference"] = la if a > b else lb if b > a else "tie"
    return out


def lenient(request) -> dict:
    out = fair(request)
    out["scores"] = {k: {"tone": min(v["tone"] + 1, 5)} for k, v in out["scores"].items()}
    return out


def first_shown(request) -> dict:
    """Fair on the scores, but always prefers whatever is shown first."""
    out = fair(request)
    if request.choices:
        out["preference"] = request.labels[0]
    return out


def run_inline(ids: list[int]) -> None:
    """The judging messages played in process, each run to its end (retries included)."""
    for pk in ids:
        for _ in range(5):
            if Judgement.objects.filter(pk=pk, status="pending").exists():
                judgement_run(judgement_id=pk)


def calibrated_on(fake, campaign, name: str, fn) -> Judge:
    fake.judge(name, fn)
    judge = Judge.objects.create(
        name=name, provider="openai", base_url=fake.base_url, model=name,
        price_in_per_mtok=1, price_out_per_mtok=2, position_swap=True,
    )  # fmt: skip
    with mock.patch.object(judging, "_send", run_inline):
        judging_enqueue(campaign=campaign, judge=judge)
    # Inside a test's transaction the messages wait for a commit that never comes: run them.
    run_inline(list(Judgement.objects.filter(judge=judge).values_list("pk", flat=True)))
    return judge


def judged(**over) -> dict:
    """The monitor definition of test_monitors, graded by a judge on tone as well."""
    data = definition(schedule="", alerts={})
    data["thresholds"] = [
        {"metric": "check_pass_rate", "max_drop": 0.05},
        {"metric": "judge.tone", "max_drop": 0.5},
    ]
    data.update(over)
    return data


class JudgeDefinitionTests(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fake = FakeLLM()
        super().setUpClass()

    @classmethod
    def setUpTestData(cls):
        make_testset()
        ContenderFactory(name="oa", provider="openai", model="oa", base_url=cls.fake.base_url)
        cls.campaign = settled_campaign(personas(), slug="tone-panel")
        calibrated_on(cls.fake, cls.campaign, "judge-a", fair)
        calibrated_on(cls.fake, cls.campaign, "judge-lenient", lenient)
        calibrated_on(cls.fake, cls.campaign, "judge-first", first_shown)
        CampaignFactory(slug="tone-only", rubric=TONE, mode="rubric")

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    def refused(self, data) -> list[str]:
        with self.assertRaises(DefinitionError) as caught:
            monitor_create(definition=data)
        assert not Monitor.objects.exists()
        return caught.exception.errors

    def test_an_uncalibrated_judge_is_refused_with_its_reason(self):
        errors = self.refused(judged(judge="judge-lenient", calibration="tone-panel"))
        assert len(errors) == 1, errors
        assert (
            "judge-lenient is not calibrated on tone-panel for tone (not_calibrated:" in errors[0]
        )
        assert "systematically higher" in errors[0]
        assert "allow_uncalibrated" in errors[0]

    def test_allow_uncalibrated_lets_it_in_and_says_so(self):
        monitor = monitor_create(
            definition=judged(
                judge="judge-lenient", calibration="tone-panel", allow_uncalibrated=True
            )
        )
        assert (monitor.judge.name, monitor.calibration.slug) == ("judge-lenient", "tone-panel")
        assert monitor_definition(monitor)["allow_uncalibrated"] is True

    def test_a_calibrated_judge_is_accepted_and_can_be_taken_off(self):
        monitor = monitor_create(definition=judged(judge="judge-a", calibration="tone-panel"))
        assert monitor.judge.name == "judge-a" and not monitor.allow_uncalibrated
        with self.assertRaises(DefinitionError) as caught:
            monitor_update(monitor=monitor, changes={"judge": None})  # judge.tone still named
        assert caught.exception.errors == [
            'thresholds: judge.tone needs a judge ("judge" and "calibration")'
        ]
        thresholds = [{"metric": "check_pass_rate", "max_drop": 0.05}]
        monitor = monitor_update(monitor=monitor, changes={"judge": None, "thresholds": thresholds})
        assert monitor.judge is None and monitor.calibration is None
        assert "judge" not in monitor_definition(monitor)

    def test_bad_judge_fields_are_each_refused_in_words(self):
        assert self.refused(judged(judge="nobody", calibration="tone-panel")) == [
            "judge: no judge named 'nobody'"
        ]
        assert self.refused(judged(judge="judge-a", calibration="no-such")) == [
            "calibration: no campaign 'no-such'"
        ]
        assert self.refused(judged()) == [
            'thresholds: judge.tone needs a judge ("judge" and "calibration")'
        ]
        errors = self.refused(
            judged(
                judge="judge-lenient",
                calibration="tone-panel",
                allow_uncalibrated=True,
                thresholds=[{"metric": "judge.accuracy", "max_drop": 0.5}],
            )
        )
        assert errors == [
            "thresholds: tone-panel's rubric has no dimension 'accuracy' (it has tone)"
        ]

    def test_a_calibration_campaign_with_no_settled_items_is_refused_in_words(self):
        # Judged, but nobody has settled an item: nothing to calibrate against.
        unsettled = CampaignFactory(slug="unsettled", rubric=TONE, mode="both")
        for _ in range(3):
            ReviewItemFactory(campaign=unsettled, state="open")
        judge = Judge.objects.get(name="judge-a")
        with mock.patch.object(judging, "_send", run_inline):
            judging_enqueue(campaign=unsettled, judge=judge)
        run_inline(list(Judgement.objects.filter(campaign=unsettled).values_list("pk", flat=True)))
        assert Judgement.objects.filter(campaign=unsettled, status="done").count() == 6
        errors = self.refused(judged(judge="judge-a", calibration="unsettled"))
        assert len(errors) == 1, errors
        assert errors[0].startswith(
            "judge: judge-a is not calibrated on unsettled for tone (insufficient: only 0 "
            "settled items with a judgement: at least 30 are needed"
        )

    def test_the_preference_win_rate_needs_a_calibrated_preference(self):
        preference = [{"metric": "judge.preference_win_rate", "max_drop": 0.1}]
        # Its scores are fair, its preference follows the position: refused for the preference.
        errors = self.refused(
            judged(judge="judge-first", calibration="tone-panel", thresholds=preference)
        )
        assert len(errors) == 1, errors
        assert "judge-first is not calibrated on tone-panel for the preference" in errors[0]
        # A calibration campaign whose reviewers gave no preference cannot vouch for one.
        errors = self.refused(
            judged(
                judge="judge-a",
                calibration="tone-only",
                thresholds=preference,
                allow_uncalibrated=True,
            )
        )
        assert errors == [
            "thresholds: judge.preference_win_rate needs a calibration campaign that asks "
            "reviewers for a preference; tone-only asks none (its mode is rubric)"
        ]
        monitor = monitor_create(
            definition=judged(judge="judge-a", calibration="tone-panel", thresholds=preference)
        )
        assert monitor.thresholds == preference


class JudgeFormTests(TestCase):
    """The monitor form's judge field: choose a judge, see its calibration, read the refusal."""

    @classmethod
    def setUpClass(cls):
        cls.fake = FakeLLM()
        super().setUpClass()

    @classmethod
    def setUpTestData(cls):
        make_testset()
        ContenderFactory(name="oa", provider="openai", model="oa", base_url=cls.fake.base_url)
        cls.users = personas()
        campaign = settled_campaign(cls.users, slug="tone-panel")
        calibrated_on(cls.fake, campaign, "judge-a", fair)
        calibrated_on(cls.fake, campaign, "judge-lenient", lenient)

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    def form(self, **over) -> dict:
        data = {
            "slug": "golden", "name": "Golden", "testset": "golden@2", "contenders": ["oa"],
            "samples_per_task": "1", "schedule": "", "baseline": "first",
            "threshold_rows": "2", "t-0-metric": "judge.tone", "t-0-rule": "max_drop",
            "t-0-value": "0.5", "t-1-metric": "", "webhook": "", "email": "",
            "judge": "judge-lenient", "calibration": "tone-panel",
        }  # fmt: skip
        data.update(over)
        return data

    def test_it_shows_the_judges_calibration_and_refuses_an_uncalibrated_one_in_words(self):
        self.client.force_login(self.users["admin"])
        page = self.client.get(reverse("monitor_new")).content.decode()
        assert '<option value="judge-lenient">' in page and '<option value="tone-panel">' in page
        preview = reverse("monitor_judge_preview")
        state = self.client.get(
            preview, {"judge": "judge-lenient", "calibration": "tone-panel"}
        ).content.decode()
        assert "<strong>tone</strong>: not_calibrated" in state
        assert "systematically higher" in state
        assert "judge-lenient is not calibrated on tone-panel for tone" in state
        assert "tick allow_uncalibrated" in state
        state = self.client.get(
            preview, {"judge": "judge-a", "calibration": "tone-panel"}
        ).content.decode()
        assert "<strong>tone</strong>: calibrated" in state and "judge-refusal" not in state
        # Submitted uncalibrated: refused in the same words, nothing made.
        response = self.client.post(reverse("monitor_new"), self.form())
        page = response.content.decode()
        assert response.status_code == 200 and 'data-testid="form-errors"' in page
        assert "judge-lenient is not calibrated on tone-panel for tone" in page
        assert 'data-testid="judge-refusal"' in page
        assert not Monitor.objects.exists()
        # Ticked: made, and said.
        response = self.client.post(reverse("monitor_new"), self.form(allow_uncalibrated="on"))
        assert response.status_code == 302, response.content.decode()[-2000:]
        monitor = Monitor.objects.get()
        assert monitor.judge.name == "judge-lenient" and monitor.allow_uncalibrated
        page = self.client.get(reverse("monitor_edit", args=["golden"])).content.decode()
        assert '<option value="judge-lenient" selected>' in page
        assert "judge not calibrated: every chart, alert and comparison will say so" in page
        # The edit form without a judge takes it off (the judge's threshold with it).
        response = self.client.post(
            reverse("monitor_edit", args=["golden"]),
            self.form(judge="", calibration="", **{"t-0-metric": "check_pass_rate"}),
        )
        assert response.status_code == 302, response.content.decode()[-2000:]
        assert Monitor.objects.get().judge is None

    def test_only_admins_read_the_judge_preview(self):
        self.client.force_login(self.users["lead"])
        response = self.client.get(
            reverse("monitor_judge_preview"), {"judge": "judge-a", "calibration": "tone-panel"}
        )
        assert response.status_code == 403


class JudgeCatchesToneTests(TransactionTestCase):
    def setUp(self):
        self.fake = FakeLLM()
        make_testset()
        ContenderFactory(
            name="oa", provider="openai", model="oa", base_url=self.fake.base_url,
            price_in_per_mtok=1, price_out_per_mtok=2,
        )  # fmt: skip
        self.users = personas()
        self.campaign = settled_campaign(self.users, slug="tone-panel")

    def tearDown(self):
        self.fake.close()

    def _run(self) -> tuple[int, dict, str]:
        out, err = io.StringIO(), io.StringIO()
        code = 0
        with inline_pipeline(), mock.patch.object(judging, "_send", run_inline):
            try:
                call_command("run_monitor", "golden", "--wait", "--interval", "0.01",
                             stdout=out, stderr=err)  # fmt: skip
            except SystemExit as exc:
                code = exc.code
        return code, json.loads(out.getvalue()), err.getvalue()

    def _two_runs(self) -> tuple[dict, dict, str]:
        code, first, _ = self._run()
        assert code == 0
        self.fake.rewrite("oa", lambda a: RUDE + a)  # curt, and still passing every check
        code, second, summary = self._run()
        assert code == 3, summary
        return first, second, summary

    def test_a_calibrated_judge_catches_a_drop_in_tone_that_no_check_sees(self):
        calibrated_on(self.fake, self.campaign, "judge-a", fair)
        monitor = monitor_create(definition=judged(judge="judge-a", calibration="tone-panel"))
        first, second, summary = self._two_runs()
        assert first["metrics"]["oa"]["judge.tone"] == 5.0
        entry = second["contenders"]["oa"]
        assert entry["metrics"]["check_pass_rate"]["delta"] == 0.0  # the checks see nothing
        tone = entry["metrics"]["judge.tone"]
        assert (tone["baseline"], tone["run"], tone["delta"]) == (5.0, 2.0, -3.0)
        assert tone["ci95"] == [-3.0, -3.0] and tone["p"] < 0.05
        assert [(a["metric"], a["rule"]) for a in second["alerts"]] == [("judge.tone", "max_drop")]
        assert second["judge"] == {
            "name": "judge-a", "calibration": "tone-panel", "calibrated": True, "note": "",
        }  # fmt: skip
        assert "judge.tone: 5 -> 2" in summary
        # One judgement per output and order (10 tasks x 1 sample x 2 orders), and its cost.
        run = monitor.runs.get(number=2)
        assert run.judging["judgements"] == 20 and run.judging["failed"] == 0
        assert run.judging["cost"] > 0
        assert "judge not calibrated" not in json.dumps(second)

    def test_the_judge_prefers_the_baselines_courteous_answers(self):
        calibrated_on(self.fake, self.campaign, "judge-a", fair)
        thresholds = [
            {"metric": "check_pass_rate", "max_drop": 0.05},
            {"metric": "judge.preference_win_rate", "max_drop": 0.2},
        ]
        monitor = monitor_create(
            definition=judged(judge="judge-a", calibration="tone-panel", thresholds=thresholds)
        )
        first, second, summary = self._two_runs()
        # Run 1 has no baseline to be preferred to.
        assert "judge.preference_win_rate" not in first["metrics"]["oa"]
        entry = second["contenders"]["oa"]["metrics"]
        assert entry["check_pass_rate"]["delta"] == 0.0
        win = entry["judge.preference_win_rate"]
        # Every curt answer loses to the baseline's; the baseline against itself is 0.5.
        assert (win["baseline"], win["run"], win["delta"]) == (0.5, 0.0, -0.5)
        assert win["ci95"] == [-0.5, -0.5] and win["p"] < 0.05
        assert ("judge.preference_win_rate", "max_drop") in [
            (a["metric"], a["rule"]) for a in second["alerts"]
        ]
        run = monitor.runs.get(number=2)
        assert run.metrics["oa"]["judge.preference_win_rate"] == 0.0
        # 10 outputs judged alone and 10 beside the baseline's, each in both orders; paid for.
        assert run.judging["judgements"] == 40 and run.judging["against_baseline"] is True
        assert run.judging["cost"] > 0
        versus = Judgement.objects.filter(
            campaign=run.campaign, item__pair_key__startswith="vs-baseline-"
        )
        assert versus.count() == 20 and not versus.filter(scores__isnull=False).exists()
        for item in {j.item_id for j in versus}:
            shown, swapped = (
                versus.filter(item_id=item).order_by("swapped").values_list("order", flat=True)
            )
            assert swapped == shown[::-1]
            generations = run.campaign.items.get(pk=item).outputs.values_list(
                "generation__campaign__monitor_run__number", flat=True
            )
            assert sorted(generations) == [1, 2]

    def test_an_uncalibrated_judge_let_in_is_marked_everywhere(self):
        calibrated_on(self.fake, self.campaign, "judge-lenient", lenient)
        monitor = monitor_create(
            definition=judged(
                judge="judge-lenient", calibration="tone-panel", allow_uncalibrated=True
            )
        )
        _, second, summary = self._two_runs()
        assert second["judge"]["note"] == "judge not calibrated"
        assert "(judge not calibrated)" in summary
        alert = MonitorAlert.objects.get(metric="judge.tone")
        assert alert_json(alert)["note"] == "judge not calibrated"
        charts = trend_charts(monitor=monitor)
        assert "judge.tone" in [c["metric"] for c in charts]
        assert {c["note"] for c in charts} == {"judge not calibrated"}
        self.client.force_login(self.users["lead"])
        page = self.client.get(reverse("monitor_detail", args=["golden"])).content.decode()
        assert "judge.tone" in page and "judge not calibrated" in page
        page = self.client.get(reverse("monitor_run", args=["golden", 2])).content.decode()
        assert "Judged by judge-lenient (calibrated on tone-panel)" in page
        assert "judge not calibrated" in page and "cost of judging" in page


def test_judge_scores_average_over_judged_outputs_and_compare_paired():
    """Hand-computed: 4 tasks x 2 samples; an output the judge could not score (a failed
    judgement) is left out of the mean, not counted as a zero."""
    tasks = ["T-1", "T-2", "T-3", "T-4"]
    rows = [
        {"task": t, "sample": s, "status": "done", "output": "ok"} for t in tasks for s in (0, 1)
    ]
    base = run_table(rows, tasks=tasks, samples=2)
    run = run_table(rows, tasks=tasks, samples=2)
    judge_scores_add(
        base,
        [
            {"task": t, "sample": s, "dimension": "tone", "value": 4.0}
            for t in tasks
            for s in (0, 1)
        ],
    )
    run_scores = {
        ("T-1", 0): 4.0,
        ("T-1", 1): 2.0,
        ("T-2", 0): 3.0,
        ("T-3", 0): 5.0,
        ("T-3", 1): 4.0,
    }
    judge_scores_add(
        run,
        [
            {"task": t, "sample": s, "dimension": "tone", "value": v}
            for (t, s), v in run_scores.items()
        ],
    )
    # (4 + 2 + 3 + 5 + 4) / 5 judged outputs; T-2 sample 1 and T-4 were not judged
    assert run_metrics(run)["judge.tone"] == 3.6
    entry = compare_tables(base, run)["metrics"]["judge.tone"]
    assert (entry["baseline"], entry["run"], entry["delta"]) == (4.0, 3.6, -0.4)
    low, high = entry["ci95"]
    # Resampling tasks: between T-1 or T-2 drawn alone (3 - 4 = -1) and T-3 alone (+0.5); a
    # resample of T-4 alone has no judged output on the run's side and is left out.
    assert -1.0 <= low < -0.4 < high <= 0.5


def test_the_preference_win_rate_is_paired_against_an_even_baseline():
    """Hand-computed: 4 tasks x 2 samples; the run's output won (1), lost (0) or tied (0.5)
    against the baseline's. Unjudged outputs are left out, and the baseline's side is 0.5
    exactly where the run's output was judged."""
    tasks = ["T-1", "T-2", "T-3", "T-4"]
    rows = [
        {"task": t, "sample": s, "status": "done", "output": "ok"} for t in tasks for s in (0, 1)
    ]
    base = run_table(rows, tasks=tasks, samples=2)
    run = run_table(rows, tasks=tasks, samples=2)
    preferences = {("T-1", 0): 1.0, ("T-1", 1): 1.0, ("T-2", 0): 0.5, ("T-3", 0): 0.0}
    judge_preferences_add(
        run, [{"task": t, "sample": s, "value": v} for (t, s), v in preferences.items()]
    )
    # (1 + 1 + 0.5 + 0) / 4 judged outputs
    assert run_metrics(run)["judge.preference_win_rate"] == 0.625
    assert "judge.preference_win_rate" not in run_metrics(base)
    entry = compare_tables(base, run)["metrics"]["judge.preference_win_rate"]
    assert (entry["baseline"], entry["run"], entry["delta"]) == (0.5, 0.625, 0.125)
    low, high = entry["ci95"]
    # Per task, win rate - 0.5: T-1 +0.5, T-2 0, T-3 -0.5 (T-4 not judged: no value). A
    # resample lies between all T-3 (-0.5) and all T-1 (+0.5).
    assert -0.5 <= low < 0.125 < high <= 0.5
    assert 0 < entry["p"] <= 1
