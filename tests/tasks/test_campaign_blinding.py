"""A campaign's own texts that reviewers read: a slug naming a contender is refused (it is in
every reviewer URL, where nothing can mask it); the name, the rubric and the test set's
categories warn (the name as written, the rest masked on the reviewer's pages)."""

import json

import pytest
from django.test import TestCase

from evalsite.models import ApiToken
from tasks.campaigns.definition import DefinitionError, campaign_create
from tasks.models import Campaign, Contender
from tests.factories import ContenderFactory, TaskFactory, TestSetFactory, personas

SECRET = "zz-secret-model-9"


def tasks_of(categories=("billing", "billing", "refunds")):
    ts = TestSetFactory(name="support-v3", frozen=False, task_count=len(categories))
    for i, category in enumerate(categories):
        TaskFactory(testset=ts, position=i, external_id=f"T-{i + 1}", category=category)
    return ts


def definition(**extra) -> dict:
    return {
        "slug": "neutral",
        "testset": "support-v3",
        "contenders": [
            {
                "name": SECRET,
                "provider": "openai",
                "model": f"acme/{SECRET}",
                "base_url": "https://inference.zz-labs.example/v1",
            },
            {"name": "acme/it", "provider": "openai", "model": "acme/it"},
        ],
        "mode": "both",
        "rubric": [{"key": "accuracy", "min": 1, "max": 5}],
        **extra,
    }


def refused(**extra) -> list[str]:
    with pytest.raises(DefinitionError) as exc:
        campaign_create(definition=definition(**extra))
    return exc.value.errors


class DefinitionTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        tasks_of()

    def test_it_refuses_a_slug_that_names_a_contender_a_model_or_a_vendor(self):
        for slug, word in (
            (f"{SECRET}-vs-it", SECRET),
            ("gpt-4o-bakeoff", "gpt-4o"),
            ("openai_vs_rest", "openai"),  # an identifier's _ separates words too
        ):
            errors = refused(slug=slug)
            slug_errors = [e for e in errors if e.startswith("slug:")]
            assert len(slug_errors) == 1, errors
            assert "cannot be masked" in slug_errors[0]
            assert word.casefold() in slug_errors[0].casefold(), slug_errors
        assert not Campaign.objects.exists()
        # A neutral slug is taken, and says nothing.
        campaign, warnings = campaign_create(definition=definition(slug="support-q4"))
        assert campaign.slug == "support-q4"
        assert not [w for w in warnings if w.startswith("slug")]

    def test_it_refuses_a_slug_naming_an_existing_contender_given_by_name_only(self):
        ContenderFactory(name="house-model", model="vendorx/house-model-large")
        others = definition()["contenders"][1:]
        errors = refused(
            slug="house-model-large-trial", contenders=[{"name": "house-model"}, *others]
        )
        assert any(e.startswith("slug:") and "house-model-large" in e for e in errors), errors

    def refused(self, **over) -> list[str]:
        with pytest.raises(DefinitionError) as exc:
            campaign_create(definition=definition(**over))
        return exc.value.errors

    def test_it_refuses_a_name_that_names_a_contender(self):
        assert self.refused(name=f"{SECRET} bake-off") == [
            f"name: names a model, a vendor or a redacted term (“{SECRET}”); reviewers read "
            "it, so it would tell them who wrote the answers: choose a neutral wording"
        ]

    def test_it_refuses_rubric_texts_that_name_one_each_with_its_word(self):
        rubric = [
            {
                "key": "accuracy",
                "label": "As good as Claude?",
                "description": f"compare with {SECRET}",
                "anchors": {"1": "worse than GPT-4o", "5": "fine"},
            }
        ]
        errors = self.refused(rubric=rubric)
        assert [e.split(":")[0] for e in errors] == [
            "rubric[0].label",
            "rubric[0].description",
            "rubric[0].anchors.1",
        ]
        for word, error in zip(("Claude", SECRET, "GPT-4o"), errors, strict=True):
            assert f"(“{word}”)" in error

    def test_it_refuses_a_rubric_key_that_names_one(self):
        [error] = self.refused(rubric=[{"key": "claude_likeness", "label": "Likeness"}])
        assert error.startswith("rubric[0].key: names") and "“claude”" in error.casefold()

    def test_it_refuses_each_category_that_names_a_model(self):
        ts = TestSetFactory(name="named-cats", frozen=False, task_count=4)
        for i, category in enumerate(("claude_style", "billing", "openai_tools", "claude_style")):
            TaskFactory(testset=ts, position=i, external_id=f"T-{i}", category=category)
        errors = self.refused(testset="named-cats")
        assert [e.split(" names")[0] for e in errors] == [
            f"testset: category 'claude_style' of {ts}",
            f"testset: category 'openai_tools' of {ts}",
        ]
        _, warnings = campaign_create(definition=definition(slug="plain-cats"))
        assert not [w for w in warnings if w.startswith("testset:")]


class EntryPointTests(TestCase):
    """The API and the admin form refuse the slug too (they share the definition's check)."""

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.ts = tasks_of()
        ContenderFactory(name=SECRET, model=f"acme/{SECRET}")
        ContenderFactory(name="acme/it", model="acme/it")

    def test_the_api_refuses_the_slug_with_a_400(self):
        token = ApiToken.issue(self.users["admin"])
        response = self.client.post(
            "/api/v1/campaigns",
            json.dumps(
                definition(
                    slug=f"{SECRET}-trial", contenders=[{"name": SECRET}, {"name": "acme/it"}]
                )
            ),
            content_type="application/json",
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 400, response.content
        assert "cannot be masked" in response.content.decode()
        assert not Campaign.objects.exists()

    def test_the_form_shows_the_error_under_the_slug(self):
        self.client.force_login(self.users["admin"])
        data = {
            "slug": f"{SECRET}-trial",
            "testset": self.ts.pk,
            "contenders": list(Contender.objects.values_list("pk", flat=True)),
            "mode": "rubric",
            "samples_per_task": 1,
            "reviewed_samples": 1,
            "overlap": 2,
            "rubric": "- key: accuracy",
            "lease_minutes": 20,
            "pass_threshold": 0.6,
        }
        response = self.client.post("/campaigns/new/", data, headers={"HX-Request": "true"})
        assert response.status_code == 200
        form = response.context["form"]
        assert any("cannot be masked" in e for e in form.errors.get("slug", [])), form.errors
        assert not Campaign.objects.exists()
