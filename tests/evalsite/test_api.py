"""The JSON API's shared behaviour: refused bodies answer in JSON, and the OpenAPI schema
declares what each view reads and answers."""

import ast
import inspect
import json
import sys
import textwrap
import time
from unittest import mock

from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, TestCase, override_settings
from django.urls import URLPattern, URLResolver, get_resolver

from evalsite.models import ApiToken
from tests.factories import CampaignFactory, personas

LIMIT = 1000  # DATA_UPLOAD_MAX_MEMORY_SIZE in these tests; the real one is 51 MiB


class ApiErrorTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.tokens = {name: ApiToken.issue(user) for name, user in cls.users.items()}
        cls.campaign = CampaignFactory(slug="camp")

    def auth(self, persona):
        return {"Authorization": f"Bearer {self.tokens[persona]}"}

    def post(self, persona, path, data, content_type="application/json"):
        headers = {"Authorization": f"Bearer {self.tokens[persona]}"}
        return self.client.post(path, data, content_type=content_type, headers=headers)

    def assert_json(self, response, status):
        assert response.status_code == status, response.content[:200]
        assert response.headers["Content-Type"] == "application/json"
        return response.json()["error"]

    @override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
    def test_it_refuses_an_oversize_body_on_every_endpoint_with_a_json_413(self):
        big = json.dumps({"comment": "x" * 2 * LIMIT})
        for persona, path, content_type in (
            ("admin", "/api/v1/campaigns", "application/json"),
            ("admin", "/api/v1/campaigns/camp", "application/json"),
            ("reviewer_a", "/api/v1/assignments/tok/submit", "application/json"),
            ("admin", "/api/v1/campaigns/camp/reviews", "application/x-ndjson"),
            ("admin", "/api/v1/campaigns/camp/outputs?contender=x", "application/x-ndjson"),
            ("arbiter", "/api/v1/arbitrations/tok/resolve", "application/json"),
            ("admin", "/api/v1/users", "application/json"),
        ):
            method = self.client.patch if path.endswith("/camp") else self.client.post
            response = method(
                path,
                big,
                content_type=content_type,
                headers={"Authorization": f"Bearer {self.tokens[persona]}"},
            )
            error = self.assert_json(response, 413)
            assert error.startswith("request body too large: the limit is 1,000 bytes"), path
            assert response.json()["limit_bytes"] == LIMIT

    @override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
    def test_it_says_how_to_send_a_bigger_file_where_there_is_a_way(self):
        big = "x" * 2 * LIMIT
        error = self.assert_json(
            self.post("admin", "/api/v1/campaigns/camp/reviews", big, "application/x-ndjson"), 413
        )
        assert "multipart field `file`" in error and "manage.py import_reviews" in error
        error = self.assert_json(
            self.post(
                "admin", "/api/v1/campaigns/camp/outputs?contender=x", big, "application/x-ndjson"
            ),
            413,
        )
        assert "manage.py import_outputs" in error
        # ... and the way works: a file part is not held to the body limit.
        upload = SimpleUploadedFile("r.jsonl", b'{"task_id": "T-1"}\n' * 200)
        response = self.client.post(
            "/api/v1/campaigns/camp/reviews",
            {"file": upload},
            headers={"Authorization": f"Bearer {self.tokens['admin']}"},
        )
        assert response.status_code == 400 and response.json()["errors"]  # read and checked

    def test_it_refuses_the_real_limit_too(self):
        # As QA sent it: 60 MB to submit, over the default 51 MiB.
        response = self.post("reviewer_a", "/api/v1/assignments/tok/submit", b"x" * 60_000_000)
        assert "51.0 MiB" in self.assert_json(response, 413)

    @override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT, DEBUG=True)
    def test_it_answers_json_with_debug_on(self):
        # Django's handler400 is skipped with DEBUG on (the debug page instead).
        response = self.post("admin", "/api/v1/campaigns", "x" * 2 * LIMIT)
        self.assert_json(response, 413)

    @override_settings(DATA_UPLOAD_MAX_NUMBER_FIELDS=2)
    def test_it_answers_other_refused_bodies_in_json(self):
        auth = {"Authorization": f"Bearer {self.tokens['admin']}"}
        fields = {f"f{i}": "v" for i in range(5)}
        response = self.client.post("/api/v1/campaigns/camp/reviews", fields, headers=auth)
        assert "DATA_UPLOAD_MAX_NUMBER_FIELDS" in self.assert_json(response, 400)
        response = self.post("admin", "/api/v1/campaigns/camp/reviews", "x", "multipart/form-data")
        assert "multipart" in self.assert_json(response, 400)

    def test_it_refuses_strings_no_database_can_store_in_a_json_body(self):
        for body, expected in (
            ('{"instructions": "a\\u0000b"}', "a string contains \\u0000 (a NUL character)"),
            ('{"instructions": "a\\udc00b"}', "a string contains an unpaired surrogate (\\udc00)"),
        ):
            response = self.client.patch(
                "/api/v1/campaigns/camp",
                body,
                content_type="application/json",
                headers={"Authorization": f"Bearer {self.tokens['admin']}"},
            )
            assert expected in self.assert_json(response, 400)

    def test_it_refuses_a_nul_character_in_the_url_before_any_lookup(self):
        # On PostgreSQL a lookup with NUL raised in psycopg: an HTML 500 for an API client.
        for path in (
            "/api/v1/users/ab%00c",
            "/api/v1/testsets/ab%00c/tasks",
            "/api/v1/campaigns/camp/reviews?format=jsonl&x%00=1",
        ):
            response = self.client.get(path, headers=self.auth("admin"))
            assert "NUL character" in self.assert_json(response, 400), path
        response = self.client.post(
            "/api/v1/campaigns/camp/outputs?contender=a%00b",
            b"",
            content_type="application/x-ndjson",
            headers=self.auth("admin"),
        )
        assert "NUL character" in self.assert_json(response, 400)
        self.client.force_login(self.users["admin"])
        page = self.client.get("/testsets/ab%00c/v1/")
        assert page.status_code == 400 and b"NUL character" in page.content

    def test_an_unexpected_error_answers_api_clients_in_json_without_details(self):
        client = Client(raise_request_exception=False)
        with mock.patch("evalsite.views.roles_of", side_effect=RuntimeError("secret detail")):
            response = client.get("/api/v1/whoami", headers=self.auth("admin"))
        assert self.assert_json(response, 500) == "internal server error; it has been logged"
        assert b"secret detail" not in response.content

    def test_it_names_what_is_missing_on_every_campaign_endpoint(self):
        for persona, path in (
            ("arbiter", "/api/v1/campaigns/nope/arbitration/next"),
            ("admin", "/api/v1/campaigns/nope/generate"),
            ("admin", "/api/v1/campaigns/nope/reviews"),
        ):
            assert self.assert_json(self.post(persona, path, ""), 404) == "no such campaign"


