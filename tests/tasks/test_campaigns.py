"""Campaign definitions, contenders, the create/import commands, the API and the admin pages."""

import json
import re
from datetime import timedelta
from io import StringIO
from unittest import mock

import pytest
from django.core.management import CommandError, call_command
from django.test import TestCase
from django.utils import timezone

from evalsite.models import ApiToken
from reviews.models import ReviewItem
from tasks.campaigns import definition as campaigns
from tasks.campaigns import forms as campaign_forms
from tasks.campaigns.definition import DefinitionError, campaign_create, campaign_definition_load
from tasks.campaigns.selectors import campaign_failure_summary, campaign_progress
from tasks.intake.services import testset_delete as delete_testset
from tasks.models import Campaign, Contender, Generation
from tests.factories import TaskFactory, TestSetFactory, UserFactory, personas

SPEC_EXAMPLE = """{"slug": "support-q4", "name": "Support bot Q4", "testset": "support-v3",
 "contenders": [{"name": "model-x", "provider": "openai", "base_url": "http://127.0.0.1:8001/v1",
                 "model": "x-large", "api_key_env": "X_API_KEY",
                 "params": {"temperature": 0.7, "max_tokens": 512, "seed": 7},
                 "price_in_per_mtok": 0.15, "price_out_per_mtok": 0.60}],
 "samples_per_task": 3, "reviewed_samples": 1, "overlap": 2, "mode": "both",
 "rubric": [{"key": "accuracy", "min": 1, "max": 5, "level": "ordinal", "max_gap": 1,
             "anchors": {"1": "wrong", "5": "fully correct"}}],
 "weights": {"categories": {"long_context_summary": 2}, "quality": 0.7, "stability": 0.3},
 "redact": ["openai", "gpt"]}"""

YAML_DEFINITION = """
slug: support-yaml
name: Support (YAML)
testset: {name: support-v3, version: 1}
contenders:
  - name: vendor-export
    provider: imported
  - name: local-llama
    provider: openai
    base_url: http://127.0.0.1:8002/v1
    model: llama-3.1-8b
    params: {temperature: 0.2, seed: 11}
mode: pairwise
samples_per_task: 2
"""


def make_testset(name="support-v3", version=1, n=3, frozen=False):
    ts = TestSetFactory(name=name, version=version, frozen=frozen, task_count=n)
    for i in range(n):
        TaskFactory(testset=ts, position=i, external_id=f"T-{i + 1}", category="billing")
    return ts


def imported_pairwise(slug: str, names: tuple[str, ...]) -> dict:
    """A pairwise campaign on support-v3 whose contenders' outputs are imported."""
    return {
        "slug": slug,
        "testset": "support-v3",
        "mode": "pairwise",
        "contenders": [{"name": n, "provider": "imported"} for n in names],
    }


