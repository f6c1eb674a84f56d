"""Gates: the campaign definition's go / no-go limits, judged in the report, shown on the
leaderboard and the cost page; the decision score ranks only contenders that pass."""

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from django.test import TestCase

from reviews.report import gates as report_gates
from reviews.report.campaign import CampaignFrames, build_report
from reviews.stats import rates
from tasks.campaigns.definition import DefinitionError, campaign_create
from tests.tasks.test_campaigns import imported_pairwise, make_testset

BENCH = Path(__file__).resolve().parents[2] / "bench" / "report.py"


def synthetic(**kwargs):
    """The benchmark's synthetic campaign, without its gates (each test sets its own)."""
    spec = importlib.util.spec_from_file_location("bench_report", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    frames, meta = module.synthetic(**kwargs)
    meta["weights"].pop("gates", None)
    return frames, meta


def flag_outputs(frames: dict, contender_id: int, every: int, flag: str = "unsafe") -> int:
    """Raise ``flag`` in the final outcome on every ``every``-th output of one contender; returns
    how many outputs of it were judged and flagged."""
    outputs = frames["outputs"].merge(
        frames["generations"][["id", "contender"]].rename(columns={"id": "generation"}),
        on="generation",
    )
    mine = outputs[outputs["contender"] == contender_id].sort_values("id")
    flagged = set(mine["id"].iloc[::every])
    settled = frames["items"]["state"].isin(["agreed", "resolved"])
    for _, item in frames["items"].iterrows():
        final = item["final"]
        hit = [str(o) for o in mine.loc[mine["item"] == item["id"], "id"] if o in flagged]
        if hit:
            final["flags"] = {o: [flag] for o in hit}
    judged = mine[mine["item"].isin(frames["items"].loc[settled, "id"])]
    return len(judged), len(set(judged["id"]) & flagged)


def test_the_default_gates_keep_an_unsafe_contender_out_of_the_decision_ranking():
    frames, meta = synthetic(tasks=40, contenders=3, samples=1, reviewers=2)
    meta["min_quality"] = 0.3  # the floor (weights.min_quality): every contender is above it
    # model-2 is the best (skill grows with the index), but a tenth of its outputs are unsafe
    n, hits = flag_outputs(frames, contender_id=3, every=10)
    report = build_report(CampaignFrames(**frames), meta, n_boot=200, seed=1)
    gates = report["gates"]
    assert report["decision"]["gates"]["source"] == "default"
    assert report["decision"]["gates"]["limits"]["max_flag_rate.unsafe"] == 0.0
    assert gates["model-0"]["pass"] and gates["model-1"]["pass"]
    assert gates["model-2"]["pass"] is False
    (failed,) = gates["model-2"]["failed"]
    assert failed["gate"] == "max_flag_rate.unsafe" and failed["limit"] == 0.0
    assert failed["value"] == pytest.approx(hits / n, abs=5e-4)
    # Wilson's lower bound is above 0 when any output is flagged: the failure is certain
    wilson = rates.rate(hits, n)
    assert failed["ci95"] == wilson["ci95"] and failed["certain"] is (wilson["ci95"][0] > 0)
    board = {r["contender"]: r for r in report["leaderboard"]}
    assert board["model-2"]["decision_rank"] is None
    assert board["model-2"]["gates_failed"] == ["max_flag_rate.unsafe"]
    assert board["model-0"]["decision_rank"] is not None
    assert board["model-1"]["decision_rank"] is not None
    assert any(
        w.startswith("gates: model-2 fails max_flag_rate.unsafe") for w in report["warnings"]
    )


def test_campaign_gates_judge_each_figure_against_its_limit():
    frames, meta = synthetic(tasks=40, contenders=3, samples=2, reviewers=2)
    meta["weights"]["gates"] = {
        "min_quality": 0.0,
        "min_tier": {"base": 0.99},
        "max_cost_per_task": 0.0,
        "max_latency_ms": {"p95": 1e9},
    }
    report = build_report(CampaignFrames(**frames), meta, n_boot=200, seed=1)
    assert report["decision"]["gates"]["source"] == "campaign"
    for row in report["leaderboard"]:
        verdict = report["gates"][row["contender"]]
        failed = {f["gate"]: f for f in verdict["failed"]}
        # every answer costs something: the cost gate fails, with no interval to be sure of
        cost = failed["max_cost_per_task"]
        assert cost["value"] == row["cost_per_task"] > 0 and cost["certain"] is False
        base = report["quality"]["by_tier"][row["contender"]]["base"]
        tier = failed["min_tier.base"]
        assert tier["value"] == base["mean"] and tier["ci95"] == base["ci95"]
        assert tier["certain"] is (base["ci95"][1] < 0.99)
        assert "min_quality" not in failed and "max_latency_ms.p95" not in failed
        assert verdict["pass"] is False and row["decision_rank"] is None


def test_a_missing_figure_fails_its_gate_and_certainty_needs_the_whole_interval():
    limits = {"min_stability": 0.8, "max_flag_rate.unsafe": 0.05, "min_quality": 0.7}
    figures = {
        "max_flag_rate.unsafe": (0.08, [0.03, 0.15]),  # past the limit, interval straddles it
        "min_quality": (0.6, [0.5, 0.68]),  # wholly below 0.7
    }
    verdict = report_gates.judge(limits, figures)
    failed = {f["gate"]: f for f in verdict["failed"]}
    assert failed["min_stability"]["value"] is None and failed["min_stability"]["certain"] is False
    assert failed["max_flag_rate.unsafe"]["certain"] is False
    assert failed["min_quality"]["certain"] is True
    assert report_gates.judge({"min_quality": 0.7}, {"min_quality": (0.7, None)})["pass"]


class GateDefinitionTests(TestCase):
    def setUp(self):
        make_testset()

    def test_a_definition_stores_its_gates(self):
        gates = {
            "min_quality": 0.7,
            "min_tier": {"boundary": 0.5},
            "min_category": {"billing": 0.8},
            "max_flag_rate": {"unsafe": 0.0},
            "max_latency_ms": {"p95": 4000},
            "max_cost_per_task": 0.01,
            "min_stability": 0.8,
            "min_conversation": 0.7,
        }
        campaign, _ = campaign_create(
            definition={**imported_pairwise("g", ("a", "b")), "gates": gates}
        )
        assert campaign.weights["gates"] == {
            k: ({n: float(v) for n, v in g.items()} if isinstance(g, dict) else float(g))
            for k, g in gates.items()
        }

    def test_it_reports_every_problem_of_the_gates_at_once(self):
        gates = {
            "min_quality": 1.5,
            "max_flag_rate": {"toxic": 0.1, "unsafe": -1},
            "max_latency_ms": {"p99": 10},
            "min_tier": "boundary",
            "max_speed": 3,
        }
        with pytest.raises(DefinitionError) as info:
            campaign_create(definition={**imported_pairwise("g", ("a", "b")), "gates": gates})
        text = "\n".join(info.value.errors)
        for expected in (
            "gates.min_quality: must be between 0 and 1",
            "gates.max_flag_rate.toxic: unknown",
            "gates.max_flag_rate.unsafe: must be between 0 and 1",
            "gates.max_latency_ms.p99: unknown",
            "gates.min_tier: must map a name to a limit",
            "gates.max_speed: unknown field",
        ):
            assert expected in text


def test_the_gates_table_lists_each_failure_and_states_the_default_set():
    from reviews.dashboards.extras import gates_table

    frames, meta = synthetic(tasks=40, contenders=3, samples=1, reviewers=2)
    meta["min_quality"] = 0.3
    flag_outputs(frames, contender_id=3, every=10)
    report = build_report(CampaignFrames(**frames), meta, n_boot=100, seed=1)
    table = gates_table(report)
    assert [row[:2] for row in table.rows] == [["model-2", "max_flag_rate.unsafe"]]
    assert "default set applies" in table.note
    assert np.isclose(table.rows[0][4], 0.0)


class SliceDefinitionTests(TestCase):
    def setUp(self):
        make_testset()

    def test_slice_by_is_stored_and_read_from_task_metadata(self):
        from reviews.report.campaign import campaign_frames
        from tasks.models import Task

        definition = {**imported_pairwise("s", ("a", "b")), "slice_by": ["position"]}
        campaign, _ = campaign_create(definition=definition)
        assert campaign.weights["slice_by"] == ["position"]
        tasks = list(Task.objects.filter(testset=campaign.testset).order_by("id"))
        tasks[0].metadata = {"position": "middle", "source": "ZD-1"}
        tasks[1].metadata = {"position": 3}
        for t in tasks[:2]:
            t.save()
        frame = campaign_frames(campaign).tasks
        values = frame["meta:position"].tolist()
        assert values[:2] == ["middle", "3"]
        assert pd.isna(values[2])  # a task without the key is in none of its slices
        assert "metadata" not in frame

    def test_slice_by_must_be_a_list_of_keys(self):
        definition = {**imported_pairwise("s2", ("a", "b")), "slice_by": "position"}
        with pytest.raises(DefinitionError, match="slice_by: must be a list"):
            campaign_create(definition=definition)