class HeadTests(TestCase):
    """HEAD was a 405 wherever GET answered; HTTP says it is a GET without the body."""

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.auth = {"Authorization": f"Bearer {ApiToken.issue(cls.users['admin'])}"}
        CampaignFactory(slug="camp")

    def test_it_answers_head_as_get_without_the_body(self):
        for path in ("/api/v1/whoami", "/api/v1/campaigns/camp", "/api/v1/users"):
            get = self.client.get(path, headers=self.auth)
            head = self.client.head(path, headers=self.auth)
            assert (head.status_code, get.status_code) == (200, 200), path
            assert head.headers["Content-Type"] == get.headers["Content-Type"], path
            assert head.headers["Content-Length"] == str(len(get.content)), path
            assert head.content == b"", path

    def test_it_runs_the_get_of_a_view_that_also_writes(self):
        users = get_user_model().objects.count()
        assert self.client.head("/api/v1/users", headers=self.auth).status_code == 200
        assert self.client.head("/api/v1/users/reviewer_a", headers=self.auth).status_code == 200
        assert get_user_model().objects.count() == users

    def test_it_lists_head_in_the_allow_header_where_get_is(self):
        for method, path, allow in (
            ("delete", "/api/v1/whoami", "GET, HEAD"),
            ("delete", "/api/v1/users", "GET, POST, HEAD"),
            ("put", "/api/v1/campaigns/camp", "GET, PATCH, HEAD"),
            ("head", "/api/v1/campaigns/camp/generate", "POST"),
            ("post", "/api/v1/schema", "GET, HEAD"),
        ):
            response = getattr(self.client, method)(path, headers=self.auth)
            assert response.status_code == 405, (method, path)
            assert response.headers["Allow"] == allow, (method, path)

    def test_the_schema_documents_no_head_operation(self):
        paths = self.client.get("/api/v1/schema").json()["paths"]
        assert not [p for p, ops in paths.items() if "head" in ops]
        assert self.client.head("/api/v1/schema").status_code == 200


