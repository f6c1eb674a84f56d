"""Per-tier pass thresholds and the decision score's quality floor, definition to report."""

import json

import pytest
from django.test import TestCase

from reviews.report.campaign import campaign_report
from tasks.campaigns.api import campaign_json
from tasks.campaigns.definition import DefinitionError, campaign_create
from tests.factories import personas
from tests.reviews.test_report import PLAN, build_campaign
from tests.tasks.test_campaigns import SPEC_EXAMPLE, make_testset


class ThresholdDefinitionTests(TestCase):
    def test_it_takes_one_threshold_per_tier_and_reads_it_back(self):
        make_testset()
        data = json.loads(SPEC_EXAMPLE)
        data["pass_threshold"] = {"base": 0.6, "advanced": 0.8, "boundary": 0.5}
        data["weights"]["min_quality"] = 0.4
        campaign, _ = campaign_create(definition=data)
        assert campaign.pass_threshold == 0.5  # the smallest, for readers of one number
        shown = campaign_json(campaign)
        assert shown["pass_threshold"] == {"base": 0.6, "advanced": 0.8, "boundary": 0.5}
        assert "pass_thresholds" not in shown["weights"]
        assert shown["weights"]["min_quality"] == 0.4

    def test_it_rejects_an_unknown_tier_or_a_threshold_out_of_range(self):
        make_testset()
        data = json.loads(SPEC_EXAMPLE)
        data["pass_threshold"] = {"base": 1.5, "expert": 0.7}
        with pytest.raises(DefinitionError) as info:
            campaign_create(definition=data)
        assert "pass_threshold.expert: unknown tier (one of base, advanced, boundary)" in (
            info.value.errors
        )
        assert "pass_threshold.base: must be a number between 0 and 1" in info.value.errors


class TierThresholdReportTests(TestCase):
    def test_each_tier_is_judged_against_its_own_threshold(self):
        # tasks 0 (base), 1 and 2 (advanced); model-strong's final quality 1.0, 1.0, 0.75
        campaign = build_campaign(slug="tiers", plan=PLAN[:3], users=personas())
        one = campaign_report(campaign=campaign, n_boot=0)["passes"]["model-strong"]
        assert one["human"]["pass_at_1"] == 1.0  # 0.6 for every tier
        campaign.weights = {**campaign.weights, "pass_thresholds": {"base": 0.6, "advanced": 0.8}}
        campaign.save()
        tiers = campaign_report(campaign=campaign, n_boot=0)["passes"]["model-strong"]
        assert tiers["human"]["pass_at_1"] == pytest.approx(0.667)  # 0.75 < 0.8 fails
        assert tiers["by_tier"]["advanced"]["threshold"] == 0.8
        assert tiers["by_tier"]["advanced"]["human"]["rate"] == 0.5
        assert tiers["by_tier"]["base"]["human"] == {
            "rate": 1.0,
            "ci95": [0.207, 1.0],
            "n": 1,
            "small_sample": True,
        }

    def test_a_contender_below_the_quality_floor_is_not_ranked_on_decision(self):
        campaign = build_campaign(slug="floor", plan=PLAN[:3], users=personas())
        campaign.weights = {**campaign.weights, "min_quality": 0.5}
        campaign.save()
        report = campaign_report(campaign=campaign, n_boot=0)
        board = {r["contender"]: r for r in report["leaderboard"]}
        assert report["decision"]["min_quality"] == 0.5
        assert board["model-weak"]["below_floor"] and not board["model-strong"]["below_floor"]
        assert board["model-weak"]["decision_rank"] is None


def test_the_stability_page_names_each_tier_threshold():
    from reviews.dashboards.pages import _thresholds

    assert _thresholds({"base": 0.6, "advanced": 0.8}) == "base 0.6, advanced 0.8"
    assert _thresholds(0.6) == "0.6"
