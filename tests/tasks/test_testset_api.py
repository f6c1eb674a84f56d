import json

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import TestCase

from evalsite.models import ApiToken
from tasks.models import Task, TestSet
from tests.factories import personas

ROWS = [
    {
        "external_id": "T-1",
        "category": "billing",
        "tier": "base",
        "case_type": "typical",
        "prompt": "Charged twice?",
    },
    {
        "external_id": "T-2",
        "category": "shipping",
        "tier": "advanced",
        "case_type": "edge",
        "messages": [{"role": "user", "content": "Where is my parcel?"}],
    },
]
JSONL = "".join(json.dumps(r) + "\n" for r in ROWS)


class TestSetApiTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.tokens = {name: ApiToken.issue(user) for name, user in cls.users.items()}

    def auth(self, persona: str) -> dict:
        return {"Authorization": f"Bearer {self.tokens[persona]}"}

    def post_json(self, persona: str, body: dict):
        return self.client.post(
            "/api/v1/testsets",
            json.dumps(body),
            content_type="application/json",
            headers=self.auth(persona),
        )

    def test_it_imports_a_multipart_upload(self):
        upload = SimpleUploadedFile(
            "support.jsonl", JSONL.encode(), content_type="application/x-ndjson"
        )
        response = self.client.post(
            "/api/v1/testsets", {"name": "support", "file": upload}, headers=self.auth("admin")
        )
        assert response.status_code == 201, response.content
        body = response.json()
        assert (
            body["created"] is True
            and body["message"] == "imported support v1: 2 tasks in 2 categories"
        )
        assert body["testset"]["name"] == "support" and body["testset"]["version"] == 1
        assert body["testset"]["counts"]["tier"] == {"base": 1, "advanced": 1, "boundary": 0}
        assert body["testset"]["created_by"] == "admin"
        assert Task.objects.filter(testset__name="support").count() == 2

    def test_it_imports_a_json_body_and_recognises_identical_content(self):
        csv = (
            "external_id,category,tier,case_type,prompt\nT-1,billing,base,typical,Charged twice?\n"
        )
        first = self.post_json("admin", {"name": "support", "format": "csv", "content": csv})
        assert first.status_code == 201
        again = self.post_json("admin", {"name": "support", "format": "csv", "content": csv})
        assert again.status_code == 200
        assert again.json()["created"] is False
        assert again.json()["message"] == "identical to support v1; nothing was imported"
        changed = self.post_json("admin", {"name": "support", "format": "jsonl", "content": JSONL})
        assert changed.status_code == 201 and changed.json()["testset"]["version"] == 2

    def test_it_lists_every_row_error_and_writes_nothing(self):
        bad = (
            JSONL
            + '{"external_id": "T-1", "category": "x", "tier": "hard", "case_type": "edge", "prompt": "p"}\n'
        )
        response = self.post_json("admin", {"name": "support", "format": "jsonl", "content": bad})
        assert response.status_code == 400
        body = response.json()
        assert body["error"] == "2 problems found; nothing was imported"
        assert body["errors"] == [
            "line 3, field tier: unknown value 'hard'; use one of base, advanced, boundary",
            "line 3, field external_id: duplicate 'T-1' (first used on line 1)",
        ]
        assert body["error_count"] == 2
        assert not TestSet.objects.exists()

    def test_it_rejects_malformed_requests(self):
        assert (
            self.post_json("admin", {"name": "s", "format": "xml", "content": "x"}).json()["error"]
            == "'format' must be jsonl or csv"
        )
        assert self.post_json("admin", {"name": "s", "format": "csv"}).status_code == 400
        response = self.client.post("/api/v1/testsets", {"name": "s"}, headers=self.auth("admin"))
        assert response.status_code == 400 and "multipart field 'file'" in response.json()["error"]
        assert not TestSet.objects.exists()

    def test_it_refuses_an_oversize_body_with_413_before_reading_it(self):
        with self.settings(TESTSET_MAX_BYTES=100):
            big = JSONL * 2000  # ~300 KB, above the limit plus the multipart allowance
            response = self.post_json("admin", {"name": "s", "format": "jsonl", "content": big})
        assert response.status_code == 413
        assert response.json()["errors"][0].startswith("line 1, field (file): the upload is")
        assert not TestSet.objects.exists()

    def test_it_allows_only_admins_to_import(self):
        for persona in ("lead", "reviewer_a", "arbiter", "outsider"):
            response = self.post_json(persona, {"name": "s", "format": "jsonl", "content": JSONL})
            assert response.status_code == 403, persona
        response = self.client.post(
            "/api/v1/testsets",
            json.dumps({"name": "s", "format": "jsonl", "content": JSONL}),
            content_type="application/json",
        )
        assert response.status_code == 401
        assert not TestSet.objects.exists()

    def test_it_lists_and_shows_test_sets_to_admins_and_leads(self):
        self.post_json("admin", {"name": "support", "format": "jsonl", "content": JSONL})
        self.post_json(
            "admin",
            {"name": "support", "format": "jsonl", "content": JSONL.replace("twice", "thrice")},
        )
        for persona in ("admin", "lead"):
            listing = self.client.get("/api/v1/testsets", headers=self.auth(persona))
            assert listing.status_code == 200
            assert [(t["name"], t["version"]) for t in listing.json()["testsets"]] == [
                ("support", 2),
                ("support", 1),
            ]
            detail = self.client.get("/api/v1/testsets/support", headers=self.auth(persona)).json()
            assert detail["version"] == 2 and detail["versions"] == [2, 1] and detail["tasks"] == 2
            assert detail["counts"]["category"] == {"billing": 1, "shipping": 1}
        old = self.client.get(
            "/api/v1/testsets/support?version=1", headers=self.auth("lead")
        ).json()
        assert old["version"] == 1
        missing = self.client.get("/api/v1/testsets/nope", headers=self.auth("lead"))
        assert missing.status_code == 404 and missing.json()["error"] == "no test set 'nope'"

    def test_it_names_the_versions_there_are_when_the_asked_one_is_not(self):
        self.post_json("admin", {"name": "support", "format": "jsonl", "content": JSONL})
        changed = JSONL.replace("twice", "thrice")
        self.post_json("admin", {"name": "support", "format": "jsonl", "content": changed})
        for path in ("/api/v1/testsets/support", "/api/v1/testsets/support/tasks"):
            missing = self.client.get(f"{path}?version=99", headers=self.auth("lead"))
            assert missing.status_code == 404, path
            assert missing.json() == {
                "error": "test set 'support' has no version 99; its versions are 2, 1",
                "versions": [2, 1],
            }
            missing = self.client.get(path.replace("support", "nope"), headers=self.auth("lead"))
            assert missing.json() == {"error": "no test set 'nope'"}, path

    def test_it_rejects_an_unknown_field_and_imports_nothing(self):
        # "version": 3 was dropped without a word and the file imported as v1.
        response = self.post_json(
            "admin", {"name": "support", "format": "jsonl", "content": JSONL, "version": 3}
        )
        assert response.status_code == 400
        assert response.json() == {
            "error": "nothing imported: unknown field 'version'; this body takes name, format, "
            "content, pii",
            "errors": ["version: unknown field; accepted: name, format, content, pii"],
        }
        upload = SimpleUploadedFile("support.jsonl", JSONL.encode())
        response = self.client.post(
            "/api/v1/testsets",
            {"name": "support", "file": upload, "fromat": "csv"},
            headers=self.auth("admin"),
        )
        assert response.status_code == 400
        assert response.json()["errors"] == [
            "fromat: unknown field; accepted: name, format, file, pii"
        ]
        assert not TestSet.objects.exists()
        schema = self.client.get("/api/v1/schema").json()
        content = schema["paths"]["/api/v1/testsets"]["post"]["requestBody"]["content"]
        assert content["application/json"]["schema"]["required"] == ["name", "format", "content"]
        assert all(c["schema"]["additionalProperties"] is False for c in content.values())

    def test_it_rejects_a_version_that_is_not_ascii_digits(self):
        # '²' and '①' pass str.isdigit() but not int(): that was a 500.
        self.post_json("admin", {"name": "support", "format": "jsonl", "content": JSONL})
        for path in ("/api/v1/testsets/support", "/api/v1/testsets/support/tasks"):
            for version in ("²", "①", "-1", "1.0", " 1", ""):
                response = self.client.get(path, {"version": version}, headers=self.auth("lead"))
                assert response.status_code == 400, (path, version)
                assert response.json()["error"] == (
                    f"version must be a whole number such as 1 or 2, not {version!r}"
                )
        parameters = self.client.get("/api/v1/schema").json()["paths"]["/api/v1/testsets/{name}"]
        version = next(p for p in parameters["get"]["parameters"] if p["name"] == "version")
        assert version["schema"] == {"type": "integer", "minimum": 1}

    def test_it_downloads_the_tasks_as_jsonl_or_escaped_csv(self):
        evil = JSONL.replace("Charged twice?", "=1+1")
        self.post_json("admin", {"name": "support", "format": "jsonl", "content": evil})
        response = self.client.get("/api/v1/testsets/support/tasks", headers=self.auth("lead"))
        assert response.status_code == 200
        assert response["Content-Disposition"] == 'attachment; filename="support-v1.jsonl"'
        lines = b"".join(response.streaming_content).decode().splitlines()
        assert [json.loads(line) for line in lines] == [
            {**ROWS[0], "prompt": "=1+1"},
            ROWS[1],
        ]
        response = self.client.get(
            "/api/v1/testsets/support/tasks?format=csv&version=1", headers=self.auth("admin")
        )
        text = b"".join(response.streaming_content).decode()
        assert text.splitlines()[1].startswith("T-1,billing,base,typical,'=1+1,")
        bad = self.client.get(
            "/api/v1/testsets/support/tasks?format=xlsx", headers=self.auth("admin")
        )
        assert bad.status_code == 400
        assert (
            self.client.get("/api/v1/testsets/nope/tasks", headers=self.auth("admin")).status_code
            == 404
        )
        denied = self.client.get("/api/v1/testsets/support/tasks", headers=self.auth("reviewer_a"))
        assert denied.status_code == 403

    def test_it_denies_reading_to_reviewers_arbiters_and_outsiders(self):
        for persona in ("reviewer_a", "arbiter", "outsider"):
            assert (
                self.client.get("/api/v1/testsets", headers=self.auth(persona)).status_code == 403
            )
            assert (
                self.client.get("/api/v1/testsets/support", headers=self.auth(persona)).status_code
                == 403
            )

    def test_it_is_described_in_the_openapi_schema(self):
        schema = self.client.get("/api/v1/schema").json()
        assert set(schema["paths"]["/api/v1/testsets"]) == {"get", "post"}
        assert (
            "multipart/form-data"
            in schema["paths"]["/api/v1/testsets"]["post"]["requestBody"]["content"]
        )
        assert "get" in schema["paths"]["/api/v1/testsets/{name}"]