def api_views():
    def walk(patterns, prefix=""):
        for p in patterns:
            if isinstance(p, URLResolver):
                yield from walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern) and hasattr(p.callback, "api_doc"):
                yield prefix + str(p.pattern), p.callback

    yield from walk(get_resolver().url_patterns)


def what_the_code_reads_and_answers(view) -> tuple[set[str], set[str]]:
    """The query/header names a view (and the helpers of its module it calls) reads, and the
    statuses it sets as literals: a lower bound of what the schema must declare."""
    module = sys.modules[view.__module__]
    names, statuses, seen, todo = set(), set(), set(), [view.__wrapped__]
    while todo:
        func = todo.pop()
        seen.add(func)
        for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(func)))):
            if not isinstance(node, ast.Call):
                continue
            callee = ast.unparse(node.func)
            if callee in ("request.GET.get", "request.headers.get"):
                names.add(node.args[0].value)
            elif callee == "ApiError":
                status = next((k.value for k in node.keywords if k.arg == "status"), None)
                statuses.add(status.value if status else 400)
            elif callee in ("JsonResponse", "HttpResponse"):
                status = next((k.value for k in node.keywords if k.arg == "status"), None)
                if status is None:
                    statuses.add(200)
                else:  # a literal, or each literal of `201 if created else 200`
                    statuses |= {c.value for c in ast.walk(status) if isinstance(c, ast.Constant)}
            elif callee == "no_content":
                statuses.add(204)
            elif callee == "get_object_or_404":
                statuses.add(404)
            helper = getattr(module, callee, None)
            if inspect.isfunction(helper) and helper.__module__ == module.__name__:
                if helper not in seen and not hasattr(helper, "api_doc"):
                    todo.append(helper)
    return names, {str(s) for s in statuses}


