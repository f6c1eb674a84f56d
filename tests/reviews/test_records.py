"""Review records: import, export, round trip, idempotency and every bad-input case."""

import csv
import importlib
import io
import json
import os
import re
from unittest import mock

import pytest
from django.apps import apps as django_apps
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import TestCase

from evalsite.models import ApiToken
from reviews.models import Arbitration, ItemOutput, Review, ReviewItem, Score
from reviews.records import RecordImportError, records_export, reviews_import
from reviews.report.campaign import campaign_report
from reviews.review.readiness import review_items_open_for, review_items_sync
from tasks.campaigns.definition import campaign_create
from tasks.models import Campaign, Contender, Generation, Task, TestSet
from tests.factories import personas

RUBRIC = [
    {"key": "accuracy", "min": 1, "max": 5, "level": "ordinal", "max_gap": 1},
    {"key": "completeness", "min": 1, "max": 5, "level": "ordinal", "max_gap": 1},
]
# The same rubric where completeness may be N/A (the review page offers N/A there only then).
RUBRIC_NA = [RUBRIC[0], {**RUBRIC[1], "allow_na": True}]
SECRET_NAMES = ("zeta-secret-model", "omega-hidden-model")
TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def make_campaign(
    slug="camp", testset=None, contenders=None, n_tasks=4, samples=1, rubric=RUBRIC
) -> Campaign:
    if testset is None:
        testset = TestSet.objects.create(
            name=f"set-{slug}", checksum="x" * 64, frozen=True, task_count=n_tasks
        )
        for i in range(n_tasks):
            Task.objects.create(
                testset=testset,
                position=i,
                external_id=f"T-{i + 1}",
                category="summary" if i % 2 == 0 else "extraction",
                tier="base" if i < 2 else "advanced",
                prompt=f"prompt {i}",
            )
    if contenders is None:
        contenders = [
            Contender.objects.get_or_create(name=n, defaults={"provider": "imported"})[0]
            for n in SECRET_NAMES
        ]
    campaign = Campaign.objects.create(
        slug=slug,
        name=slug,
        testset=testset,
        rubric=rubric,
        samples_per_task=samples,
        overlap=2,
        mode="both",
    )
    campaign.contenders.set(contenders)
    return campaign


def pairwise_campaign(slug: str, names: list[str], winners: list[tuple[str, str]]) -> Campaign:
    """A pairwise campaign over `names`; task i has one item in which two judges both prefer
    the first of the i-th (winner, loser) pair. A contender in no pair was never compared: all
    its generations failed, as when its endpoint was down."""
    contenders = [
        Contender.objects.get_or_create(name=n, defaults={"provider": "imported"})[0] for n in names
    ]
    campaign = make_campaign(slug=slug, contenders=contenders, n_tasks=len(winners))
    campaign.mode, campaign.rubric = "pairwise", []
    campaign.save()
    records = [
        {
            "task_id": f"T-{i}",
            "candidates": ["A", "B"],
            "judge": judge,
            "models": {"A": winner, "B": loser},
            "scores": {},
            "preference": "A",
        }
        for i, (winner, loser) in enumerate(winners, start=1)
        for judge in ("j1", "j2")
    ]
    reviews_import(campaign=campaign, data=jsonl(*records), fmt="jsonl")
    compared = {n for pair in winners for n in pair}
    for contender in contenders:
        if contender.name not in compared:
            for task in campaign.testset.tasks.all():
                Generation.objects.create(
                    campaign=campaign,
                    task=task,
                    contender=contender,
                    sample_index=0,
                    status=Generation.Status.FAILED,
                    error="connection refused",
                )
    return campaign


def rec(task="T-1", judge="judge_1", models=None, scores=None, **extra) -> dict:
    models = models or {"A": SECRET_NAMES[0], "B": SECRET_NAMES[1]}
    out = {
        "task_id": task,
        "candidates": sorted(models),
        "judge": judge,
        "blind": True,
        "models": models,
        "scores": scores
        if scores is not None
        else {"A": {"accuracy": 4, "completeness": 4}, "B": {"accuracy": 3, "completeness": 3}},
        "preference": "A",
        "sample": 0,
        "flags": {},
        "comment": "",
        "submitted_at": "2026-11-30T10:00:00Z",
    }
    out.update(extra)
    return out


