"""A campaign's outputs downloaded with their text (API GET .../outputs, export_outputs):
streamed JSONL in the import format, for admins and leads only, that imports back unchanged."""

import json
from io import StringIO

from django.core.management import CommandError, call_command
from django.test import TestCase

from evalsite.models import ApiToken
from tasks.campaigns.definition import campaign_create
from tasks.generation.outputs_import import outputs_import
from tasks.models import Generation
from tests.factories import personas
from tests.tasks.test_campaigns import imported_pairwise, make_testset

OUTPUTS_A = (
    '{"task_id": "T-1", "output": "Refunds take 5 days; a \\"quoted\\" word, café.", '
    '"input_tokens": 120, "output_tokens": 80, "latency_ms": 900, "cost": 0.00012345}\n'
    '{"task_id": "T-2", "output": "Second answer.", "finish_reason": "length"}\n'
)
OUTPUTS_B = '{"task_id": "T-1", "output": "Beta says hi."}\n'


def lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


class OutputsExportTests(TestCase):
    def setUp(self):
        self.users = personas()
        make_testset(n=2)
        self.campaign, _ = campaign_create(definition=imported_pairwise("exp", ("a", "b")))
        outputs_import(campaign=self.campaign, contender_name="a", raw=OUTPUTS_A.encode())
        outputs_import(campaign=self.campaign, contender_name="b", raw=OUTPUTS_B.encode())

    def auth(self, persona: str) -> dict:
        return {"Authorization": f"Bearer {ApiToken.issue(self.users[persona])}"}

    def test_it_streams_every_done_output_with_its_contender_and_measures(self):
        response = self.client.get("/api/v1/campaigns/exp/outputs", headers=self.auth("lead"))
        assert response.status_code == 200
        assert response.streaming
        assert response["Content-Disposition"] == 'attachment; filename="exp-outputs.jsonl"'
        records = lines(b"".join(response.streaming_content).decode())
        assert [(r["task_id"], r["contender"]) for r in records] == [
            ("T-1", "a"),
            ("T-1", "b"),
            ("T-2", "a"),
        ]
        first = records[0]
        assert first["output"] == 'Refunds take 5 days; a "quoted" word, café.'
        assert (first["input_tokens"], first["output_tokens"], first["latency_ms"]) == (
            120,
            80,
            900,
        )
        assert first["cost"] == 0.00012345
        assert records[2]["finish_reason"] == "length"
        assert "cost" not in records[1]  # no price, no cost: left out, not null

    def test_one_contender_only_and_an_unknown_one_refused(self):
        only_b = self.client.get(
            "/api/v1/campaigns/exp/outputs?contender=b", headers=self.auth("admin")
        )
        assert [r["contender"] for r in lines(b"".join(only_b.streaming_content).decode())] == ["b"]
        unknown = self.client.get(
            "/api/v1/campaigns/exp/outputs?contender=zz", headers=self.auth("admin")
        )
        assert unknown.status_code == 400
        assert "'zz' is not part of campaign exp" in unknown.json()["error"]

    def test_reviewers_never_download_and_leads_never_import(self):
        for persona in ("reviewer_a", "arbiter", "outsider"):
            response = self.client.get("/api/v1/campaigns/exp/outputs", headers=self.auth(persona))
            assert response.status_code == 403, persona
        refused = self.client.post(
            "/api/v1/campaigns/exp/outputs?contender=a",
            OUTPUTS_A,
            content_type="application/x-ndjson",
            headers=self.auth("lead"),
        )
        assert refused.status_code == 403
        assert refused.json()["error"] == "only admins import outputs"

    def test_the_export_imports_back_unchanged(self):
        exported = StringIO()
        call_command("export_outputs", campaign="exp", contender="a", stdout=exported)
        copy, _ = campaign_create(definition=imported_pairwise("exp-copy", ("a", "b")))
        summary = outputs_import(
            campaign=copy, contender_name="a", raw=exported.getvalue().encode()
        )
        assert summary["stored"] == 2

        def stored(campaign):
            return list(
                Generation.objects.filter(campaign=campaign, contender__name="a", status="done")
                .order_by("task__external_id")
                .values_list("task__external_id", "output", "input_tokens", "cost", "finish_reason")
            )

        assert stored(copy) == stored(self.campaign)

    def test_the_command_writes_a_file_and_names_what_is_wrong(self):
        from pathlib import Path
        from tempfile import TemporaryDirectory

        with TemporaryDirectory() as folder:
            target = Path(folder) / "out.jsonl"
            call_command("export_outputs", campaign="exp", output=str(target))
            assert len(lines(target.read_text(encoding="utf-8"))) == 3
        with self.assertRaisesMessage(CommandError, "no campaign 'nope'"):
            call_command("export_outputs", campaign="nope")
        with self.assertRaisesMessage(CommandError, "contender 'zz' is not part of campaign exp"):
            call_command("export_outputs", campaign="exp", contender="zz")