class SchemaTests(TestCase):
    def test_it_declares_every_parameter_and_status_the_views_use(self):
        paths = self.client.get("/api/v1/schema").json()["paths"]
        missing = []
        for route, view in api_views():
            path = "/" + route.replace("<slug:slug>", "{slug}")
            path = path.replace("<str:", "{").replace("<int:", "{").replace(">", "}")
            names, statuses = what_the_code_reads_and_answers(view)
            declared_names, declared_statuses = set(), set()
            for op in paths[path].values():
                declared_names |= {p["name"] for p in op["parameters"] if p["in"] != "path"}
                declared_statuses |= set(op["responses"])
            missing += [
                f"{path}: parameter {n}" for n in names - declared_names - {"Authorization"}
            ]
            missing += [f"{path}: status {s}" for s in statuses - declared_statuses]
        assert missing == []

    def test_a_read_declares_no_status_only_its_write_answers(self):
        paths = self.client.get("/api/v1/schema").json()["paths"]

        def statuses(path, method):
            return set(paths[path][method]["responses"])

        for path in ("/api/v1/users", "/api/v1/campaigns", "/api/v1/testsets"):
            assert "201" in statuses(path, "post") and "400" in statuses(path, "post")
            assert not {"201", "400", "409", "413"} & statuses(path, "get"), path
        for path in ("/api/v1/users/{username}", "/api/v1/campaigns/{slug}"):
            assert "400" in statuses(path, "patch")
            assert not {"400", "409", "413"} & statuses(path, "get"), path
        assert "409" in statuses("/api/v1/users/{username}", "patch")
        # A GET can still answer 400 where it reads a parameter it can refuse.
        assert "400" in statuses("/api/v1/campaigns/{slug}/reviews", "get")

    def test_it_declares_the_query_parameters_and_statuses_qa_found_missing(self):
        paths = self.client.get("/api/v1/schema").json()["paths"]

        def params(path, method):
            return {p["name"]: p for p in paths[path][method]["parameters"] if p["in"] == "query"}

        reviews = "/api/v1/campaigns/{slug}/reviews"
        assert set(params(reviews, "get")) == {"format", "unblind"}
        assert params(reviews, "get")["format"]["schema"]["enum"] == ["jsonl", "csv"]
        assert set(params(reviews, "post")) == {"format"}  # unblind is for downloads only
        assert set(params("/api/v1/testsets/{name}/tasks", "get")) == {"format", "version"}
        assert params("/api/v1/testsets/{name}", "get")["version"]["schema"] == {
            "type": "integer",
            "minimum": 1,
        }
        contender = params("/api/v1/campaigns/{slug}/outputs", "post")["contender"]
        assert contender["required"] is True
        assert "404" in paths["/api/v1/campaigns/{slug}/generate"]["post"]["responses"]
        assert "404" in paths["/api/v1/testsets/{name}"]["get"]["responses"]
        # every operation that reads a body may answer 413
        operations = [op for methods in paths.values() for op in methods.values()]
        assert all("413" in op["responses"] for op in operations if "requestBody" in op)
        assert "multipart/form-data" in paths[reviews]["post"]["requestBody"]["content"]

    def test_every_json_body_declares_what_the_view_refuses(self):
        # Each of these views refuses a field it does not know (400, nothing written) and
        # PATCH campaign refuses an empty body; the schema said neither, and
        # declared no types for a campaign definition at all.
        from tasks.checks.automatic import schema_errors
        from tests.tasks.test_campaigns import SPEC_EXAMPLE

        paths = self.client.get("/api/v1/schema").json()["paths"]

        def body(path, method):
            return paths[path][method]["requestBody"]["content"]["application/json"]["schema"]

        refusing = [
            ("/api/v1/users", "post"),
            ("/api/v1/users/{username}", "patch"),
            ("/api/v1/campaigns", "post"),
            ("/api/v1/campaigns/{slug}", "patch"),
            ("/api/v1/testsets", "post"),
            ("/api/v1/assignments/{token}/submit", "post"),
            ("/api/v1/arbitrations/{token}/resolve", "post"),
        ]
        assert [p for p in refusing if body(*p).get("additionalProperties") is not False] == []
        patch = body("/api/v1/campaigns/{slug}", "patch")
        assert patch["minProperties"] == 1
        assert set(patch["properties"]) == {"instructions", "reviewers", "arbiters"}
        definition = body("/api/v1/campaigns", "post")

        def problems(value):
            return schema_errors(value, definition, deadline=time.monotonic() + 10)

        spec = json.loads(SPEC_EXAMPLE)
        assert problems(spec) == []
        full = {
            **spec,
            "testset": {"name": "support-v3", "version": None},
            "contenders": [
                {**spec["contenders"][0], "system_prompt": "", "version_label": "v1"},
                {"name": "vendor-x", "provider": "imported", "max_concurrency": 4},
                "model-y",
            ],
            "rubric": [{**spec["rubric"][0], "label": "Accuracy", "allow_na": True}],
            "lease_minutes": 20,
            "pass_threshold": 0.6,
            "show_reference": False,
            "flags_dispute": True,
            "instructions": "Score accuracy.",
        }
        assert problems(full) == []
        assert set(problems({**spec, "overlap": None, "slug": "Bad Slug", "extra": 1})) == {
            "$: Additional properties are not allowed ('extra' unexpected)",
            "$.overlap: None is not of type 'integer'",
            "$.slug: 'Bad Slug' does not match '^[a-z0-9](?:[a-z0-9_-]{0,98}[a-z0-9])?$'",
        }
        # Path parameters say what the URL pattern matches (anything else is a 404).
        next_slug = paths["/api/v1/campaigns/{slug}/next"]["post"]["parameters"][0]
        assert next_slug["schema"] == {"type": "string", "pattern": "^[-a-zA-Z0-9_]+$"}
