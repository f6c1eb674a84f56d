"""Review records with per-turn scores (`turn_scores`): export, import, round trip, refusals."""

import json

from django.test import TestCase

from reviews.models import ReviewItem, Score
from reviews.records import RecordImportError, records_export, reviews_import
from tasks.models import Task
from tests.reviews.test_records import RUBRIC, SECRET_NAMES, jsonl, make_campaign, rec
from tests.reviews.turn_fixtures import SCORE_TURNS, USER_TURNS

ZETA, OMEGA = SECRET_NAMES


def turn_campaign(slug: str, *, score_turns=SCORE_TURNS):
    """T-1 and T-2 are conversations of 3 user turns; T-3 and T-4 are single prompts."""
    campaign = make_campaign(slug=slug)
    campaign.score_turns = dict(score_turns) if score_turns else None
    campaign.save(update_fields=["score_turns"])
    Task.objects.filter(testset=campaign.testset, external_id__in=["T-1", "T-2"]).update(
        prompt="", turns=USER_TURNS[:3]
    )
    return campaign


def records() -> list[dict]:
    """Two judges on T-1 (agreeing), two on T-2 who are 3 apart on zeta's turn 2 (a dispute),
    the second judge seeing the outputs in the other order; T-3 without turn scores."""
    out = []
    for task, zeta_turns in (("T-1", ([5, 4, 4], [4, 4, 5])), ("T-2", ([5, 5, 4], [5, 2, 4]))):
        out.append(
            rec(
                task=task,
                judge="judge_1",
                models={"A": ZETA, "B": OMEGA},
                turn_scores={"A": zeta_turns[0], "B": [3, 3, 2]},
            )
        )
        out.append(
            rec(
                task=task,
                judge="judge_2",
                models={"A": OMEGA, "B": ZETA},
                scores={
                    "A": {"accuracy": 3, "completeness": 3},
                    "B": {"accuracy": 4, "completeness": 4},
                },
                preference="B",
                turn_scores={"A": [3, 2, 2], "B": zeta_turns[1]},
                submitted_at="2026-11-30T11:00:00Z",
            )
        )
    out.append(rec(task="T-3", judge="judge_1"))
    out.append(rec(task="T-3", judge="judge_2"))
    return out


def exported(campaign, fmt="jsonl") -> str:
    return "".join(records_export(campaign=campaign, fmt=fmt, unblind=True))


def problems(campaign, *lines, fmt="jsonl") -> list[str]:
    data = jsonl(*lines) if fmt == "jsonl" else lines[0].encode()
    try:
        reviews_import(campaign=campaign, data=data, fmt=fmt)
    except RecordImportError as exc:
        return exc.messages()
    raise AssertionError("the import was accepted")


class RoundTripTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.campaign = turn_campaign("turns")
        reviews_import(campaign=cls.campaign, data=jsonl(*records()), fmt="jsonl")

    def test_it_stores_a_score_per_turn_and_settles_the_turns(self):
        stored = Score.objects.filter(review__item__task__external_id="T-1")
        assert sorted({s.dimension for s in stored}) == [
            "accuracy",
            "completeness",
            "turn_quality@1",
            "turn_quality@2",
            "turn_quality@3",
        ]
        t2 = ReviewItem.objects.get(campaign=self.campaign, task__external_id="T-2")
        assert t2.state == "disputed"
        assert [r["part"] for r in t2.dispute_reasons] == ["turn_quality@2"]
        t1 = ReviewItem.objects.get(campaign=self.campaign, task__external_id="T-1")
        assert t1.state == "agreed"

    def test_the_export_carries_turn_scores_per_label_in_turn_order(self):
        lines = [json.loads(line) for line in exported(self.campaign).splitlines()]
        t2 = [r for r in lines if r["task_id"] == "T-2"]
        assert [(r["judge"], r["turn_scores"]) for r in t2] == [
            ("judge_1", {"A": [5, 5, 4], "B": [3, 3, 2]}),
            ("judge_2", {"A": [3, 2, 2], "B": [5, 2, 4]}),
        ]
        # The per-turn scores are not among the rubric scores, and a prompt has none.
        assert t2[0]["scores"] == {
            "A": {"accuracy": 4, "completeness": 4},
            "B": {"accuracy": 3, "completeness": 3},
        }
        assert list(t2[0])[:5] == ["task_id", "category", "candidates", "scores", "turn_scores"]
        assert all("turn_scores" not in r for r in lines if r["task_id"] == "T-3")

    def test_an_export_imported_into_a_fresh_campaign_gives_the_same_outcomes(self):
        for fmt in ("jsonl", "csv"):
            copy = turn_campaign(f"copy-{fmt}")
            text = exported(self.campaign, fmt)
            summary = reviews_import(campaign=copy, data=text.encode(), fmt=fmt)
            assert summary.reviews_created == 6
            assert exported(copy, fmt) == text
            finals = {
                i.task.external_id: (i.state, i.dispute_reasons and i.dispute_reasons[0]["part"])
                for i in ReviewItem.objects.filter(campaign=copy).select_related("task")
            }
            assert finals == {
                "T-1": ("agreed", []),
                "T-2": ("disputed", "turn_quality@2"),
                "T-3": ("agreed", []),
            }
            # A second import of the same file changes nothing.
            again = reviews_import(campaign=copy, data=text.encode(), fmt=fmt)
            assert (again.reviews_created, again.reviews_unchanged) == (0, 6)

    def test_an_arbitration_record_decides_the_disputed_turn_and_round_trips(self):
        campaign = turn_campaign("arbitrated")
        arbiter = rec(
            task="T-2",
            judge="arbiter_1",
            models={"A": ZETA, "B": OMEGA},
            scores={},
            preference=None,
            # null: a turn the arbiter did not decide (only turn 2 of zeta was disputed)
            turn_scores={"A": [None, 3, None]},
            comment="turn 2 forgot the pool",
            arbitration=True,
        )
        reviews_import(campaign=campaign, data=jsonl(*records(), arbiter), fmt="jsonl")
        item = ReviewItem.objects.get(campaign=campaign, task__external_id="T-2")
        zeta = str(item.outputs.get(generation__contender__name=ZETA).pk)
        assert item.state == "resolved"
        assert item.final["scores"][zeta]["turn_quality@2"] == 3.0
        lines = [json.loads(line) for line in exported(campaign).splitlines()]
        assert [r["turn_scores"] for r in lines if r.get("arbitration")] == [{"A": [None, 3, None]}]
        copy = turn_campaign("arbitrated-copy")
        reviews_import(campaign=copy, data=exported(campaign).encode(), fmt="jsonl")
        again = ReviewItem.objects.get(campaign=copy, task__external_id="T-2")
        assert again.state == "resolved"
        assert exported(copy) == exported(campaign)

    def test_the_csv_has_a_cell_per_output_with_the_turns_joined(self):
        header, *rows = exported(self.campaign, "csv").splitlines()
        columns = header.split(",")
        assert "turn_scores.A" in columns and "turn_scores.B" in columns
        first = dict(zip(columns, rows[0].split(","), strict=True))
        assert (first["task_id"], first["turn_scores.A"], first["turn_scores.B"]) == (
            "T-1",
            "5;4;4",
            "3;3;2",
        )


class BadInputTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.campaign = turn_campaign("bad-turns")

    def test_it_refuses_a_list_whose_length_is_not_the_tasks_turns(self):
        line = rec(turn_scores={"A": [4, 4], "B": [3, 3, 3, 3]})
        assert problems(self.campaign, line) == [
            "line 1, field turn_scores.A: has 2 scores; the task has 3 turns",
            "line 1, field turn_scores.B: has 4 scores; the task has 3 turns",
        ]

    def test_it_refuses_out_of_range_fractional_text_and_null_turn_scores(self):
        line = rec(turn_scores={"A": [4, 9, None], "B": ["good", 2.5, 0]})
        assert problems(self.campaign, line) == [
            "line 1, field turn_scores.A: turn 2: 9 is outside the rubric range 1..5",
            "line 1, field turn_scores.A: turn 3: N/A (null) is not allowed: this dimension "
            "does not allow N/A",
            "line 1, field turn_scores.B: turn 1: must be a number or null",
            "line 1, field turn_scores.B: turn 3: 0 is outside the rubric range 1..5",
        ]

    def test_it_refuses_a_label_that_is_not_a_candidate_and_a_shape_that_is_not_lists(self):
        assert problems(self.campaign, rec(turn_scores={"C": [4, 4, 4]})) == [
            "line 1, field turn_scores.C: not one of the candidates"
        ]
        assert problems(self.campaign, rec(turn_scores={"A": {"1": 4}})) == [
            "line 1, field turn_scores: must map each label to a list of scores, one per turn: "
            '{"A": [4, 3]}'
        ]
        assert problems(self.campaign, rec(turn_scores=[4, 4, 4])) == [
            "line 1, field turn_scores: must map each label to a list of scores, one per turn: "
            '{"A": [4, 3]}'
        ]

    def test_it_refuses_turn_scores_on_a_task_without_turns_or_a_campaign_without_them(self):
        assert problems(self.campaign, rec(task="T-3", turn_scores={"A": [4]})) == [
            "line 1, field turn_scores: task 'T-3' is not a conversation (no turns): no turn scores"
        ]
        plain = turn_campaign("no-turns", score_turns=None)
        assert problems(plain, rec(turn_scores={"A": [4, 4, 4]})) == [
            "line 1, field turn_scores: this campaign does not score turns (its definition has "
            "no score_turns)"
        ]

    def test_it_refuses_per_turn_keys_among_the_rubric_scores(self):
        scores = {"A": {"accuracy": 4, "turn_quality@1": 4}, "B": {"accuracy": 3}}
        keys = ", ".join(d["key"] for d in RUBRIC)
        assert problems(self.campaign, rec(scores=scores)) == [
            f"line 1, field scores.A.turn_quality@1: unknown dimension (the rubric has {keys})"
        ]

    def test_it_refuses_a_bad_csv_turn_cell(self):
        text = (
            "task_id,judge,candidates,models.A,models.B,turn_scores.A\n"
            f"T-1,j1,A;B,{ZETA},{OMEGA},4;x;4\n"
        )
        assert problems(self.campaign, text, fmt="csv") == [
            "line 2, field turn_scores.A: turn 2: must be a number or null"
        ]