def jsonl(*records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def sample_records() -> list[dict]:
    """4 tasks, 2 judges, judge_2 sees the outputs in the opposite order.

    T-1..T-3: both judges agree zeta is better; T-4: both agree omega is better, except that on
    T-4 their accuracy scores for omega are 3 apart (a dispute). T-2 has a flag by one judge.
    """
    zeta, omega = SECRET_NAMES
    out = []
    for i in range(1, 5):
        best, worst = (zeta, omega) if i < 4 else (omega, zeta)
        out.append(
            rec(
                task=f"T-{i}",
                judge="judge_1",
                models={"A": best, "B": worst},
                scores={
                    "A": {"accuracy": 5, "completeness": 4},
                    "B": {"accuracy": 2, "completeness": 3},
                },
                preference="A",
                seconds=30 + i,
                comment=f"first judge on T-{i}",
            )
        )
        accuracy_best = 2 if i == 4 else 4
        out.append(
            rec(
                task=f"T-{i}",
                judge="judge_2",
                models={"A": worst, "B": best},
                scores={
                    "A": {"accuracy": 2, "completeness": 3},
                    "B": {"accuracy": accuracy_best, "completeness": 4},
                },
                preference="B",
                seconds=40 + i,
                flags={"A": ["hallucination"]} if i == 2 else {},
                submitted_at="2026-11-30T11:00:00Z",
            )
        )
    return out


class ImportTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.campaign = make_campaign()

    def test_a_judge_settled_record_is_left_out_and_a_human_one_imported(self):
        # An export of a campaign under a review policy ends with the judge's settlements:
        # they are the judge's answers, not reviews, and an import leaves them out.
        data = jsonl(
            rec(source="human"),
            rec(task="T-2", judge="policy-judge", source="judge", submitted_at=None),
        )
        summary = reviews_import(campaign=self.campaign, data=data, fmt="jsonl")
        assert summary.reviews_created == 1 and summary.items_created == 1
        assert not get_user_model().objects.filter(username="policy-judge").exists()

    def test_it_imports_items_reviews_and_judges(self):
        summary = reviews_import(campaign=self.campaign, data=jsonl(*sample_records()), fmt="jsonl")
        assert summary.reviews_created == 8 and summary.items_created == 4
        assert sorted(summary.judges_created) == ["judge_1", "judge_2"]
        judge = get_user_model().objects.get(username="judge_2")
        assert not judge.is_active and not judge.has_usable_password()
        assert ReviewItem.objects.filter(campaign=self.campaign).count() == 4
        assert Score.objects.count() == 8 * 4
        # Labels are per judge: judge_2's A is omega on T-1, and their preference B is zeta.
        item = ReviewItem.objects.get(task__external_id="T-1")
        review = Review.objects.get(item=item, reviewer__username="judge_2")
        first = ItemOutput.objects.get(pk=review.presented_order[0])
        assert first.generation.contender.name == SECRET_NAMES[1]
        assert review.preferred_output.generation.contender.name == SECRET_NAMES[0]
        assert review.seconds_spent == 41
        # Dispute rules ran: T-4's accuracy scores differ by 3, the rest agree.
        states = dict(ReviewItem.objects.values_list("task__external_id", "state"))
        assert states == {"T-1": "agreed", "T-2": "agreed", "T-3": "agreed", "T-4": "disputed"}
        assert Arbitration.objects.filter(item__task__external_id="T-4").exists()
        # Imported generations are marked done so the item counts as complete.
        assert set(Generation.objects.values_list("status", flat=True)) == {"done"}

    def test_it_reports_on_an_imported_file(self):
        # Both judges agree everywhere: zeta is preferred on T-1..T-3, omega on T-4, so the
        # leaderboard must be the published Bradley-Terry reference "A beats B 3 times, loses
        # once -> A 1095.42, B 904.58" (the published worked example).
        zeta, omega = SECRET_NAMES
        records = []
        for i in range(1, 5):
            best, worst = (zeta, omega) if i < 4 else (omega, zeta)
            for judge, order in (("j1", (best, worst)), ("j2", (worst, best))):
                records.append(
                    rec(
                        task=f"T-{i}",
                        judge=judge,
                        models={"A": order[0], "B": order[1]},
                        scores={
                            "A": {"accuracy": 4, "completeness": 4},
                            "B": {"accuracy": 4, "completeness": 4},
                        },
                        preference="A" if order[0] == best else "B",
                        seconds=20 if judge == "j1" else 60,
                    )
                )
        reviews_import(campaign=self.campaign, data=jsonl(*records), fmt="jsonl")
        report = campaign_report(campaign=self.campaign)
        assert report["progress"]["items"] == 4 and report["progress"]["agreed"] == 4
        assert report["disputes"]["rate"] == 0
        ratings = {r["contender"]: r for r in report["leaderboard"]}
        # the report shows one decimal of Elo (what an interval supports)
        assert ratings[zeta]["rating"] == pytest.approx(1095.42, abs=0.05)
        assert ratings[omega]["rating"] == pytest.approx(904.58, abs=0.05)
        assert (ratings[zeta]["wins"], ratings[zeta]["losses"]) == (3, 1)
        # j1 always chose position A, j2 always position B.
        assert (
            report["position_bias"]["n"] == 8
            and report["position_bias"]["first_position_win_rate"] == 0.5
        )
        assert (
            report["reviewers"]["j1"]["median_seconds"] == 20
            and report["reviewers"]["j2"]["reviews"] == 4
        )
        assert report["preference_agreement"]["alpha"] == 1.0

    def test_it_is_idempotent(self):
        data = jsonl(*sample_records())
        reviews_import(campaign=self.campaign, data=data, fmt="jsonl")
        before = (
            ReviewItem.objects.count(),
            Review.objects.count(),
            Score.objects.count(),
            Generation.objects.count(),
            get_user_model().objects.count(),
            Arbitration.objects.count(),
        )
        exported = "".join(records_export(campaign=self.campaign, fmt="jsonl", unblind=True))
        summary = reviews_import(campaign=self.campaign, data=data, fmt="jsonl")
        assert summary.reviews_created == 0 and summary.reviews_unchanged == 8
        after = (
            ReviewItem.objects.count(),
            Review.objects.count(),
            Score.objects.count(),
            Generation.objects.count(),
            get_user_model().objects.count(),
            Arbitration.objects.count(),
        )
        assert before == after
        assert (
            "".join(records_export(campaign=self.campaign, fmt="jsonl", unblind=True)) == exported
        )

    def test_it_rejects_a_changed_review_of_an_already_imported_item(self):
        reviews_import(campaign=self.campaign, data=jsonl(*sample_records()), fmt="jsonl")
        changed = sample_records()
        changed[0]["comment"] = "second thoughts"
        with pytest.raises(RecordImportError) as exc:
            reviews_import(campaign=self.campaign, data=jsonl(*changed), fmt="jsonl")
        assert (
            "line 1, field judge: judge_1 already has a different review of this item"
            in exc.value.messages()
        )

    def test_it_lists_a_changed_review_beside_problems_on_other_lines(self):
        reviews_import(campaign=self.campaign, data=jsonl(*sample_records()), fmt="jsonl")
        changed = sample_records()[0]
        changed["comment"] = "second thoughts"
        users = get_user_model().objects.count()
        with pytest.raises(RecordImportError) as exc:
            data = jsonl(rec(task="T-404", judge="someone_new"), changed)
            reviews_import(campaign=self.campaign, data=data, fmt="jsonl")
        messages = exc.value.messages()
        assert messages == [
            "line 1, field task_id: 'T-404' is not in test set set-camp v1",
            "line 2, field judge: judge_1 already has a different review of this item",
        ]
        assert get_user_model().objects.count() == users  # the new judge was not created

    def test_it_accepts_any_number_of_judges_and_missing_scores(self):
        self.campaign.rubric = RUBRIC_NA
        self.campaign.save()
        records = [
            rec(
                judge="j1",
                scores={"A": {"accuracy": 4}, "B": {"accuracy": 3, "completeness": None}},
            ),
            rec(judge="j2"),
            rec(judge="j3", preference=None, scores={}),
        ]
        reviews_import(campaign=self.campaign, data=jsonl(*records), fmt="jsonl")
        item = ReviewItem.objects.get()
        assert item.reviews.count() == 3 and item.submitted_count == 3
        assert Score.objects.filter(review__reviewer__username="j1").count() == 3
        assert (
            Score.objects.get(review__reviewer__username="j1", dimension="completeness").value
            is None
        )
        assert not Score.objects.filter(review__reviewer__username="j3").exists()
        # N/A against a score disputes the item (dispute rules).
        assert item.state == "disputed"

    def test_it_accepts_a_bom_and_windows_line_endings(self):
        data = b"\xef\xbb\xbf" + jsonl(*sample_records()).replace(b"\n", b"\r\n")
        assert (
            reviews_import(campaign=self.campaign, data=data, filename="r.jsonl").reviews_created
            == 8
        )
        body = "".join(records_export(campaign=self.campaign, fmt="csv", unblind=True))
        target = make_campaign(
            slug="copy",
            testset=self.campaign.testset,
            contenders=list(self.campaign.contenders.all()),
        )
        summary = reviews_import(
            campaign=target, data=b"\xef\xbb\xbf" + body.encode(), filename="r.csv"
        )
        assert summary.reviews_created == 8

    def test_it_imports_csv(self):
        columns = [
            "task_id",
            "category",
            "sample",
            "judge",
            "blind",
            "submitted_at",
            "candidates",
            "preference",
            "comment",
            "seconds",
            "models.A",
            "models.B",
            "scores.A.accuracy",
            "scores.B.accuracy",
            "flags.A",
            "flags.B",
        ]
        rows = [
            [
                "T-1",
                "summary",
                "0",
                "ann",
                "true",
                "2026-11-30T10:00:00Z",
                "A;B",
                "B",
                "'=not a formula",
                "12",
                SECRET_NAMES[0],
                SECRET_NAMES[1],
                "3",
                "4",
                "",
                "refusal;unsafe",
            ],
            [
                "T-1",
                "",
                "",
                "bob",
                "",
                "",
                "A;B",
                "tie",
                "",
                "",
                SECRET_NAMES[1],
                SECRET_NAMES[0],
                "4",
                "",
                "",
                "",
            ],
        ]
        buf = io.StringIO()
        csv.writer(buf).writerows([columns, *rows])
        summary = reviews_import(
            campaign=self.campaign, data=buf.getvalue().encode(), filename="r.csv"
        )
        assert summary.reviews_created == 2
        ann = Review.objects.get(reviewer__username="ann")
        assert ann.comment == "=not a formula"
        assert list(ann.flags.values()) == [["refusal", "unsafe"]]
        assert ann.preferred_output.generation.contender.name == SECRET_NAMES[1]
        bob = Review.objects.get(reviewer__username="bob")
        assert bob.preference == "tie" and bob.scores.count() == 1


class BadInputTests(TestCase):
    """Every problem is reported as 'line L, field F: message' and nothing is written."""

    @classmethod
    def setUpTestData(cls):
        cls.campaign = make_campaign(samples=2)
        Contender.objects.create(name="not-in-campaign", provider="imported")

    def assert_rejected(self, data: bytes, expected: str, fmt=None, filename=""):
        users = get_user_model().objects.count()
        with pytest.raises(RecordImportError) as exc:
            reviews_import(campaign=self.campaign, data=data, fmt=fmt, filename=filename)
        messages = exc.value.messages()
        assert any(expected in m for m in messages), messages
        assert all(m.startswith("line ") and ", field " in m for m in messages), messages
        assert (
            ReviewItem.objects.count(),
            Review.objects.count(),
            Score.objects.count(),
            Generation.objects.count(),
            get_user_model().objects.count(),
        ) == (0, 0, 0, 0, users)

    def test_it_rejects_invalid_utf8(self):
        self.assert_rejected(
            jsonl(rec()) + b'{"task_id": "T-\xff"}\n',
            "line 2, field (encoding): invalid UTF-8",
            "jsonl",
        )

    def test_it_rejects_bad_json(self):
        self.assert_rejected(
            jsonl(rec()) + b'{"task_id": \n', "line 2, field (json): not valid JSON", "jsonl"
        )

    def test_it_rejects_a_line_that_is_not_an_object(self):
        self.assert_rejected(
            b"[1, 2]\n", "line 1, field (json): each line must be a JSON object", "jsonl"
        )

    def test_it_rejects_nan(self):
        line = json.dumps(rec()).replace('"accuracy": 4', '"accuracy": NaN').encode()
        self.assert_rejected(line, "NaN is not valid JSON", "jsonl")

    def test_it_rejects_infinity_spelled_as_a_huge_number(self):
        line = json.dumps(rec()).replace('"accuracy": 4', '"accuracy": 1e999').encode()
        self.assert_rejected(
            line, "line 1, field (json): the number 1e999 is out of range", "jsonl"
        )

    def test_it_rejects_duplicate_keys(self):
        line = json.dumps(rec())[:-1] + ', "judge": "other"}'
        self.assert_rejected(line.encode(), "duplicate key 'judge'", "jsonl")

    def test_it_rejects_an_unknown_source(self):
        self.assert_rejected(
            jsonl(rec(), rec(task="T-2", source="robot")),
            "line 2, field source: must be one of human, judge",
            "jsonl",
        )

    def test_it_rejects_an_unknown_task_id(self):
        self.assert_rejected(
            jsonl(rec(), rec(task="T-999")),
            "line 2, field task_id: 'T-999' is not in test set",
            "jsonl",
        )

    def test_it_rejects_an_unknown_model(self):
        self.assert_rejected(
            jsonl(rec(models={"A": SECRET_NAMES[0], "B": "nobody"})),
            "line 1, field models: not a contender of this campaign: nobody",
            "jsonl",
        )

    def test_it_rejects_a_model_that_is_not_in_this_campaign(self):
        self.assert_rejected(
            jsonl(rec(models={"A": SECRET_NAMES[0], "B": "not-in-campaign"})),
            "not a contender of this campaign: not-in-campaign",
            "jsonl",
        )

    def test_it_requires_models(self):
        record = rec(judge="bea")
        del record["models"]
        self.assert_rejected(
            jsonl(rec(), record), "line 2, field models: required on import", "jsonl"
        )

    def test_it_rejects_bad_labels(self):
        self.assert_rejected(
            jsonl(rec(candidates=["A", "C"], models={"A": SECRET_NAMES[0], "C": SECRET_NAMES[1]})),
            "field candidates: must be the labels A, B, ... in order",
            "jsonl",
        )

    def test_it_rejects_a_score_for_a_label_that_is_not_a_candidate(self):
        self.assert_rejected(
            jsonl(rec(scores={"C": {"accuracy": 3}})),
            "field scores.C: not one of the candidates",
            "jsonl",
        )

    def test_it_rejects_a_score_out_of_the_rubric_range(self):
        self.assert_rejected(
            jsonl(rec(scores={"A": {"accuracy": 6}})),
            "line 1, field scores.A.accuracy: 6 is outside the rubric range 1..5",
            "jsonl",
        )

    def test_it_rejects_a_fractional_score_on_an_ordinal_scale_once_per_score(self):
        with pytest.raises(RecordImportError) as exc:
            reviews_import(
                campaign=self.campaign,
                data=jsonl(rec(scores={"A": {"accuracy": 4.5, "completeness": 3.5}})),
                fmt="jsonl",
            )
        assert exc.value.messages() == [
            "line 1, field scores.A.accuracy: 4.5: must be a whole number on this ordinal scale",
            "line 1, field scores.A.completeness: 3.5: must be a whole number on this ordinal scale",
        ]
        assert Review.objects.count() == 0

    def test_it_rejects_an_unknown_dimension(self):
        self.assert_rejected(
            jsonl(rec(scores={"A": {"style": 3}})),
            "field scores.A.style: unknown dimension",
            "jsonl",
        )

    def test_it_rejects_na_on_a_dimension_that_does_not_allow_it(self):
        # The review page offers no N/A on accuracy and the submit API refuses it; an import
        # took it in and the item's dispute rules then read it as a real N/A.
        for line, data, fmt in (
            (1, jsonl(rec(scores={"A": {"accuracy": None}, "B": {"accuracy": 3}})), "jsonl"),
            (
                2,
                b"task_id,judge,candidates,models.A,models.B,scores.A.accuracy\n"
                + f"T-1,j1,A;B,{SECRET_NAMES[0]},{SECRET_NAMES[1]},null\n".encode(),
                "csv",
            ),
        ):
            self.assert_rejected(
                data,
                f"line {line}, field scores.A.accuracy: N/A (null) is not allowed: "
                "this dimension does not allow N/A",
                fmt,
            )

    def test_it_rejects_a_text_score(self):
        self.assert_rejected(
            jsonl(rec(scores={"A": {"accuracy": "4"}})), "must be a number or null", "jsonl"
        )

    def test_it_rejects_a_bad_preference(self):
        self.assert_rejected(
            jsonl(rec(preference="C")),
            "field preference: must be one of the candidate labels",
            "jsonl",
        )

    def test_it_rejects_a_comment_longer_than_the_submit_api_takes(self):
        # the submit API refuses over 5,000 characters; an import let any length in
        self.assert_rejected(
            jsonl(rec(comment="x" * 5001)),
            "line 1, field comment: is 5,001 characters long; the limit is 5,000",
            "jsonl",
        )

    def test_it_rejects_unknown_flags(self):
        self.assert_rejected(
            jsonl(rec(flags={"A": ["rude"]})), "field flags.A: unknown flag(s) rude", "jsonl"
        )

    def test_it_rejects_a_sample_out_of_range(self):
        self.assert_rejected(
            jsonl(rec(sample=2)), "field sample: must be an integer from 0 to 1", "jsonl"
        )

    def test_it_rejects_seconds_the_database_cannot_hold(self):
        # 2**31 was a 500 on PostgreSQL (a 32-bit column), 2**63 on SQLite as well.
        for seconds in (2**31, 2**63, -1, 1.5):
            self.assert_rejected(
                jsonl(rec(seconds=seconds)),
                "line 1, field seconds: must be a whole number of seconds from 0 to 2147483647",
                "jsonl",
            )
        reviews_import(campaign=self.campaign, data=jsonl(rec(seconds=2**31 - 1)), fmt="jsonl")
        assert Review.objects.get().seconds_spent == 2**31 - 1

    def test_it_rejects_a_bad_timestamp(self):
        self.assert_rejected(
            jsonl(rec(submitted_at="yesterday")), "field submitted_at: must be an ISO 8601", "jsonl"
        )

    def test_it_rejects_a_wrong_category(self):
        self.assert_rejected(
            jsonl(rec(category="poetry")), "field category: 'poetry' does not match", "jsonl"
        )

    def test_it_rejects_the_same_judge_twice_on_one_item(self):
        self.assert_rejected(
            jsonl(rec(), rec()),
            "line 2, field judge: judge_1 already reviewed this item on line 1",
            "jsonl",
        )

    def test_it_rejects_a_contender_under_two_labels(self):
        self.assert_rejected(
            jsonl(rec(models={"A": SECRET_NAMES[0], "B": SECRET_NAMES[0]})),
            "a contender appears under two labels",
            "jsonl",
        )

    def test_it_rejects_a_bad_judge_name(self):
        self.assert_rejected(
            jsonl(rec(judge="no spaces <please>")), "field judge: must be a user name", "jsonl"
        )

    def test_it_rejects_a_judge_differing_from_a_user_only_in_case_with_that_reason(self):
        get_user_model().objects.create(username="judge_1")
        self.assert_rejected(
            jsonl(rec(judge="Judge_1")),
            "line 1, field judge: 'Judge_1' differs only in case from 'judge_1' (user names "
            "ignore case): write it as 'judge_1'",
            "jsonl",
        )

    def test_it_rejects_two_spellings_of_one_new_judge_in_a_file(self):
        self.assert_rejected(
            jsonl(rec(judge="ann"), rec(task="T-2", judge="ANN")),
            "line 2, field judge: 'ANN' differs only in case from 'ann'",
            "jsonl",
        )
        assert not get_user_model().objects.filter(username__iexact="ann").exists()

    def test_it_rejects_unknown_fields(self):
        self.assert_rejected(jsonl(rec(modles={})), "field modles: unknown field", "jsonl")

    def test_it_lists_every_bad_line_and_writes_nothing_when_one_line_is_bad(self):
        self.assert_rejected(
            jsonl(rec(judge="a"), rec(judge="b"), rec(judge="c", scores={"A": {"accuracy": 0}})),
            "line 3, field scores.A.accuracy",
            "jsonl",
        )

    def test_it_rejects_an_empty_file(self):
        self.assert_rejected(b"\n\n", "line 1, field (file): the file is empty", "jsonl")
        self.assert_rejected(b"", "line 1, field (file): the file is empty", "csv")
        header = b"task_id,judge,candidates,models.A,models.B\n"
        self.assert_rejected(header, "line 1, field (file): no records in the file", "csv")

    def test_it_counts_every_problem_and_lists_the_first_200(self):
        with pytest.raises(RecordImportError) as exc:
            data = jsonl(*(rec(task=f"T-{i}", modles={}, arbitration="yes") for i in range(300)))
            reviews_import(campaign=self.campaign, data=data, fmt="jsonl")
        messages = exc.value.messages()
        assert exc.value.count == 600 and len(messages) == 201
        assert messages[-1] == "... and 400 more problems"

    def test_it_rejects_an_unterminated_csv_quote(self):
        data = b'task_id,judge,candidates,models.A,models.B\nT-1,ann,A;B,"zeta-secret-model,omega-hidden-model\n'
        self.assert_rejected(data, "field (csv)", filename="x.csv")

    def test_it_rejects_a_ragged_csv_row(self):
        data = (
            f"task_id,judge,candidates,models.A,models.B\nT-1,ann,A;B,{SECRET_NAMES[0]}\n".encode()
        )
        self.assert_rejected(
            data, "line 2, field (csv): expected 5 cells, found 4", filename="x.csv"
        )

    def test_it_rejects_an_unknown_csv_column(self):
        self.assert_rejected(
            b"task_id,judge,colour\nT-1,ann,red\n",
            "line 1, field colour: unknown column",
            filename="x.csv",
        )

    def test_it_rejects_a_csv_row_without_models(self):
        self.assert_rejected(
            b"task_id,judge,candidates\nT-1,ann,A;B\n",
            "line 1, field models: no record names its models (a blind export?)",
            filename="x.csv",
        )

    def test_it_rejects_an_oversize_file(self):
        with self.settings(REVIEWS_IMPORT_MAX_BYTES=100):
            self.assert_rejected(jsonl(rec(), rec(judge="x")), "larger than 100 bytes", "jsonl")


class ExportTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.campaign = make_campaign()
        records = sample_records()
        records[0]["comment"] = '=HYPERLINK("http://evil.example","click")'
        records[1]["comment"] = "-1 point for tone"
        records[2]["comment"] = "+ good\tbut"
        records[3]["comment"] = "@SUM(A1)"
        records[4]["comment"] = "\tleading tab"
        reviews_import(campaign=cls.campaign, data=jsonl(*records), fmt="jsonl")
        cls.records = records

    def test_it_exports_the_record_format_in_each_judges_order(self):
        lines = "".join(
            records_export(campaign=self.campaign, fmt="jsonl", unblind=True)
        ).splitlines()
        assert len(lines) == 8
        first = json.loads(lines[0])
        assert list(first)[:12] == [
            "task_id",
            "category",
            "candidates",
            "scores",
            "judge",
            "blind",
            "models",
            "preference",
            "sample",
            "flags",
            "comment",
            "submitted_at",
        ]
        assert (
            first["task_id"] == "T-1"
            and first["category"] == "summary"
            and first["judge"] == "judge_1"
        )
        assert first["models"] == {"A": SECRET_NAMES[0], "B": SECRET_NAMES[1]}
        assert first["scores"] == {
            "A": {"accuracy": 5, "completeness": 4},
            "B": {"accuracy": 2, "completeness": 3},
        }
        second = json.loads(lines[1])
        assert (
            second["models"] == {"A": SECRET_NAMES[1], "B": SECRET_NAMES[0]}
            and second["preference"] == "B"
        )
        assert second["submitted_at"] == "2026-11-30T11:00:00Z"

    def test_it_never_puts_model_names_in_a_blind_export(self):
        for fmt in ("jsonl", "csv"):
            body = "".join(records_export(campaign=self.campaign, fmt=fmt))
            for name in SECRET_NAMES:
                assert name not in body
            assert "models" not in body
        first = json.loads(
            "".join(records_export(campaign=self.campaign, fmt="jsonl")).splitlines()[0]
        )
        assert "models" not in first and first["blind"] is True

    def test_it_escapes_every_csv_cell_against_formulas(self):
        body = "".join(records_export(campaign=self.campaign, fmt="csv", unblind=True))
        rows = list(csv.reader(io.StringIO(body, newline="")))
        assert len(rows) == 9
        cells = [cell for row in rows for cell in row]
        assert not [c for c in cells if c[:1] in TRIGGERS]
        assert '\'=HYPERLINK("http://evil.example","click")' in cells
        assert "'-1 point for tone" in cells and "'\tleading tab" in cells

    def test_it_round_trips_csv_with_the_formula_escaping_undone(self):
        body = "".join(records_export(campaign=self.campaign, fmt="csv", unblind=True))
        target = make_campaign(
            slug="copy",
            testset=self.campaign.testset,
            contenders=list(self.campaign.contenders.all()),
        )
        reviews_import(campaign=target, data=body.encode(), fmt="csv")
        assert set(
            Review.objects.filter(item__campaign=target).values_list("comment", flat=True)
        ) == {r["comment"] for r in self.records}
        assert self.jsonl_of(target) == self.jsonl_of(self.campaign)

    def test_an_explicit_na_survives_a_csv_round_trip(self):
        records = sample_records()
        records[0]["scores"]["B"]["completeness"] = None  # N/A, not "not rated"
        source = make_campaign(slug="na-source", rubric=RUBRIC_NA)
        reviews_import(campaign=source, data=jsonl(*records), fmt="jsonl")
        body = "".join(records_export(campaign=source, fmt="csv", unblind=True))
        assert ",null," in body
        target = make_campaign(
            slug="na-copy",
            testset=source.testset,
            contenders=list(source.contenders.all()),
            rubric=RUBRIC_NA,
        )
        reviews_import(campaign=target, data=body.encode(), fmt="csv")
        assert self.jsonl_of(target) == self.jsonl_of(source)

    def test_it_round_trips_jsonl_into_an_empty_campaign(self):
        body = "".join(records_export(campaign=self.campaign, fmt="jsonl", unblind=True))
        target = make_campaign(
            slug="copy",
            testset=self.campaign.testset,
            contenders=list(self.campaign.contenders.all()),
        )
        reviews_import(campaign=target, data=body.encode(), fmt="jsonl")
        assert self.jsonl_of(target) == self.jsonl_of(self.campaign)
        # The same report, figure for figure (only the campaign's own name differs).
        source, copy = campaign_report(campaign=self.campaign), campaign_report(campaign=target)
        for report in (source, copy):
            report.pop("campaign"), report.pop("name")
        assert copy == source
        assert (
            copy["progress"]["reviews_done"] == 8 and copy["leaderboard"][0]["rating"] is not None
        )

    def test_it_round_trips_into_a_campaign_waiting_for_its_generations(self):
        # A campaign made by campaign_create already has its items (waiting) and pending
        # generation rows: the reviews settle those items, which then count as ready.
        body = "".join(records_export(campaign=self.campaign, fmt="jsonl", unblind=True))
        target, _ = campaign_create(
            definition={
                "slug": "fresh",
                "name": "fresh",
                "testset": {"name": self.campaign.testset.name, "version": 1},
                "contenders": [{"name": n, "provider": "imported"} for n in SECRET_NAMES],
                "samples_per_task": 1,
                "overlap": 2,
                "mode": "both",
                "rubric": RUBRIC,
            }
        )
        assert ReviewItem.objects.filter(campaign=target, state="waiting").count() == 4
        summary = reviews_import(campaign=target, data=body.encode(), fmt="jsonl")
        assert (summary.items_created, summary.items_settled) == (0, 4)
        assert self.jsonl_of(target) == self.jsonl_of(self.campaign)
        # The reviews are tied to the campaign's own (still pending) generation rows.
        assert Generation.objects.filter(campaign=target).count() == 8
        source, copy = campaign_report(campaign=self.campaign), campaign_report(campaign=target)
        assert copy["progress"]["generations"] == {"pending": 8}
        assert {k: v for k, v in copy["progress"].items() if k != "generations"} == {
            k: v for k, v in source["progress"].items() if k != "generations"
        }
        assert copy["progress"]["ready"] == copy["progress"]["settled"] == 4
        # The outputs arriving later leave the settled items alone; the report is the same.
        for generation in Generation.objects.filter(campaign=target):
            generation.status = Generation.Status.DONE
            generation.save(update_fields=["status"])
            review_items_open_for(generation_id=generation.pk)
        review_items_sync(campaign=target)
        copy = campaign_report(campaign=target)
        for report in (source, copy):
            report.pop("campaign"), report.pop("name")
        assert copy == source

    def test_a_migration_repairs_items_settled_while_waiting(self):
        migration = importlib.import_module("reviews.migrations.0009_settled_items_ready")
        ReviewItem.objects.filter(campaign=self.campaign).update(ready=False)
        waiting = ReviewItem.objects.filter(campaign=self.campaign).first()
        ReviewItem.objects.filter(pk=waiting.pk).update(state="waiting")
        migration.repair(django_apps, None)
        ready = dict(ReviewItem.objects.values_list("pk", "ready"))
        assert ready.pop(waiting.pk) is False and set(ready.values()) == {True}

    def test_it_rejects_a_blind_export_on_import(self):
        body = "".join(records_export(campaign=self.campaign, fmt="jsonl"))
        target = make_campaign(
            slug="copy",
            testset=self.campaign.testset,
            contenders=list(self.campaign.contenders.all()),
        )
        with pytest.raises(RecordImportError) as exc:
            reviews_import(campaign=target, data=body.encode(), fmt="jsonl")
        # Said once, with what to do, not "models: required" on each of its 8 lines.
        models = [m for m in exc.value.messages() if "field models" in m]
        assert models == [
            "line 1, field models: no record names its models (a blind export?): import the "
            'export with models (export_reviews --unblind, or "with models" on the dashboard)'
        ]

    @staticmethod
    def jsonl_of(campaign):
        return "".join(records_export(campaign=campaign, fmt="jsonl", unblind=True))


class CommandTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.campaign = make_campaign()

    def test_it_imports_and_exports_from_the_command_line(self):
        path = self.tmp / "records.jsonl"
        path.write_bytes(jsonl(*sample_records()))
        out = io.StringIO()
        call_command("import_reviews", str(path), "--campaign", "camp", stdout=out)
        assert "Imported 8 reviews on 4 items" in out.getvalue()
        target = self.tmp / "out.csv"
        call_command(
            "export_reviews", "--campaign", "camp", "--format", "csv", "--output", str(target)
        )
        assert target.read_text().count("\n") == 9
        out = io.StringIO()
        call_command("export_reviews", "--campaign", "camp", "--unblind", stdout=out)
        assert len(out.getvalue().splitlines()) == 8 and SECRET_NAMES[0] in out.getvalue()

    def test_it_exits_nonzero_and_lists_errors(self):
        path = self.tmp / "bad.jsonl"
        path.write_bytes(jsonl(rec(task="T-404")))
        err = io.StringIO()
        with pytest.raises(CommandError, match="nothing imported"):
            call_command("import_reviews", str(path), "--campaign", "camp", stderr=err)
        assert "line 1, field task_id: 'T-404' is not in test set" in err.getvalue()
        assert Review.objects.count() == 0

    def test_it_refuses_an_over_long_comment_from_the_command_line(self):
        path = self.tmp / "long.jsonl"
        path.write_bytes(jsonl(rec(comment="x" * 5001)))
        err = io.StringIO()
        with pytest.raises(CommandError, match="nothing imported"):
            call_command("import_reviews", str(path), "--campaign", "camp", stderr=err)
        assert "line 1, field comment: is 5,001 characters long" in err.getvalue()
        path.write_bytes(jsonl(rec(comment="x" * 5000)))
        call_command("import_reviews", str(path), "--campaign", "camp", stdout=io.StringIO())
        assert Review.objects.get().comment == "x" * 5000

    def test_it_says_how_many_problems_there_are_beyond_those_listed(self):
        path = self.tmp / "huge.jsonl"
        path.write_bytes(
            jsonl(*(rec(task=f"T-{i}", modles={}, arbitration="yes") for i in range(300)))
        )
        err = io.StringIO()
        with pytest.raises(CommandError) as info:
            call_command("import_reviews", str(path), "--campaign", "camp", stderr=err)
        assert str(info.value) == (
            "nothing imported: 600 problems in huge.jsonl (the first 200 are listed)"
        )
        assert err.getvalue().splitlines()[-1] == "... and 400 more problems"

    def test_it_refuses_an_unwritable_output_with_one_line_and_leaves_no_file(self):
        cases = {
            self.tmp / "missing" / "x.jsonl": "No such file or directory",
            self.tmp: "Is a directory",
        }
        for target, reason in cases.items():
            with pytest.raises(CommandError) as info:
                call_command("export_reviews", "--campaign", "camp", "--output", str(target))
            assert str(info.value) == f"cannot write {target}: {reason}"
        assert list(self.tmp.iterdir()) == []  # no temporary file left behind

    def test_a_failed_export_leaves_no_half_file_and_keeps_the_old_one(self):
        import errno

        from reviews.management.commands import export_reviews

        def disk_fills(**kwargs):
            yield '{"task_id": "T-1"}\n'
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        target = self.tmp / "out.jsonl"
        target.write_text("the previous export\n")
        with mock.patch.object(export_reviews, "records_export", disk_fills):
            with pytest.raises(CommandError, match="^cannot write .*: No space left on device$"):
                call_command("export_reviews", "--campaign", "camp", "--output", str(target))
        assert target.read_text() == "the previous export\n"
        assert [p.name for p in self.tmp.iterdir()] == ["out.jsonl"]

    def test_it_writes_an_export_others_may_read_like_any_new_file(self):
        target = self.tmp / "out.jsonl"
        old = os.umask(0o022)
        try:
            call_command("export_reviews", "--campaign", "camp", "--output", str(target))
        finally:
            os.umask(old)
        assert target.stat().st_mode & 0o777 == 0o644

    def test_it_refuses_an_unreadable_input_with_one_line(self):
        for path, reason in ((self.tmp, "Is a directory"), (self.tmp / "no.jsonl", "No such file")):
            with pytest.raises(
                CommandError, match=f"^cannot read {re.escape(str(path))}: {reason}"
            ):
                call_command("import_reviews", str(path), "--campaign", "camp")

    @pytest.fixture(autouse=True)
    def _tmp(self, tmp_path):
        self.tmp = tmp_path


class ApiTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = make_campaign()
        reviews_import(campaign=cls.campaign, data=jsonl(*sample_records()), fmt="jsonl")
        cls.tokens = {name: ApiToken.issue(user) for name, user in cls.users.items()}

    def get(self, who, query=""):
        return self.client.get(
            f"/api/v1/campaigns/camp/reviews{query}",
            HTTP_AUTHORIZATION=f"Bearer {self.tokens[who]}",
        )

    def test_it_streams_exports_to_leads(self):
        response = self.get("lead", "?format=jsonl&unblind=1")
        assert response.status_code == 200 and response.streaming
        body = b"".join(response.streaming_content).decode()
        assert len(body.splitlines()) == 8 and SECRET_NAMES[0] in body
        assert (
            response["Content-Disposition"] == 'attachment; filename="camp-reviews-unblind.jsonl"'
        )
        response = self.get("lead", "?format=csv")
        assert response["Content-Type"].startswith("text/csv")

    def test_it_reads_unblind_case_blind_and_refuses_other_words(self):
        # requests sends params={"unblind": True} as "True": that was a blind file, silently.
        for word in ("True", "YES", "1"):
            body = b"".join(self.get("lead", f"?unblind={word}").streaming_content).decode()
            assert SECRET_NAMES[0] in body, word
        for word in ("False", "0", "no", ""):
            body = b"".join(self.get("lead", f"?unblind={word}").streaming_content).decode()
            assert SECRET_NAMES[0] not in body, word
        words = self.client.get("/api/v1/schema").json()["paths"][
            "/api/v1/campaigns/{slug}/reviews"
        ]["get"]["parameters"]
        assert next(p for p in words if p["name"] == "unblind")["schema"]["enum"] == [
            "",
            "0",
            "1",
            "true",
            "false",
            "yes",
            "no",
        ]
        for word in ("on", "maybe"):
            response = self.get("lead", f"?unblind={word}")
            assert response.status_code == 400
            assert response.json() == {
                "error": "unblind must be 1 (or true, yes) or 0 (or false, no)"
            }

    def test_it_gives_admins_only_blind_exports(self):
        response = self.get("admin", "?format=csv")
        assert response.status_code == 200
        assert SECRET_NAMES[0] not in b"".join(response.streaming_content).decode()
        assert self.get("admin", "?unblind=1").status_code == 403

    def test_it_denies_reviewers_arbiters_and_outsiders(self):
        for who in ("reviewer_a", "arbiter", "outsider"):
            assert self.get(who).status_code == 403
            response = self.client.post(
                "/api/v1/campaigns/camp/reviews",
                data=jsonl(rec()),
                content_type="application/x-ndjson",
                HTTP_AUTHORIZATION=f"Bearer {self.tokens[who]}",
            )
            assert response.status_code == 403
        assert self.client.get("/api/v1/campaigns/camp/reviews").status_code == 401

    def test_it_refuses_an_over_long_comment_over_the_api(self):
        response = self.client.post(
            "/api/v1/campaigns/camp/reviews",
            data=jsonl(rec(comment="x" * 5001)),
            content_type="application/x-ndjson",
            HTTP_AUTHORIZATION=f"Bearer {self.tokens['admin']}",
        )
        assert response.status_code == 400
        assert (
            "line 1, field comment: is 5,001 characters long; the limit is 5,000"
            in response.json()["errors"]
        )

    def test_it_returns_404_for_an_unknown_campaign(self):
        response = self.client.get(
            "/api/v1/campaigns/nope/reviews", HTTP_AUTHORIZATION=f"Bearer {self.tokens['lead']}"
        )
        assert response.status_code == 404

    def test_it_imports_over_the_api(self):
        target = make_campaign(
            slug="copy",
            testset=self.campaign.testset,
            contenders=list(self.campaign.contenders.all()),
        )
        body = b"".join(self.get("lead", "?format=jsonl&unblind=1").streaming_content)
        response = self.client.post(
            f"/api/v1/campaigns/{target.slug}/reviews",
            data=body,
            content_type="application/x-ndjson",
            HTTP_AUTHORIZATION=f"Bearer {self.tokens['admin']}",
        )
        assert response.status_code == 200, response.content
        assert response.json()["reviews_created"] == 8
        # The same file again, as CSV in a multipart upload: nothing new.
        csv_body = b"".join(self.get("lead", "?format=csv&unblind=1").streaming_content)
        upload = io.BytesIO(csv_body)
        upload.name = "records.csv"
        response = self.client.post(
            f"/api/v1/campaigns/{target.slug}/reviews",
            data={"file": upload},
            HTTP_AUTHORIZATION=f"Bearer {self.tokens['lead']}",
        )
        assert response.status_code == 200, response.content
        assert (response.json()["reviews_created"], response.json()["reviews_unchanged"]) == (0, 8)
        response = self.client.post(
            f"/api/v1/campaigns/{target.slug}/reviews",
            data=b'{"task_id": "T-1"}\n',
            content_type="application/x-ndjson",
            HTTP_AUTHORIZATION=f"Bearer {self.tokens['admin']}",
        )
        assert response.status_code == 400
        assert "line 1, field judge: required" in response.json()["errors"]
        # A multipart upload under another field name (curl -F upload=@...): a 500 before.
        upload.seek(0)
        response = self.client.post(
            f"/api/v1/campaigns/{target.slug}/reviews",
            data={"upload": upload},
            HTTP_AUTHORIZATION=f"Bearer {self.tokens['lead']}",
        )
        assert response.status_code == 400
        assert response.json()["error"] == "send the records as the multipart field 'file'"


def arbitration_record(**extra) -> dict:
    """The arbiter's decision on T-4 (judges gave omega's accuracy 5 and 2)."""
    zeta, omega = SECRET_NAMES
    out = rec(
        task="T-4",
        judge="arb",
        models={"A": zeta, "B": omega},
        scores={"B": {"accuracy": 4}},
        preference=None,
        comment="Omega's answer is mostly right; one date is wrong.",
        arbitration=True,
        submitted_at="2026-11-30T12:00:00Z",
    )
    out.update(extra)
    return out


class ArbitrationRecordTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.campaign = make_campaign()

    def counts(self):
        return (
            ReviewItem.objects.count(),
            Review.objects.count(),
            Score.objects.count(),
            Arbitration.objects.count(),
            Arbitration.objects.filter(state="resolved").count(),
        )

    def test_it_replays_an_arbiters_decision(self):
        summary = reviews_import(
            campaign=self.campaign, data=jsonl(*sample_records(), arbitration_record()), fmt="jsonl"
        )
        assert summary.arbitrations_created == 1 and summary.reviews_created == 8
        item = ReviewItem.objects.get(task__external_id="T-4")
        assert item.state == "resolved"
        omega_output = ItemOutput.objects.get(
            item=item, generation__contender__name=SECRET_NAMES[1]
        )
        assert item.final["scores"][str(omega_output.pk)]["accuracy"] == 4.0
        assert item.final["arbitrated"] == ["accuracy"]
        arbitration = Arbitration.objects.get(item=item)
        assert arbitration.arbiter.username == "arb" and arbitration.note.startswith(
            "Omega's answer"
        )
        assert campaign_report(campaign=self.campaign)["progress"]["resolved"] == 1

    def test_it_round_trips_arbitrations_and_reproduces_the_report(self):
        reviews_import(
            campaign=self.campaign, data=jsonl(*sample_records(), arbitration_record()), fmt="jsonl"
        )
        source = campaign_report(campaign=self.campaign)
        for fmt in ("jsonl", "csv"):
            body = "".join(records_export(campaign=self.campaign, fmt=fmt, unblind=True))
            assert body.count("arbitration") >= 1
            target = make_campaign(
                slug=f"copy-{fmt}",
                testset=self.campaign.testset,
                contenders=list(self.campaign.contenders.all()),
            )
            summary = reviews_import(campaign=target, data=body.encode(), fmt=fmt)
            assert summary.arbitrations_created == 1
            copy = campaign_report(campaign=target)
            copy["campaign"], copy["name"] = source["campaign"], source["name"]
            assert copy == source, fmt
            # Importing the export again changes nothing.
            again = reviews_import(campaign=target, data=body.encode(), fmt=fmt)
            assert (
                again.reviews_created,
                again.arbitrations_created,
                again.arbitrations_unchanged,
            ) == (0, 0, 1)

    def assert_rejected(self, records, expected):
        with pytest.raises(RecordImportError) as exc:
            reviews_import(campaign=self.campaign, data=jsonl(*records), fmt="jsonl")
        assert any(expected in m for m in exc.value.messages()), exc.value.messages()
        assert self.counts() == (0, 0, 0, 0, 0)

    def test_it_rejects_arbitrating_an_agreed_item(self):
        self.assert_rejected(
            [*sample_records(), arbitration_record(task_id="T-1")],
            "line 9, field arbitration: the reviews of this item agree: nothing to arbitrate",
        )

    def test_it_requires_a_note_and_the_disputed_values(self):
        self.assert_rejected(
            [*sample_records(), arbitration_record(comment="")],
            "line 9, field comment: a note explaining the decision is required",
        )
        self.assert_rejected(
            [*sample_records(), arbitration_record(scores={})],
            "line 9, field scores.B.accuracy: disputed: a value is required",
        )

    def test_it_holds_an_arbiter_to_whole_numbers_but_lets_an_agreed_mean_stand(self):
        self.assert_rejected(
            [*sample_records(), arbitration_record(scores={"B": {"accuracy": 3.5}})],
            "line 9, field scores.B.accuracy: must be a whole number on this ordinal scale",
        )
        records = sample_records()
        records[7]["scores"]["A"]["completeness"] = 4  # zeta's completeness on T-4: 3 and 4
        decision = arbitration_record(scores={"A": {"completeness": 3.5}, "B": {"accuracy": 4}})
        summary = reviews_import(
            campaign=self.campaign, data=jsonl(*records, decision), fmt="jsonl"
        )
        assert summary.arbitrations_created == 1
        item = ReviewItem.objects.get(task__external_id="T-4")
        zeta = ItemOutput.objects.get(item=item, generation__contender__name=SECRET_NAMES[0])
        assert item.final["scores"][str(zeta.pk)]["completeness"] == 3.5
        assert item.final["corrections"] == []

    def test_it_rejects_an_arbiter_who_reviewed_the_item(self):
        self.assert_rejected(
            [*sample_records(), arbitration_record(judge="judge_1")],
            "line 9, field judge: judge_1 reviewed this item and cannot arbitrate it",
        )

    def test_it_rejects_two_decisions_on_one_item(self):
        self.assert_rejected(
            [*sample_records(), arbitration_record(), arbitration_record(judge="arb2")],
            "line 10, field arbitration: this item was already arbitrated on line 9",
        )

    def test_it_lists_review_and_arbitration_problems_in_one_run(self):
        records = sample_records()
        records[0]["scores"]["A"]["accuracy"] = 9  # a bad review of T-1
        with pytest.raises(RecordImportError) as exc:
            reviews_import(
                campaign=self.campaign,
                data=jsonl(*records, arbitration_record(scores={})),
                fmt="jsonl",
            )
        assert exc.value.messages() == [
            "line 1, field scores.A.accuracy: 9 is outside the rubric range 1..5",
            "line 9, field scores.B.accuracy: disputed: a value is required",
        ]
        assert self.counts() == (0, 0, 0, 0, 0)

    def test_it_checks_only_the_note_of_a_decision_whose_reviews_have_problems(self):
        # Without the bad review of T-4 its item would not be disputed: "nothing to arbitrate"
        # would be noise, but the missing note is a problem whatever the reviews say.
        records = sample_records()
        records[7]["scores"]["B"]["accuracy"] = 0
        with pytest.raises(RecordImportError) as exc:
            reviews_import(
                campaign=self.campaign,
                data=jsonl(*records, arbitration_record(comment="")),
                fmt="jsonl",
            )
        assert exc.value.messages() == [
            "line 8, field scores.B.accuracy: 0 is outside the rubric range 1..5",
            "line 9, field comment: a note explaining the decision is required",
        ]
        # A line that names no task could be any task's review.
        body = jsonl(*sample_records()).replace(b'"T-2"', b"T-2", 1)
        with pytest.raises(RecordImportError) as exc:
            reviews_import(
                campaign=self.campaign,
                data=body + jsonl(arbitration_record(task_id="T-1", comment="")),
                fmt="jsonl",
            )
        assert [m.split(":")[0] for m in exc.value.messages()] == [
            "line 3, field (json)",
            "line 9, field comment",
        ]
        assert self.counts() == (0, 0, 0, 0, 0)

    def test_it_recognises_a_reimported_decision_and_rejects_a_changed_one(self):
        records = sample_records()
        decision = arbitration_record(flags={"A": ["hallucination", "refusal"], "B": []})
        reviews_import(campaign=self.campaign, data=jsonl(*records, decision), fmt="jsonl")
        same = {**decision, "flags": {"A": ["refusal", "hallucination"], "B": []}}
        same["comment"] = f"  {decision['comment']} "
        again = reviews_import(campaign=self.campaign, data=jsonl(*records, same), fmt="jsonl")
        assert (again.arbitrations_created, again.arbitrations_unchanged) == (0, 1)
        for changed in (
            {"scores": {"B": {"accuracy": 3}}},
            {"scores": {"B": {"accuracy": 4}, "A": {"accuracy": None}}},
            {"preference": "B"},
            {"flags": {"A": ["hallucination"], "B": []}},
            {"comment": "Another note."},
            {"judge": "arb2"},
        ):
            with pytest.raises(RecordImportError) as exc:
                reviews_import(
                    campaign=self.campaign,
                    data=jsonl(*records, {**decision, **changed}),
                    fmt="jsonl",
                )
            assert exc.value.messages() == [
                "line 9, field arbitration: this item was already arbitrated differently"
            ], changed
