"""score_turns in the campaign definition (file, API, the new-campaign form): accepted with its
defaults, every bad value refused with its field named."""

import json

from django.test import TestCase

from evalsite.models import ApiToken
from tasks.campaigns.definition import (
    DefinitionError,
    campaign_create,
    campaign_definition_validate,
)
from tasks.models import Campaign, Contender
from tests.factories import TaskFactory, TestSetFactory, personas
from tests.reviews.turn_fixtures import USER_TURNS


def definition(slug="conv", **extra) -> dict:
    return {
        "slug": slug,
        "testset": "conversations",
        "mode": "both",
        "rubric": [{"key": "accuracy"}],
        "contenders": [
            {"name": "alpha-model", "provider": "imported"},
            {"name": "beta-model", "provider": "imported"},
        ],
        **extra,
    }


def errors_of(**extra) -> list[str]:
    try:
        campaign_definition_validate(definition(**extra))
    except DefinitionError as exc:
        return exc.errors
    raise AssertionError("the definition was accepted")


class DefinitionTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.testset = TestSetFactory(name="conversations", task_count=2)
        TaskFactory(testset=cls.testset, external_id="C-1", prompt="", turns=USER_TURNS[:3])
        TaskFactory(testset=cls.testset, external_id="P-1")

    def test_it_stores_score_turns_with_its_defaults(self):
        campaign, warnings = campaign_create(
            definition=definition(score_turns={"dimension": "turn_quality", "min": 1, "max": 5})
        )
        assert campaign.score_turns == {
            "dimension": "turn_quality",
            "label": "Turn quality",
            "min": 1,
            "max": 5,
            "max_gap": 1,
        }
        assert not [w for w in warnings if "score_turns" in w]
        other, _ = campaign_create(
            definition=definition(
                slug="conv-2",
                score_turns={"dimension": "tq", "label": "Reply", "max": 7, "max_gap": 2},
            )
        )
        assert other.score_turns == {
            "dimension": "tq",
            "label": "Reply",
            "min": 1,
            "max": 7,
            "max_gap": 2,
        }

    def test_it_is_off_when_left_out_or_null(self):
        assert campaign_definition_validate(definition()).campaign["score_turns"] is None
        valid = campaign_definition_validate(definition(score_turns=None))
        assert valid.campaign["score_turns"] is None

    def test_it_refuses_a_dimension_named_like_a_rubric_key(self):
        assert errors_of(score_turns={"dimension": "accuracy"}) == [
            "score_turns.dimension: 'accuracy' is a rubric dimension already; give the "
            "per-turn score a name of its own (e.g. 'turn_quality')"
        ]

    def test_it_refuses_bad_values_each_with_its_field(self):
        assert errors_of(score_turns={"dimension": "Turn Quality", "min": 5, "max": 1}) == [
            "score_turns.dimension: lowercase letters, digits and _ (starting with a letter)",
            "score_turns.max: must be greater than min",
        ]
        assert errors_of(score_turns={"min": 1, "max": 500, "scale": 3, "max_gap": -1}) == [
            "score_turns.scale: unknown field",
            "score_turns.dimension: required",
            "score_turns.max: a scale has at most 101 points",
            "score_turns.max_gap: must be between 0 and 2000",
        ]
        assert errors_of(score_turns="turn_quality") == [
            'score_turns: must be an object {"dimension": "turn_quality", "min": 1, "max": 5}, '
            "or null for none"
        ]
        assert errors_of(score_turns={"dimension": "tq", "min": 1.5}) == [
            "score_turns.min: must be an integer"
        ]

    def test_it_refuses_per_turn_scores_in_a_pairwise_campaign(self):
        errors = errors_of(mode="pairwise", rubric=[], score_turns={"dimension": "tq"})
        assert errors == [
            "score_turns: mode 'pairwise' collects no scores; choose mode 'both' to score "
            "each turn and ask which output is better"
        ]

    def test_it_warns_when_the_test_set_has_no_conversation(self):
        plain = TestSetFactory(name="prompts", task_count=1)
        TaskFactory(testset=plain)
        valid = campaign_definition_validate(
            definition(testset="prompts", score_turns={"dimension": "tq"})
        )
        assert [w for w in valid.warnings if w.startswith("score_turns")] == [
            f"score_turns: {plain} has no conversation task (none has turns), so no turn is "
            "scored; only the final reply is"
        ]


class ApiAndFormTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.tokens = {name: ApiToken.issue(user) for name, user in cls.users.items()}
        cls.testset = TestSetFactory(name="conversations", task_count=1, frozen=False)
        TaskFactory(testset=cls.testset, external_id="C-1", prompt="", turns=USER_TURNS[:3])

    def auth(self, name):
        return {"Authorization": f"Bearer {self.tokens[name]}"}

    def test_the_api_takes_score_turns_and_shows_it_back(self):
        body = definition(score_turns={"dimension": "turn_quality", "min": 0, "max": 3})
        response = self.client.post(
            "/api/v1/campaigns", json.dumps(body), "application/json", headers=self.auth("admin")
        )
        assert response.status_code == 201, response.content
        detail = self.client.get("/api/v1/campaigns/conv", headers=self.auth("lead")).json()
        assert detail["score_turns"] == {
            "dimension": "turn_quality",
            "label": "Turn quality",
            "min": 0,
            "max": 3,
            "max_gap": 1,
        }
        bad = definition(slug="conv-bad", score_turns={"dimension": "accuracy"})
        response = self.client.post(
            "/api/v1/campaigns", json.dumps(bad), "application/json", headers=self.auth("admin")
        )
        assert response.status_code == 400
        assert any("score_turns.dimension" in e for e in response.json()["errors"])

    def form_data(self, slug: str, **extra) -> dict:
        return {
            "slug": slug,
            "testset": self.testset.pk,
            "contenders": [
                Contender.objects.get_or_create(name=n, defaults={"provider": "imported"})[0].pk
                for n in ("alpha-model", "beta-model")
            ],
            "mode": "both",
            "samples_per_task": 1,
            "reviewed_samples": 1,
            "overlap": 2,
            "rubric": "- key: accuracy",
            "lease_minutes": 20,
            "pass_threshold": 0.6,
            "reviewers_all": "on",
            "arbiters_all": "on",
            **extra,
        }

    def test_the_form_creates_a_campaign_that_scores_each_turn(self):
        self.client.force_login(self.users["admin"])
        page = self.client.get("/campaigns/new/").content.decode()
        assert 'name="score_turns"' in page and 'name="score_turns_max"' in page
        data = self.form_data(
            "form-turns", score_turns="turn_quality", score_turns_min=1, score_turns_max=4
        )
        response = self.client.post("/campaigns/new/", data, headers={"HX-Request": "true"})
        assert response.headers.get("HX-Redirect") == "/campaigns/form-turns/", response.context[
            "form"
        ].errors
        campaign = Campaign.objects.get(slug="form-turns")
        assert (campaign.score_turns["dimension"], campaign.score_turns["max"]) == (
            "turn_quality",
            4,
        )
        detail = self.client.get("/campaigns/form-turns/").content.decode()
        assert "Turn quality (1-4) on every user turn" in detail

    def test_the_form_leaves_it_off_when_empty_and_names_the_field_of_a_problem(self):
        self.client.force_login(self.users["admin"])
        response = self.client.post(
            "/campaigns/new/", self.form_data("form-plain"), headers={"HX-Request": "true"}
        )
        assert "HX-Redirect" in response.headers
        assert Campaign.objects.get(slug="form-plain").score_turns is None
        data = self.form_data(
            "form-clash", score_turns="accuracy", score_turns_min=3, score_turns_max=2
        )
        response = self.client.post("/campaigns/new/", data, headers={"HX-Request": "true"})
        assert response.context["form"].errors["score_turns"] == [
            "Score each turn: dimension: 'accuracy' is a rubric dimension already; give the "
            "per-turn score a name of its own (e.g. 'turn_quality')",
            "Score each turn: max must be greater than min",
        ]
        assert not Campaign.objects.filter(slug="form-clash").exists()