def alias_bomb(levels: int = 9) -> str:
    """'Billion laughs': each level lists the one before nine times (9**9 strings)."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "slug: bomb\n" + "\n".join(lines) + "\n"


class DefinitionTests(TestCase):
    def test_it_loads_the_spec_example_as_written(self):
        ts = make_testset()
        campaign, warnings = campaign_create(definition=campaign_definition_load(SPEC_EXAMPLE))
        assert campaign.slug == "support-q4" and campaign.testset == ts
        assert campaign.rubric[0]["key"] == "accuracy" and campaign.rubric[0]["anchors"] == {
            "1": "wrong",
            "5": "fully correct",
        }
        assert (
            campaign.rubric[0]["direction"] == "higher"
            and campaign.rubric[0]["label"] == "Accuracy"
        )
        assert campaign.weights["quality"] == 0.7 and campaign.redact == ["openai", "gpt"]
        contender = Contender.objects.get(name="model-x")
        assert contender.api_key_env == "X_API_KEY" and contender.params["seed"] == 7
        assert str(contender.price_out_per_mtok) == "0.600000"
        # One contender is allowed as a draft, with a warning: review needs two.
        assert warnings and "at least 2 contenders" in warnings[0]
        assert Generation.objects.filter(campaign=campaign).count() == 3 * 1 * 3
        ts.refresh_from_db()
        assert ts.frozen

    def test_it_warns_that_pairwise_mode_leaves_a_rubric_unscored(self):
        make_testset()
        rubric = [{"key": "accuracy", "min": 1, "max": 5}]
        definition = {**imported_pairwise("pw-rubric", ("p-a", "p-b")), "rubric": rubric}
        campaign, warnings = campaign_create(definition=definition)
        assert warnings == [
            "rubric: mode 'pairwise' only asks which output is better, so these dimensions are "
            "not scored; choose mode 'both' to score them as well"
        ]
        admin = UserFactory(username="pw-admin", roles=["admin"])
        self.client.force_login(admin)
        page = self.client.get(f"/campaigns/{campaign.slug}/").content.decode()
        assert "(not scored: pairwise mode asks only which output is better)" in page
        _, none = campaign_create(definition=imported_pairwise("pw-plain", ("p-a", "p-b")))
        assert none == []

    def test_it_loads_yaml_with_an_imported_contender_and_a_versioned_testset(self):
        make_testset(version=1)
        make_testset(version=2)
        campaign, warnings = campaign_create(
            definition=campaign_definition_load(YAML_DEFINITION, filename="c.yaml")
        )
        assert warnings == []
        assert (
            campaign.testset.version == 1 and campaign.mode == "pairwise" and campaign.rubric == []
        )
        assert set(campaign.contenders.values_list("provider", flat=True)) == {"imported", "openai"}

    def test_it_uses_the_latest_version_for_a_bare_testset_name(self):
        make_testset(version=1)
        latest = make_testset(version=2)
        campaign, _ = campaign_create(definition=campaign_definition_load(SPEC_EXAMPLE))
        assert campaign.testset == latest

    def test_it_reuses_a_contender_by_name_and_rejects_a_changed_configuration(self):
        make_testset()
        first, _ = campaign_create(definition=json.loads(SPEC_EXAMPLE))
        again = json.loads(SPEC_EXAMPLE) | {"slug": "support-q5"}
        second, _ = campaign_create(definition=again)
        assert list(second.contenders.all()) == list(first.contenders.all())
        changed = json.loads(SPEC_EXAMPLE) | {"slug": "support-q6"}
        changed["contenders"][0]["model"] = "x-small"
        with pytest.raises(DefinitionError) as info:
            campaign_create(definition=changed)
        assert "already exists with a different model" in info.value.errors[0]
        by_name = json.loads(SPEC_EXAMPLE) | {"slug": "support-q7", "contenders": ["model-x"]}
        assert campaign_create(definition=by_name)[0].contenders.get().name == "model-x"

    def test_it_reports_every_problem_at_once(self):
        bad = {
            "slug": "Bad Slug",
            "testset": "nope",
            "contenders": [{"name": "a", "provider": "mystery"}],
            "samples_per_task": 1,
            "reviewed_samples": 2,
            "mode": "rubric",
            "rubric": [],
            "colour": "blue",
        }
        with pytest.raises(DefinitionError) as info:
            campaign_create(definition=bad)
        text = "\n".join(info.value.errors)
        for expected in (
            "slug: lowercase",
            "testset: no test set named 'nope'",
            "contenders[0].provider: one of",
            "reviewed_samples: cannot exceed",
            "rubric: mode 'rubric' needs",
            "colour: unknown field",
        ):
            assert expected in text
        assert not Campaign.objects.exists() and not Contender.objects.exists()

    def test_it_rejects_invalid_rubric_dimensions_and_an_api_key_in_place_of_a_variable(self):
        make_testset()
        data = json.loads(SPEC_EXAMPLE)
        data["rubric"] = [
            {"key": "accuracy", "min": 5, "max": 1},
            {"key": "tone", "anchors": {"9": "x"}, "level": "fuzzy"},
        ]
        data["contenders"][0]["api_key_env"] = "sk-live-abc123!"
        with pytest.raises(DefinitionError) as info:
            campaign_create(definition=data)
        text = "\n".join(info.value.errors)
        assert "rubric[0].max: must be greater than min" in text
        assert "rubric[1].anchors.9: outside 1..5" in text and "rubric[1].level" in text
        assert "api_key_env: the NAME of an environment variable" in text

    def test_it_bounds_numbers_that_would_crash_storage_the_report_or_the_review_page(self):
        # A price over DecimalField(12, 6) was a 500 on PostgreSQL and, on SQLite, a stored
        # value that broke every later read of the contender; a weight of 10**400 cannot be a
        # float; a 1..10**9 scale would draw a billion buttons.
        make_testset()
        data = json.loads(SPEC_EXAMPLE)
        data["contenders"][0]["price_in_per_mtok"] = 10**7
        data["contenders"][0]["price_out_per_mtok"] = 10**400
        data["weights"] = {"quality": 10**400, "categories": {"billing": 1e300}}
        data["rubric"] = [
            {"key": "accuracy", "min": 1, "max": 10**9},
            {"key": "tone", "min": 0, "max": 101, "max_gap": 10**400},
        ]
        with pytest.raises(DefinitionError) as info:
            campaign_create(definition=data)
        errors = info.value.errors
        assert "contenders[0].price_in_per_mtok: must be between 0 and 999999" in errors
        assert "contenders[0].price_out_per_mtok: must be between 0 and 999999" in errors
        assert "weights.quality: must be between 0 and 1000" in errors
        assert "weights.categories.billing: must be between 0 and 1000" in errors
        assert "rubric[0].max: must be between -1000 and 1000" in errors
        assert "rubric[1].max: a scale has at most 101 points" in errors
        assert "rubric[1].max_gap: must be between 0 and 2000" in errors
        assert not Contender.objects.exists()
        data["rubric"] = [{"key": "percent", "min": 0, "max": 100}]
        data["weights"], data["contenders"][0]["price_out_per_mtok"] = {}, 999_999
        data["contenders"][0]["price_in_per_mtok"] = 999_999
        campaign_create(definition=data)

    def test_it_rejects_null_where_a_number_has_a_default(self):
        # Each null was taken: overlap (YAML `overlap:` with nothing after it) was an
        # IntegrityError, a 500 over the API; a scale's min broke every later review, a null
        # weight every report.
        make_testset()
        data = json.loads(SPEC_EXAMPLE)
        nulls = ("samples_per_task", "reviewed_samples", "overlap", "lease_minutes")
        data.update({key: None for key in nulls}, pass_threshold=None)
        data["rubric"] = [{"key": "accuracy", "min": None, "max": None, "max_gap": None}]
        data["contenders"][0]["max_concurrency"] = None
        data["weights"] = {"quality": None, "stability": None, "categories": {"billing": None}}
        with pytest.raises(DefinitionError) as info:
            campaign_create(definition=data)
        assert info.value.errors == [
            "contenders[0].max_concurrency: must be an integer, not null (leave it out for 4)",
            "samples_per_task: must be an integer, not null (leave it out for 1)",
            "reviewed_samples: must be an integer, not null (leave it out for 1)",
            "overlap: must be an integer, not null (leave it out for 2)",
            "rubric[0].min: must be an integer, not null (leave it out for 1)",
            "rubric[0].max: must be an integer, not null (leave it out for 5)",
            "rubric[0].max_gap: must be a number, not null (leave it out for 1)",
            "weights.categories.billing: must be a number, not null (leave it out for 1)",
            "weights.quality: must be a number, not null (leave it out for 0.7)",
            "weights.stability: must be a number, not null (leave it out for 0.3)",
            "lease_minutes: must be an integer, not null (leave it out for 20)",
            "pass_threshold: must be a number, not null (leave it out for 0.6)",
        ]
        assert not Campaign.objects.exists()
        # Optional values without a default stay optional; a null price is 0, as before.
        data = json.loads(SPEC_EXAMPLE)
        data["contenders"][0].update(price_in_per_mtok=None, params={"seed": None})
        campaign, _ = campaign_create(definition=data)
        assert campaign.contenders.get().price_in_per_mtok == 0

    def test_it_rejects_duplicate_keys_and_nan_in_json(self):
        with pytest.raises(DefinitionError, match="duplicate key 'slug'"):
            campaign_definition_load('{"slug": "a", "slug": "b"}')
        with pytest.raises(DefinitionError, match="NaN is not valid JSON"):
            campaign_definition_load('{"slug": "a", "pass_threshold": NaN}')

    def test_it_refuses_duplicate_keys_in_yaml_as_in_json(self):
        with pytest.raises(DefinitionError) as info:
            campaign_definition_load(
                "slug: a\nrubric:\n  - {key: x, min: 1, min: 2}\n", filename="c.yaml"
            )
        assert info.value.errors == ["invalid YAML: line 3, column 22: duplicate key 'min'"]

    def test_yaml_merge_keys_may_still_be_overridden(self):
        data = campaign_definition_load(
            "slug: a\nbase: &b {min: 1, max: 5}\nrubric:\n  - {<<: *b, key: x, min: 2}\n",
            filename="c.yaml",
        )
        assert data["rubric"] == [{"min": 2, "max": 5, "key": "x"}]

    def test_it_points_at_a_yaml_error_in_one_line(self):
        with pytest.raises(DefinitionError) as info:
            campaign_definition_load("slug: a\nname: b: c\n", filename="c.yaml")
        assert info.value.errors == [
            "invalid YAML: line 2, column 8: mapping values are not allowed here"
        ]

    @pytest.mark.timeout(30)
    def test_it_refuses_alias_bombs_and_recursive_aliases_quickly(self):
        # both used to hang create_campaign (a recursive alias looped forever)
        for text, expected in (
            (
                alias_bomb(),
                "invalid YAML: line 7, column 5: with its aliases expanded the document has "
                "over 100,000 values; write it out or split it",
            ),
            (
                "slug: a\nredact: &r [*r]\n",
                "invalid YAML: line 2, column 9: an alias refers to a value that contains it",
            ),
        ):
            with pytest.raises(DefinitionError) as info:
                campaign_definition_load(text, filename="c.yaml")
            assert info.value.errors == [expected]
        # aliases within the limit still work
        data = campaign_definition_load("redact: &w [Acme]\nmore: *w\n", filename="c.yaml")
        assert data["more"] == ["Acme"]


class CommandTests(TestCase):
    def test_create_campaign_prints_a_summary_and_lists_errors(
        self,
    ):
        import tempfile
        from pathlib import Path

        make_testset()
        with tempfile.TemporaryDirectory() as tmp:
            good = Path(tmp) / "c.json"
            good.write_text(SPEC_EXAMPLE)
            out, err = StringIO(), StringIO()
            call_command("create_campaign", str(good), stdout=out, stderr=err)
            assert (
                "Created campaign support-q4 on support-v3 v1: 3 tasks x 1 contenders x 3 samples"
                in out.getvalue()
            )
            assert "at least 2 contenders" in err.getvalue()
            assert (
                "warning: weights.categories: long_context_summary is not a category of "
                "support-v3 v1, so its weight changes nothing; its categories are billing\n"
                in err.getvalue()
            )
            bad = Path(tmp) / "bad.yaml"
            bad.write_text("slug: support-q4\ntestset: support-v3\ncontenders: []\n")
            with pytest.raises(CommandError) as info:
                call_command("create_campaign", str(bad))
            assert "already exists" in str(info.value) and "contenders: required" in str(info.value)

    @pytest.mark.timeout(30)
    def test_create_campaign_refuses_an_alias_bomb_with_one_line(self):
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory() as tmp:
            for name, text in (("bomb.yaml", alias_bomb()), ("loop.yml", "redact: &r [*r]\n")):
                path = Path(tmp) / name
                path.write_text(text)
                with pytest.raises(CommandError) as info:
                    call_command("create_campaign", str(path))
                assert "invalid YAML: line" in str(info.value)
        assert not Campaign.objects.exists()

    def test_file_commands_refuse_a_directory_or_a_missing_file_with_one_line(self):
        import tempfile

        make_testset()
        campaign_create(definition=imported_pairwise("files", ("a", "b")))
        with tempfile.TemporaryDirectory() as tmp:
            for path, reason in ((tmp, "Is a directory"), (f"{tmp}/no", "No such file")):
                commands = [
                    ("create_campaign", path),
                    ("import_outputs", path, "--campaign", "files", "--contender", "a"),
                ]
                for args in commands:
                    with pytest.raises(CommandError) as info:
                        call_command(*args)
                    assert str(info.value).startswith(f"cannot read {path}: {reason}")
                    assert "\n" not in str(info.value) and "Errno" not in str(info.value)

    def test_it_warns_only_about_weighted_categories_the_testset_lacks(self):
        ts = make_testset()
        TaskFactory(testset=ts, position=9, external_id="T-9", category="shipping")
        definition = imported_pairwise("weights", ("a", "b"))
        definition["weights"] = {"categories": {"billing": 2, "shiping": 1, "returns": 1}}
        _, warnings = campaign_create(definition=definition)
        assert warnings == [
            "weights.categories: shiping, returns are not categories of support-v3 v1, so their "
            "weights change nothing; its categories are billing, shipping"
        ]
        definition = imported_pairwise("weights-ok", ("a", "b"))
        definition["weights"] = {"categories": {"billing": 2, "shipping": 1}}
        assert campaign_create(definition=definition)[1] == []

    def test_generate_refuses_a_missing_key_variable_before_queueing(self):
        make_testset()
        campaign, _ = campaign_create(definition=json.loads(SPEC_EXAMPLE))
        with pytest.raises(CommandError, match="X_API_KEY is not set"):
            call_command("generate", "support-q4", stdout=StringIO())
        assert not Generation.objects.filter(campaign=campaign, queued_at__isnull=False).exists()
        assert Campaign.objects.get(pk=campaign.pk).status == "draft"

    def test_import_outputs_is_all_or_nothing_and_makes_items_ready(self):
        import tempfile
        from pathlib import Path

        make_testset(n=2)
        definition = {
            "slug": "imp",
            "testset": "support-v3",
            "mode": "both",
            "rubric": [{"key": "accuracy"}],
            "contenders": [
                {"name": "a", "provider": "imported"},
                {"name": "b", "provider": "imported"},
            ],
        }
        campaign, _ = campaign_create(definition=definition)
        with tempfile.TemporaryDirectory() as tmp:
            bad = Path(tmp) / "bad.jsonl"
            bad.write_text(
                '{"task_id": "T-1", "output": "fine"}\n{"task_id": "T-9", "output": "x"}\n'
                '{"task_id": "T-2", "output": 3}\n'
                '{"task_id": "T-1", "sample": 1, "output": "x", "latency_ms": 1000000000000000000}\n'
                '{"task_id": "T-2", "sample": 1, "output": "x", "cost": 1e300}\n'
            )
            with pytest.raises(CommandError) as info:
                call_command("import_outputs", str(bad), "--campaign", "imp", "--contender", "a")
            assert "line 2, field task_id: no task 'T-9'" in str(info.value)
            assert "line 3, field output" in str(info.value)
            # Values the columns cannot hold: a 500 on PostgreSQL before.
            assert "line 4, field latency_ms: must be an integer from 0 to 2147483647" in str(
                info.value
            )
            assert "line 5, field cost: must be a number from 0 to 999999" in str(info.value)
            assert not Generation.objects.filter(campaign=campaign, status="done").exists()
            for name in ("a", "b"):
                good = Path(tmp) / f"{name}.jsonl"
                good.write_text(
                    "".join(
                        json.dumps(
                            {"task_id": f"T-{i}", "output": f"{name} says {i}", "output_tokens": 3}
                        )
                        + "\n"
                        for i in (1, 2)
                    )
                )
                out = StringIO()
                call_command(
                    "import_outputs",
                    str(good),
                    "--campaign",
                    "imp",
                    "--contender",
                    name,
                    stdout=out,
                )
                if name == "a":
                    assert "Imported 2 outputs" in out.getvalue()
                    # Only one side exists: nothing is offered to reviewers yet.
                    assert ReviewItem.objects.filter(campaign=campaign).count() == 2
                    assert not ReviewItem.objects.filter(campaign=campaign, ready=True).exists()
            assert (
                ReviewItem.objects.filter(campaign=campaign, ready=True, state="open").count() == 2
            )
            # Re-importing the same file changes nothing.
            out = StringIO()
            call_command(
                "import_outputs", str(good), "--campaign", "imp", "--contender", "b", stdout=out
            )
            assert "Imported 0 outputs for b (2 unchanged" in out.getvalue()
        assert Campaign.objects.get(pk=campaign.pk).status == "reviewing"

    def test_import_outputs_finds_a_task_whatever_invisible_characters_its_id_carries(self):
        # Intake stores ids NFC-normalized without invisible characters; an outputs file written
        # by another tool (a BOM, a zero-width space, a decomposed accent) names the same task.
        from tasks.generation.outputs_import import outputs_import

        make_testset(n=2)
        campaign, _ = campaign_create(definition=imported_pairwise("clean", ("a", "b")))
        lines = [{"task_id": "\ufeffT-1", "output": "x"}, {"task_id": "T-2\u200b", "output": "y"}]
        raw = "".join(json.dumps(line) + "\n" for line in lines).encode()
        outputs_import(campaign=campaign, contender_name="a", raw=raw)
        done = Generation.objects.filter(campaign=campaign, contender__name="a", status="done")
        assert sorted(done.values_list("task__external_id", "output")) == [
            ("T-1", "x"),
            ("T-2", "y"),
        ]

    def test_import_outputs_lists_field_and_campaign_problems_in_one_run(self):
        from tasks.generation.outputs_import import outputs_import
        from tasks.generation.providers.imported import MAX_ERRORS, ImportErrors

        make_testset(n=2)
        campaign, _ = campaign_create(definition=imported_pairwise("every", ("a", "b")))

        def problems(*lines):
            raw = "".join(json.dumps(line) + "\n" for line in lines).encode()
            with pytest.raises(ImportErrors) as info:
                outputs_import(campaign=campaign, contender_name="a", raw=raw)
            return info.value.errors

        assert problems(
            {"task_id": "T-9", "output": 3},
            {"sample": 5, "output": "x"},
            {"task_id": 7, "output": "x"},
            {"task_id": "T-1", "sample": "0", "output": "x"},
            {"task_id": "T-2", "output": "x", "contender": "b", "cost": "lots"},
            {"task_id": "T-2", "output": "y", "latency_ms": -1},
        ) == [
            "line 1, field output: required, a string",
            "line 1, field task_id: no task 'T-9' in support-v3 v1",
            # No "unknown task" when there is no task_id to look up, no sample range when the
            # sample is not a number.
            "line 2, field task_id: required, a non-empty string",
            "line 2, field sample: the campaign has 1 sample per task",
            "line 3, field task_id: required, a non-empty string",
            "line 4, field sample: must be an integer >= 0",
            "line 5, field cost: must be a number from 0 to 999999",
            "line 5, field contender: 'b' is not 'a'",
            "line 6, field latency_ms: must be an integer from 0 to 2147483647",
            "line 6, field task_id: duplicate of line 5 (T-2, sample 0)",
        ]
        assert not Generation.objects.filter(campaign=campaign, status="done").exists()

        # A changed output is named beside the line's field error, not after a second upload.
        outputs_import(
            campaign=campaign, contender_name="a", raw=b'{"task_id": "T-1", "output": "x"}'
        )
        assert problems({"task_id": "T-1", "output": "changed", "ttft_ms": 1.5}) == [
            "line 1, field ttft_ms: must be an integer from 0 to 2147483647",
            "line 1, field output: T-1 sample 0 already has a different output",
        ]

        # The cap counts every kind of problem, in line order, then says how many more.
        capped = problems(*({"task_id": f"X-{i}", "output": 0} for i in range(40)))
        assert len(capped) == MAX_ERRORS + 1
        assert capped[:2] == [
            "line 1, field output: required, a string",
            "line 1, field task_id: no task 'X-0' in support-v3 v1",
        ]
        assert capped[-2:] == [
            "line 25, field task_id: no task 'X-24' in support-v3 v1",
            f"... and {80 - MAX_ERRORS} more problems",
        ]


class ApiTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.tokens = {name: ApiToken.issue(user) for name, user in cls.users.items()}

    def auth(self, name):
        return {"Authorization": f"Bearer {self.tokens[name]}"}

    def test_admin_creates_a_campaign_and_lead_reads_it(self):
        make_testset()
        response = self.client.post(
            "/api/v1/campaigns",
            SPEC_EXAMPLE,
            content_type="application/json",
            headers=self.auth("admin"),
        )
        assert response.status_code == 201, response.content
        assert response.json()["slug"] == "support-q4" and response.json()["warnings"]
        listing = self.client.get("/api/v1/campaigns", headers=self.auth("lead")).json()
        assert [c["slug"] for c in listing["campaigns"]] == ["support-q4"]
        detail = self.client.get("/api/v1/campaigns/support-q4", headers=self.auth("lead")).json()
        assert (
            detail["progress"]["totals"]["total"] == 9
            and detail["progress"]["totals"]["waiting"] == 9
        )
        # each contender as a definition gives it: reusable as is in another definition
        contender = detail["contenders"][0]
        assert contender["price_out_per_mtok"] == 0.6 and contender["api_key_env"] == "X_API_KEY"
        again = {**json.loads(SPEC_EXAMPLE), "slug": "support-q5", "contenders": [contender]}
        reuse = self.client.post(
            "/api/v1/campaigns", json.dumps(again), "application/json", headers=self.auth("admin")
        )
        assert reuse.status_code == 201, reuse.content
        # An unknown slug is named as on the other campaign endpoints, not a bare "not found".
        missing = self.client.get("/api/v1/campaigns/nope", headers=self.auth("lead"))
        assert missing.status_code == 404 and missing.json() == {"error": "no such campaign"}
        for action in ("generate", "cancel", "retry-failed", "outputs?contender=x"):
            missing = self.client.post(
                f"/api/v1/campaigns/nope/{action}", headers=self.auth("admin")
            )
            assert missing.status_code == 404, action
            assert missing.json() == {"error": "no such campaign"}, action

    def test_it_parses_a_body_as_strictly_as_a_file(self):
        make_testset()
        for body, message in (
            (SPEC_EXAMPLE.replace('"overlap": 2', '"overlap": NaN'), "NaN is not valid JSON"),
            (SPEC_EXAMPLE.replace('"overlap": 2', '"overlap": 2, "overlap": 3'), "overlap"),
            (b'{"slug": "\xff"}'.decode("unicode_escape").encode("latin-1"), "UTF-8"),
        ):
            response = self.client.post(
                "/api/v1/campaigns",
                body,
                content_type="application/json",
                headers=self.auth("admin"),
            )
            assert response.status_code == 400, body
            assert message in response.json()["error"], response.json()
        assert not Campaign.objects.exists()

    def test_it_lists_definition_errors(self):
        response = self.client.post(
            "/api/v1/campaigns",
            {"slug": "x"},
            content_type="application/json",
            headers=self.auth("admin"),
        )
        assert response.status_code == 400
        assert any(e.startswith("testset:") for e in response.json()["errors"])

    def test_it_denies_other_roles(self):
        make_testset()
        for name in ("lead", "reviewer_a", "arbiter"):
            response = self.client.post(
                "/api/v1/campaigns",
                SPEC_EXAMPLE,
                content_type="application/json",
                headers=self.auth(name),
            )
            assert response.status_code == 403, name
        assert (
            self.client.get("/api/v1/campaigns", headers=self.auth("reviewer_a")).status_code == 403
        )
        assert self.client.get("/api/v1/campaigns").status_code == 401
        campaign_create(definition=json.loads(SPEC_EXAMPLE))
        for path in ("generate", "cancel", "retry-failed"):
            assert (
                self.client.post(
                    f"/api/v1/campaigns/support-q4/{path}", headers=self.auth("lead")
                ).status_code
                == 403
            )

    def test_an_outputs_file_reports_every_problem_as_line_and_field(self):
        from tasks.generation.providers.imported import parse_outputs_collect

        raw = b'{"task_id": "T-1", "output": "ok"}\nnot json\n[1]\n{"task_id": "T-2", "output": NaN}\n'
        assert parse_outputs_collect(raw)[1] == [
            "line 2, field (json): not valid JSON: Expecting value at column 1",
            "line 3, field (json): each line must be a JSON object",
            "line 4, field (json): NaN is not valid JSON (NaN and Infinity are not allowed)",
        ]
        latin1 = '{"task_id": "T-1", "output": "ok"}\n{"task_id": "T-2", "output": "caf\xe9"}\n'
        assert parse_outputs_collect(latin1.encode("latin-1"))[1] == [
            "line 2, field (encoding): invalid UTF-8 (byte 0xe9 at byte offset 68)"
        ]
        assert parse_outputs_collect(b"\n")[1] == [
            "line 1, field (file): the file holds no outputs"
        ]

    def test_admin_imports_outputs_over_the_api(self):
        make_testset(n=1)
        definition = imported_pairwise("api-imp", ("a", "b"))
        campaign_create(definition=definition)
        url = "/api/v1/campaigns/api-imp/outputs?contender=a"
        body = '{"task_id": "T-1", "output": "hello"}\n'
        response = self.client.post(
            url, body, content_type="application/x-ndjson", headers=self.auth("admin")
        )
        assert response.status_code == 200 and response.json()["stored"] == 1
        # An output that names itself is flagged for admins when it is stored, with the words
        # a reviewer's page masks (built-in vendor names; this campaign has no redact list).
        named = '{"task_id": "T-1", "output": "As an AI developed by OpenAI, hello."}\n'
        self.client.post(
            url.replace("=a", "=b"), named, "application/x-ndjson", headers=self.auth("admin")
        )
        flags = dict(
            Generation.objects.filter(campaign__slug="api-imp").values_list(
                "contender__name", "identity_leak"
            )
        )
        assert flags == {"a": False, "b": True}
        bad = self.client.post(
            url.replace("=a", "=b"),
            '{"task_id": "T-7", "output": "x"}',
            content_type="application/x-ndjson",
            headers=self.auth("admin"),
        )
        assert bad.status_code == 400 and "no task 'T-7'" in bad.json()["errors"][0]
        assert (
            self.client.post(
                url, body, content_type="application/x-ndjson", headers=self.auth("lead")
            ).status_code
            == 403
        )

    @pytest.mark.timeout(60)
    def test_admin_imports_outputs_as_a_multipart_file_too(self):
        # curl -F file=@vendor.jsonl, as the other imports take: the multipart body was read
        # as the JSONL, and every boundary line listed as "not valid JSON".
        from django.core.files.uploadedfile import SimpleUploadedFile
        from django.test import override_settings

        make_testset(n=1)
        campaign_create(definition=imported_pairwise("api-form", ("a", "b")))
        url = "/api/v1/campaigns/api-form/outputs?contender=a"
        upload = SimpleUploadedFile("vendor.jsonl", b'{"task_id": "T-1", "output": "hello"}\n')
        response = self.client.post(url, {"file": upload}, headers=self.auth("admin"))
        assert response.status_code == 200, response.content
        assert response.json()["stored"] == 1
        missing = self.client.post(url, {"other": "x"}, headers=self.auth("admin"))
        assert missing.status_code == 400
        assert missing.json() == {
            "error": "send the outputs as the multipart field 'file', or the JSONL as the body"
        }
        # No bigger than a raw body may be (multipart file parts do not count against it).
        with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000):
            big = SimpleUploadedFile("big.jsonl", b" " * 1001)
            too_big = self.client.post(url, {"file": big}, headers=self.auth("admin"))
        assert too_big.status_code == 413 and "manage.py import_outputs" in too_big.json()["error"]
        content = self.client.get("/api/v1/schema").json()["paths"][
            "/api/v1/campaigns/{slug}/outputs"
        ]["post"]["requestBody"]["content"]
        assert set(content) == {"application/x-ndjson", "multipart/form-data"}

    def test_an_import_stops_a_pattern_that_backtracks_without_end(self):
        # (a|a)+$ on a run of a's tries every split of the run: with Python's re this request
        # would run for ages; the check stops at its time limit and says so on the campaign page.
        make_testset(n=1).tasks.update(checks={"regex": "(a|a)+$"})
        campaign_create(definition=imported_pairwise("slow-check", ("a", "b")))
        body = json.dumps({"task_id": "T-1", "output": "a" * 40 + "b"})
        response = self.client.post(
            "/api/v1/campaigns/slow-check/outputs?contender=a",
            body,
            content_type="application/x-ndjson",
            headers=self.auth("admin"),
        )
        assert response.status_code == 200 and response.json()["stored"] == 1
        gen = Generation.objects.get(campaign__slug="slow-check", contender__name="a")
        assert gen.checks_passed is False
        detail = gen.check_results["regex"]["detail"]
        assert detail == "pattern took too long (stopped after 1 s on this output): (a|a)+$"
        self.client.force_login(self.users["lead"])
        assert detail in self.client.get("/campaigns/slow-check/").content.decode()

    def test_an_import_records_a_check_that_cannot_run_instead_of_a_500(self):
        # a schema stored before intake checked it against its metaschema
        make_testset(n=1).tasks.update(checks={"json_schema": {"properties": [1]}})
        campaign_create(definition=imported_pairwise("bad-schema", ("a", "b")))
        response = self.client.post(
            "/api/v1/campaigns/bad-schema/outputs?contender=a",
            json.dumps({"task_id": "T-1", "output": '{"x": 1}'}),
            content_type="application/x-ndjson",
            headers=self.auth("admin"),
        )
        assert response.status_code == 200 and response.json()["stored"] == 1
        gen = Generation.objects.get(campaign__slug="bad-schema", contender__name="a")
        assert gen.checks_passed is False
        assert gen.check_results["json_schema"]["detail"] == (
            "check could not run: not a valid JSON Schema: at $.properties: "
            "[1] is not of type 'object'"
        )

    def test_generate_reports_a_missing_key_variable(self):
        make_testset()
        campaign_create(definition=json.loads(SPEC_EXAMPLE))
        response = self.client.post(
            "/api/v1/campaigns/support-q4/generate", headers=self.auth("admin")
        )
        assert response.status_code == 400 and "X_API_KEY is not set" in response.json()["error"]
        assert (
            "Nothing was queued: set the variable for the web server and the Celery workers"
            in (response.json()["error"])
        )


class PageTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.ts = make_testset(n=2)
        definition = {
            "slug": "pages",
            "name": "Pages campaign",
            "testset": "support-v3",
            "mode": "both",
            "rubric": [{"key": "accuracy"}],
            "contenders": [
                {"name": "alpha-model", "provider": "openai", "model": "alpha"},
                {"name": "beta-model", "provider": "imported"},
            ],
        }
        cls.campaign, _ = campaign_create(definition=definition)
        gen = Generation.objects.filter(
            campaign=cls.campaign, contender__name="alpha-model"
        ).first()
        Generation.objects.filter(pk=gen.pk).update(
            status="failed", error="HTTP 400: secret provider detail"
        )
        other = Generation.objects.filter(
            campaign=cls.campaign, contender__name="beta-model"
        ).first()
        Generation.objects.filter(pk=other.pk).update(
            status="done",
            output="x",
            checks_passed=False,
            check_results={"max_chars": {"passed": False, "detail": "900 of 500 characters"}},
        )

    def login(self, name):
        self.client.force_login(self.users[name])

    def test_every_page_denies_the_wrong_roles(self):
        urls = [
            "/contenders/",
            f"/contenders/{Contender.objects.first().pk}/edit/",
            "/campaigns/new/",
        ]
        for name in ("lead", "reviewer_a", "arbiter", "outsider"):
            self.login(name)
            for url in urls:
                assert self.client.get(url).status_code == 403, (name, url)
            for action in ("generate", "cancel", "retry-failed"):
                assert self.client.post(f"/campaigns/pages/{action}").status_code == 403
        for name in ("reviewer_a", "arbiter", "outsider"):
            self.login(name)
            assert self.client.get("/campaigns/").status_code == 403
            assert self.client.get("/campaigns/pages/").status_code == 403
        self.client.logout()
        assert self.client.get("/campaigns/").status_code == 302

    def test_admin_sees_provider_errors_and_lead_sees_only_check_results(self):
        self.login("admin")
        page = self.client.get("/campaigns/pages/").content.decode()
        assert "secret provider detail" in page and "900 of 500 characters" in page
        assert "Retry failed" in page
        # the item behind the failed generation is not just "waiting": nothing will finish it
        assert "(1 on a generation that failed: <em>Retry failed</em> tries it again)" in page
        # nor one behind a cancelled generation (the badge may say Reviewing again by then)
        Generation.objects.filter(campaign=self.campaign, status="failed").update(
            status="cancelled"
        )
        page = self.client.get("/campaigns/pages/").content.decode()
        assert "waiting for outputs (1 on a cancelled generation: <em>Generate</em>" in page
        self.login("lead")
        page = self.client.get("/campaigns/pages/").content.decode()
        assert "secret provider detail" not in page and "Retry failed" not in page
        assert "900 of 500 characters" in page and "alpha-model" in page
        assert self.client.get("/campaigns/").status_code == 200
        assert self.client.get("/campaigns/nope/").status_code == 404

    def test_admins_and_leads_read_the_outputs_filtered(self):
        Generation.objects.filter(campaign=self.campaign, status="done").update(
            output="**Bold** <script>alert(1)</script>"
        )
        self.login("admin")
        page = self.client.get("/campaigns/pages/generations/").content.decode()
        assert "<strong>Bold</strong>" in page and "<script>alert" not in page
        assert "1 output." in page
        checks = self.client.get("/campaigns/pages/generations/?only=checks").content.decode()
        assert "check failed" in checks and "max_chars" in checks
        failed = self.client.get("/campaigns/pages/generations/?only=failed").content.decode()
        assert "secret provider detail" in failed  # provider errors: admins only
        self.login("lead")
        failed = self.client.get("/campaigns/pages/generations/?only=failed").content.decode()
        assert "secret provider detail" not in failed and "shown to admins" in failed
        other = self.client.get("/campaigns/pages/generations/?contender=alpha-model")
        assert "No output matches." in other.content.decode()
        self.login("reviewer_a")
        assert self.client.get("/campaigns/pages/generations/").status_code == 403

    def test_a_capped_list_of_check_failures_says_so_and_links_them_all(self):
        from functools import partial
        from unittest import mock

        from tasks.campaigns import views as campaign_views
        from tasks.campaigns.selectors import campaign_check_failures

        self.login("admin")
        page = self.client.get("/campaigns/pages/").content.decode()
        assert "900 of 500 characters" in page and "The first" not in page
        Generation.objects.filter(campaign=self.campaign, status="pending").update(
            status="done", checks_passed=False, check_results={"regex": {"passed": False}}
        )
        capped = partial(campaign_check_failures, limit=1)
        with mock.patch.object(campaign_views, "campaign_check_failures", capped):
            page = self.client.get("/campaigns/pages/").content.decode()
        total = Generation.objects.filter(campaign=self.campaign, checks_passed=False).count()
        assert total > 1
        assert f"The first 1 of {total}: " in page
        assert '<tr><td class="task-id">' in page  # "T-10" stays on one line on a phone
        assert 'href="/campaigns/pages/generations/?only=checks">read them all</a>' in page

    def test_progress_partial_polls_only_while_work_is_queued(self):
        self.login("admin")
        headers = {"HX-Request": "true", "HX-Target": "generation-progress"}
        partial = self.client.get("/campaigns/pages/", headers=headers).content.decode()
        assert "<html" not in partial and 'id="generation-progress"' in partial
        assert "hx-trigger" not in partial
        Generation.objects.filter(campaign=self.campaign, status="pending").update(
            queued_at="2026-01-01T00:00Z"
        )
        partial = self.client.get("/campaigns/pages/", headers=headers).content.decode()
        assert 'hx-trigger="load delay:2s"' in partial

    def test_it_shows_failed_generations_apart_from_done_ones_and_says_why(self):
        self.login("admin")
        page = self.client.get("/campaigns/pages/").content.decode()
        # alpha-model: 0 done, 1 failed of 2; the bar counts only what is done
        assert '<progress max="2" value="0"' in page
        failed_url = "/campaigns/pages/generations/?only=failed"
        assert f'href="{failed_url}&amp;contender=alpha-model">1 failed</a>' in page
        assert f'href="{failed_url}">those whose generation failed</a>' in page
        assert (
            "Review items that include a failed generation cannot open for review until "
            "<em>Retry failed</em> succeeds for it." in page
        )
        assert (
            "alpha-model: 1 failed; most often (1 of 1): "
            "<code>HTTP 400: secret provider detail</code>" in page
        )
        self.login("lead")
        page = self.client.get("/campaigns/pages/").content.decode()
        assert f'href="{failed_url}&amp;contender=alpha-model">1 failed</a>' in page
        assert "cannot open for review until an admin retries it and it succeeds." in page
        assert "most often" not in page and "secret provider detail" not in page

    def test_it_summarises_each_contenders_commonest_provider_error(self):
        rows = Generation.objects.filter(campaign=self.campaign, contender__name="beta-model")
        rows.update(status="failed", error="HTTP 401: bad key")
        rows.filter(task__external_id="T-2").update(error="timeout")
        summary = campaign_failure_summary(campaign=self.campaign)
        assert [(f["contender"], f["failed"], f["error_count"]) for f in summary] == [
            ("alpha-model", 1, 1),
            ("beta-model", 2, 1),
        ]
        assert summary[0]["error"] == "HTTP 400: secret provider detail"

    def test_it_measures_rate_and_eta_on_outputs_done_not_on_failures(self):
        now = timezone.now()
        # Started before the rate window: the rate is over the whole window (60 s).
        Generation.objects.filter(campaign=self.campaign, status__in=["done", "failed"]).update(
            started_at=now - timedelta(minutes=2), finished_at=now
        )
        Generation.objects.filter(campaign=self.campaign, status="pending").update(
            queued_at=timezone.now()
        )
        progress = campaign_progress(campaign=self.campaign)
        alpha, beta = progress["contenders"]
        assert (alpha["name"], alpha["rate_per_min"], alpha["eta_seconds"]) == (
            "alpha-model",
            0.0,
            None,
        )
        assert (beta["rate_per_min"], beta["eta_seconds"]) == (1.0, 60)
        assert progress["totals"]["rate_per_min"] == 1.0
        self.login("admin")
        assert ">Done /min</th>" in self.client.get("/campaigns/pages/").content.decode()

    def test_it_measures_the_rate_over_the_seconds_work_has_run_not_the_whole_window(self):
        # 12 outputs in the 6 s since the first one started: 120 a minute, not 12.
        now = timezone.now()
        beta = Generation.objects.filter(campaign=self.campaign, contender__name="beta-model")
        beta.filter(status="done").update(started_at=now - timedelta(seconds=5), finished_at=now)
        beta.filter(status="pending").update(queued_at=now)
        first = beta.first()
        Generation.objects.bulk_create(
            Generation(
                campaign=self.campaign,
                task=first.task,
                contender=first.contender,
                sample_index=10 + i,
                status="done",
                started_at=now - timedelta(seconds=6),
                finished_at=now - timedelta(seconds=6 - i * 0.5),
            )
            for i in range(11)
        )
        progress = campaign_progress(campaign=self.campaign)
        rate = progress["contenders"][1]["rate_per_min"]
        assert 110 < rate <= 120 and 110 < progress["totals"]["rate_per_min"] <= 120
        assert progress["contenders"][1]["eta_seconds"] is not None

    def test_it_takes_a_rate_over_at_least_five_seconds(self):
        now = timezone.now()
        Generation.objects.filter(campaign=self.campaign, status="done").update(
            started_at=now - timedelta(seconds=1), finished_at=now
        )
        assert campaign_progress(campaign=self.campaign)["totals"]["rate_per_min"] == 12.0

    def test_the_poll_refreshes_the_header_status_badge_and_item_counts(self):
        self.login("admin")
        headers = {"HX-Request": "true", "HX-Target": "generation-progress"}
        page = self.client.get("/campaigns/pages/").content.decode()
        assert page.count('id="campaign-status"') == 1 and "hx-swap-oob" not in page
        # Left generating with nothing finished lately (failures wait for a retry): no poll.
        Campaign.objects.filter(pk=self.campaign.pk).update(status="generating")
        Generation.objects.filter(campaign=self.campaign).update(
            finished_at=timezone.now() - timedelta(minutes=5)
        )
        partial = self.client.get("/campaigns/pages/", headers=headers).content.decode()
        assert "hx-trigger" not in partial
        # The last row was done just now but the worker has not flipped the status yet: poll on.
        Generation.objects.filter(campaign=self.campaign, status="done").update(
            finished_at=timezone.now()
        )
        partial = self.client.get("/campaigns/pages/", headers=headers).content.decode()
        assert "<html" not in partial and 'hx-trigger="load delay:2s"' in partial
        assert (
            '<span id="campaign-status" class="badge status-generating" hx-swap-oob="true">'
            "Generating</span>" in partial
        )
        assert '<div id="review-items" hx-swap-oob="true"><dt>Review items</dt>' in partial
        # ...and the automatic checks, which fail while outputs come in.
        checks = partial.split('<section class="card" id="automatic-checks" hx-swap-oob="true">')
        assert len(checks) == 2 and "900 of 500 characters" in checks[1]
        Campaign.objects.filter(pk=self.campaign.pk).update(status="reviewing")
        partial = self.client.get("/campaigns/pages/", headers=headers).content.decode()
        assert "hx-trigger" not in partial
        assert 'class="badge status-reviewing" hx-swap-oob="true">Reviewing</span>' in partial

    def test_admin_uploads_outputs_with_inline_errors(self):
        from django.core.files.uploadedfile import SimpleUploadedFile

        self.login("admin")
        headers = {"HX-Request": "true"}
        bad = SimpleUploadedFile(
            "b.jsonl", b'{"task_id": "T-1", "output": "ok"}\n{"task_id": "T-1"}\n'
        )
        response = self.client.post(
            "/campaigns/pages/outputs", {"contender": "beta-model", "file": bad}, headers=headers
        )
        body = response.content.decode()
        assert response.status_code == 200 and "<html" not in body
        assert "line 2, field output: required, a string" in body
        good = SimpleUploadedFile("g.jsonl", b'{"task_id": "T-2", "output": "fine"}\n')
        response = self.client.post(
            "/campaigns/pages/outputs", {"contender": "beta-model", "file": good}, headers=headers
        )
        assert response.headers["HX-Redirect"] == "/campaigns/pages/"
        row = Generation.objects.get(
            campaign=self.campaign, contender__name="beta-model", task__external_id="T-2"
        )
        assert row.status == "done" and row.output == "fine"
        self.login("lead")
        assert (
            self.client.post("/campaigns/pages/outputs", {"contender": "beta-model"}).status_code
            == 403
        )

    def test_generate_and_cancel_say_why_nothing_happened(self):
        self.login("admin")
        campaign_create(definition=imported_pairwise("all-imported", ("imp-a", "imp-b")))
        self.client.post("/campaigns/all-imported/generate")
        page = self.client.get("/campaigns/all-imported/").content.decode()
        assert "every contender of this campaign is imported" in page
        self.client.post("/campaigns/all-imported/cancel")
        page = self.client.get("/campaigns/all-imported/").content.decode()
        assert "Nothing was queued or running" in page
        self.client.post("/campaigns/all-imported/retry-failed")
        page = self.client.get("/campaigns/all-imported/").content.decode()
        assert "No generation has failed: nothing to retry." in page

    def test_a_contender_with_outputs_is_shown_read_only(self):
        self.login("admin")
        beta = Contender.objects.get(name="beta-model")  # one of its generations is done
        listing = self.client.get("/contenders/").content.decode()
        assert f'href="/contenders/{beta.pk}/edit/">View</a>' in listing
        page = self.client.get(f"/contenders/{beta.pk}/edit/").content.decode()
        assert "configuration is fixed" in page and ">Save</button>" not in page
        assert 'name="model"' in page and page.count(" disabled") >= 5
        before = Contender.objects.filter(pk=beta.pk).values().get()
        response = self.client.post(
            f"/contenders/{beta.pk}/edit/",
            {"name": "beta-model", "provider": "openai", "model": "changed"},
            headers={"HX-Request": "true"},
        )
        assert response.status_code == 200 and "nothing was saved" in response.content.decode()
        assert Contender.objects.filter(pk=beta.pk).values().get() == before

    def test_contender_form_lists_every_problem_in_one_submit(self):
        self.login("admin")
        bad = {
            "name": "",
            "provider": "openai",
            "model": "m",
            "base_url": "not a url",
            "params": "{bad",
            "price_in_per_mtok": "-1",
            "price_out_per_mtok": "0",
            "max_concurrency": "0",
        }
        response = self.client.post("/contenders/", bad, headers={"HX-Request": "true"})
        errors = response.context["form"].errors
        assert set(errors) == {
            "name",
            "base_url",
            "params",
            "price_in_per_mtok",
            "max_concurrency",
        }
        assert errors["base_url"] == ["Base URL must be an http(s) URL"]
        assert not Contender.objects.filter(model="m").exists()

    def test_contender_and_campaign_forms_word_every_error_alike(self):
        # Django's stock messages ("This field is required.") read like the definition's own,
        # restated in the form's labels, so one page never mixes "This field is required."
        # with "required".
        self.login("admin")
        headers = {"HX-Request": "true"}
        response = self.client.post(
            "/contenders/",
            {"provider": "openai", "price_in_per_mtok": "x", "max_concurrency": "1001"},
            headers=headers,
        )
        assert response.context["form"].errors == {
            "name": ["Name is required"],
            "model": ["Model is required"],
            "price_in_per_mtok": ["Price in / M tokens must be a number"],
            "price_out_per_mtok": ["Price out / M tokens is required"],
            "max_concurrency": ["Max concurrency must be at most 1000"],
        }
        body = response.content.decode()
        assert "Name is required" in body and "This field is required" not in body
        taken = Contender.objects.first().name
        response = self.client.post(
            "/contenders/",
            {
                "name": taken,
                "provider": "openai",
                "model": "m",
                "params": "[1]",
                "price_in_per_mtok": "0.1234567",
                "price_out_per_mtok": "0",
                "max_concurrency": "4",
            },
            headers=headers,
        )
        assert response.context["form"].errors == {
            "name": [f"Name: a contender {taken!r} already exists"],
            "params": ["Params must be an object"],
            "price_in_per_mtok": ["Price in / M tokens must have at most 6 decimal places"],
        }
        response = self.client.post("/campaigns/new/", {"overlap": "2.5"}, headers=headers)
        errors = response.context["form"].errors
        assert errors["slug"] == ["Slug is required"]
        assert errors["contenders"] == ["Contenders: choose at least one"]
        assert errors["overlap"] == ["Overlap (reviewers per item) must be a whole number"]
        assert "This field is required" not in response.content.decode()

    def test_contender_form_shows_errors_inline_and_creates(self):
        self.login("admin")
        headers = {"HX-Request": "true"}
        response = self.client.post(
            "/contenders/",
            {
                "name": "gamma",
                "provider": "openai",
                "model": "",
                "api_key_env": "sk-abc!",
                "price_in_per_mtok": "0",
                "price_out_per_mtok": "0",
                "max_concurrency": "4",
                "params": "{bad",
            },
            headers=headers,
        )
        body = response.content.decode()
        assert response.status_code == 200 and "<html" not in body
        assert "neither valid JSON nor valid YAML (line 1, column" in body
        assert "&lt;unicode string&gt;" not in body and "^" not in body  # no parser drawing
        response = self.client.post(
            "/contenders/",
            {
                "name": "gamma",
                "provider": "openai",
                "model": "",
                "api_key_env": "sk-abc!",
                "price_in_per_mtok": "0",
                "price_out_per_mtok": "0",
                "max_concurrency": "4",
            },
            headers=headers,
        )
        body = response.content.decode()
        assert "Model is required" in body
        assert "the NAME of an environment variable" in body
        response = self.client.post(
            "/contenders/",
            {
                "name": "gamma",
                "provider": "openai",
                "model": "g-1",
                "api_key_env": "GAMMA_KEY",
                "price_in_per_mtok": "0.5",
                "price_out_per_mtok": "1",
                "max_concurrency": "8",
                "params": '{"temperature": 0.3}',
            },
            headers=headers,
        )
        assert response.status_code == 200 and response.headers["HX-Redirect"] == "/contenders/"
        gamma = Contender.objects.get(name="gamma")
        assert gamma.params == {"temperature": 0.3} and gamma.max_concurrency == 8
        listing = self.client.get("/contenders/").content.decode()
        assert "0.5 / 1</td>" in listing  # prices as written, not 0.5000 / 1.0000

    def test_campaign_form_explains_every_setting_that_is_not_self_evident(self):
        self.login("admin")
        form = self.client.get("/campaigns/new/").context["form"]
        for name in ("mode", "samples_per_task", "reviewed_samples", "lease_minutes"):
            assert form[name].help_text, name
        assert "pass@" in form["pass_threshold"].help_text

    def test_campaign_form_shows_errors_inline_and_creates(self):
        self.login("admin")
        contenders = list(Contender.objects.values_list("pk", flat=True))
        data = {
            "slug": "form-made",
            "testset": self.ts.pk,
            "contenders": contenders,
            "mode": "rubric",
            "samples_per_task": 1,
            "reviewed_samples": 2,
            "overlap": 2,
            "rubric": "",
            "lease_minutes": 20,
            "pass_threshold": 0.6,
        }
        response = self.client.post("/campaigns/new/", data, headers={"HX-Request": "true"})
        body = response.content.decode()
        assert (
            response.status_code == 200
            and "Reviewed samples cannot exceed Samples per task" in body
        )
        assert "mode &#x27;rubric&#x27; needs at least one dimension" in body
        data.update(
            reviewed_samples=1,
            rubric="- key: accuracy\n  anchors: {1: wrong, 5: right}\n",
            show_reference="on",
        )
        response = self.client.post("/campaigns/new/", data, headers={"HX-Request": "true"})
        assert response.headers["HX-Redirect"] == "/campaigns/form-made/"
        campaign = Campaign.objects.get(slug="form-made")
        assert campaign.rubric[0]["anchors"] == {"1": "wrong", "5": "right"}
        assert campaign.show_reference and not campaign.flags_dispute
        assert campaign.generations.count() == 2 * 2

    @pytest.mark.timeout(30)
    def test_campaign_form_refuses_a_recursive_alias_or_a_bomb_in_the_rubric(self):
        self.login("admin")
        data = self.campaign_form_data("alias-form")
        for rubric in ("- &r {key: x, anchors: [*r]}\n", alias_bomb()):
            data["rubric"] = rubric
            response = self.client.post("/campaigns/new/", data, headers={"HX-Request": "true"})
            body = response.content.decode()
            assert response.status_code == 200
            assert "Rubric is neither valid JSON nor valid YAML (line" in body
        assert not Campaign.objects.filter(slug="alias-form").exists()

    def campaign_form_data(self, slug: str) -> dict:
        return {
            "slug": slug,
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

    def test_campaign_form_checks_the_definition_once(self):
        self.login("admin")
        check = mock.Mock(wraps=campaigns.campaign_definition_validate)
        with (
            mock.patch.object(campaigns, "campaign_definition_validate", check),
            mock.patch.object(campaign_forms, "campaign_definition_validate", check),
        ):
            response = self.client.post("/campaigns/new/", self.campaign_form_data("once"))
        assert response.status_code == 302 and Campaign.objects.filter(slug="once").exists()
        assert check.call_count == 1

    def test_campaign_form_reports_a_slug_or_test_set_gone_since_it_was_checked(self):
        form = campaign_forms.CampaignForm(self.campaign_form_data("raced"))
        assert form.is_valid()
        campaign_create(definition=form.definition())  # another admin, a moment earlier
        with pytest.raises(DefinitionError) as exc:
            campaign_create(definition=form.valid)
        assert exc.value.errors == ["slug: a campaign 'raced' already exists"]
        assert Campaign.objects.filter(slug="raced").count() == 1
        unused = TestSetFactory(name="short-lived", frozen=False)
        TaskFactory(testset=unused)
        form = campaign_forms.CampaignForm(
            {**self.campaign_form_data("late"), "testset": unused.pk}
        )
        assert form.is_valid()
        delete_testset(testset=unused)  # another admin, a moment earlier
        with pytest.raises(DefinitionError) as exc:
            campaign_create(definition=form.valid)
        assert exc.value.errors == ["testset: short-lived v1 was deleted; choose another"]

    def test_it_reports_field_and_definition_errors_at_once_in_the_forms_labels(self):
        self.login("admin")
        rubric = '[{"key":"accuracy","min":5,"max":1},{"key":"accuracy"}]'
        data = {
            "slug": "all-at-once",
            "testset": self.ts.pk,
            "contenders": list(Contender.objects.values_list("pk", flat=True)),
            "mode": "rubric",
            "samples_per_task": 1,
            "reviewed_samples": 3,
            "overlap": 0,
            "rubric": rubric,
            "redact": "acme, zeta",
            "lease_minutes": 20,
            "pass_threshold": 0.6,
        }
        response = self.client.post("/campaigns/new/", data, headers={"HX-Request": "true"})
        errors = response.context["form"].errors
        assert errors["overlap"] == ["Overlap (reviewers per item) must be at least 1"]
        assert errors["reviewed_samples"] == ["Reviewed samples cannot exceed Samples per task (1)"]
        assert sorted(errors["rubric"]) == [
            "Rubric: accuracy: max must be greater than min",
            "Rubric: dimension 'accuracy' appears twice",
        ]
        assert set(errors) == {"overlap", "reviewed_samples", "rubric"}
        # nothing typed is lost
        body = response.content.decode()
        assert 'name="overlap" value="0"' in body and 'value="acme, zeta"' in body
        assert "&quot;min&quot;:5,&quot;max&quot;:1}" in body
        ticked = re.findall(r'name="contenders"[^>]* checked', body)
        assert len(ticked) == Contender.objects.count()
        assert not Campaign.objects.filter(slug="all-at-once").exists()

    def test_it_does_not_compare_with_a_field_that_is_itself_invalid(self):
        self.login("admin")
        data = {
            "slug": "Bad Slug",
            "testset": self.ts.pk,
            "contenders": list(Contender.objects.values_list("pk", flat=True)),
            "mode": "pairwise",
            "samples_per_task": 0,
            "reviewed_samples": 3,
            "overlap": 2,
            "rubric": "[{key: tone, max: 9, anchors: {12: x}}]",
            "lease_minutes": 20,
            "pass_threshold": 0.6,
        }
        errors = self.client.post("/campaigns/new/", data).context["form"].errors
        assert set(errors) == {"slug", "samples_per_task", "rubric"}  # no reviewed_samples
        assert errors["slug"] == ["Slug: lowercase letters, digits, - and _"]  # not repeated
        assert errors["rubric"] == ["Rubric: tone: anchors.12: outside 1..9"]


class DemoTests(TestCase):
    def test_demo_campaign_is_ready_for_review_and_idempotent(self):
        call_command("demo", stdout=StringIO())
        campaign = Campaign.objects.get(slug="support-demo")
        assert sorted(campaign.contenders.values_list("provider", flat=True)) == ["imported"] * 3
        assert campaign.generations.filter(status="done").count() == 12 * 3 * 2
        assert campaign.items.filter(ready=True).count() == 12
        assert [d["key"] for d in campaign.rubric] == ["accuracy", "completeness", "tone"]
        assert campaign.generations.filter(identity_leak=True).count() == 2
        snapshot = (
            Generation.objects.count(),
            ReviewItem.objects.count(),
            list(Generation.objects.order_by("pk").values_list("output", flat=True)),
        )
        call_command("demo", stdout=StringIO())
        assert snapshot == (
            Generation.objects.count(),
            ReviewItem.objects.count(),
            list(Generation.objects.order_by("pk").values_list("output", flat=True)),
        )
