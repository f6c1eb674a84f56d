"""Each sample gets its own seed (the contender's seed + the sample index), unless the campaign
pins one seed for every sample; the report then says what it cannot measure."""

import pytest
from django.test import TestCase

from tasks.campaigns.definition import DefinitionError, campaign_create
from tasks.generation.run import generation_run
from tasks.generation.sample_seed import sample_params
from tasks.models import Generation
from tests.fake_llm import FakeLLM
from tests.tasks.test_generation import make_campaign


def test_a_sample_s_seed_is_the_contender_s_seed_plus_its_index():
    assert sample_params({"seed": 7, "temperature": 0.7}, 2) == {"seed": 9, "temperature": 0.7}
    assert sample_params({"seed": 7}, 0) == {"seed": 7}
    assert sample_params({"seed": 7}, 2, mode="fixed") == {"seed": 7}
    assert sample_params({"temperature": 1}, 3) == {"temperature": 1}  # no seed, none added


class SeedTests(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fake = FakeLLM()

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    def sent_seeds(self, slug: str, **extra) -> list[int]:
        contender = {"name": f"{slug}-oa", "provider": "openai", "model": f"{slug}-oa"}
        campaign = make_campaign(
            self.fake,
            tasks=1,
            samples=3,
            slug=slug,
            contenders=[
                {**contender, "params": {"seed": 7}},
                {"name": "imp", "provider": "imported"},
            ],
        )
        if extra:
            campaign.weights = {**campaign.weights, **extra}
            campaign.save()
        for row in Generation.objects.filter(campaign=campaign, contender__name=f"{slug}-oa"):
            assert generation_run(generation_id=row.pk).action == "done"
        return sorted(c["body"]["seed"] for c in self.fake.calls_for(f"{slug}-oa"))

    def test_each_sample_is_sent_its_own_seed(self):
        assert self.sent_seeds("derived") == [7, 8, 9]

    def test_a_pinned_seed_goes_to_every_sample(self):
        assert self.sent_seeds("pinned", sample_seeds="fixed") == [7, 7, 7]

    def test_the_definition_takes_derived_or_fixed_only(self):
        testset = make_campaign(self.fake, slug="seed-ts", tasks=1).testset.name
        definition = {
            "slug": "bad-seeds",
            "testset": testset,
            "contenders": [{"name": "imp", "provider": "imported"}],
            "mode": "pairwise",
            "sample_seeds": "sometimes",
        }
        with pytest.raises(DefinitionError, match="sample_seeds: one of derived, fixed"):
            campaign_create(definition=definition)
        fixed, _ = campaign_create(definition={**definition, "sample_seeds": "fixed"})
        assert fixed.weights["sample_seeds"] == "fixed"
