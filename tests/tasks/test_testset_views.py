import csv
import io
import json

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import TestCase, override_settings

from tasks.intake import parse as intake
from tasks.intake import services
from tasks.intake.pending import SESSION_KEY
from tasks.intake.upload_help import format_help
from tasks.models import Campaign, Task, TestSet
from tests.factories import personas


def task_row(i: int, **extra) -> dict:
    return {
        "external_id": f"T-{i:03d}",
        "category": ["billing", "shipping", "accounts"][i % 3],
        "tier": ["base", "advanced", "boundary"][i % 3],
        "case_type": ["typical", "edge", "failure"][(i // 3) % 3],
        "prompt": f"Customer question number {i}",
        **extra,
    }


def jsonl(rows) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


def body_of(response) -> str:
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


class ViewPermissionTests(TestCase):
    """Every test-set view: who gets in (200/302) and who is turned away (403, or the login page)."""

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.ts = services.testset_import(
            name="support", data=jsonl([task_row(1), task_row(2)])
        ).testset

    def get_as(self, persona: str | None, url: str):
        self.client.logout()
        if persona:
            self.client.force_login(self.users[persona])
        return self.client.get(url)

    def test_it_lets_admins_and_leads_read_and_denies_others(self):
        urls = [
            "/testsets/",
            "/testsets/support/v1/",
            "/testsets/support/v1/download.jsonl",
            "/testsets/support/v1/download.csv",
        ]
        for url in urls:
            for persona in ("admin", "lead"):
                assert self.get_as(persona, url).status_code == 200, (persona, url)
            for persona in ("reviewer_a", "arbiter", "outsider"):
                assert self.get_as(persona, url).status_code == 403, (persona, url)
            anonymous = self.get_as(None, url)
            assert anonymous.status_code == 302 and anonymous.url.startswith("/login/")

    def test_it_lets_only_admins_upload(self):
        assert self.get_as("admin", "/testsets/upload/").status_code == 200
        for persona in ("lead", "reviewer_a", "arbiter", "outsider"):
            assert self.get_as(persona, "/testsets/upload/").status_code == 403, persona
            upload = SimpleUploadedFile("x.jsonl", jsonl([task_row(1)]))
            assert (
                self.client.post(
                    "/testsets/upload/", {"name": "x", "file": upload, "action": "validate"}
                ).status_code
                == 403
            )
        assert not TestSet.objects.filter(name="x").exists()

    def test_it_serves_the_example_files_to_admins_only(self):
        for fmt in ("jsonl", "csv"):
            url = f"/testsets/upload/example.{fmt}"
            assert self.get_as("admin", url).status_code == 200
            for persona in ("lead", "reviewer_a", "arbiter", "outsider"):
                assert self.get_as(persona, url).status_code == 403, (persona, url)
        assert self.get_as("admin", "/testsets/upload/example.xlsx").status_code == 404

    def test_it_lets_only_admins_delete(self):
        for persona in ("lead", "reviewer_a", "arbiter", "outsider"):
            self.get_as(persona, "/")
            assert self.client.post("/testsets/support/v1/delete").status_code == 403, persona
        assert TestSet.objects.filter(pk=self.ts.pk).exists()

    def test_it_shows_the_upload_button_to_admins_only(self):
        assert 'href="/testsets/upload/"' in self.get_as("admin", "/testsets/").content.decode()
        assert 'href="/testsets/upload/"' not in self.get_as("lead", "/testsets/").content.decode()

    def test_it_returns_404_for_unknown_sets_versions_and_formats(self):
        assert self.get_as("admin", "/testsets/nope/v1/").status_code == 404
        assert self.get_as("admin", "/testsets/support/v9/").status_code == 404
        assert self.get_as("admin", "/testsets/support/v1/download.xlsx").status_code == 404


class UploadFlowTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def setUp(self):
        self.client.force_login(self.users["admin"])

    def validate(
        self,
        data: bytes,
        *,
        name: str = "support",
        filename: str = "support.jsonl",
        htmx: bool = False,
    ):
        upload = SimpleUploadedFile(filename, data)
        headers = {"HX-Request": "true"} if htmx else {}
        return self.client.post(
            "/testsets/upload/",
            {"name": name, "file": upload, "action": "validate"},
            headers=headers,
        )

    def pending_token(self) -> str:
        (token,) = self.client.session[SESSION_KEY].keys()
        return token

    def test_a_one_task_file_reads_in_the_singular(self):
        html = self.validate(jsonl([task_row(1)])).content.decode()
        assert "support.jsonl: 1 valid task<" in html
        assert "1 task will be written in one transaction." in html

    def test_it_validates_previews_and_imports_only_on_confirm(self):
        rows = [task_row(i) for i in range(14)]
        response = self.validate(jsonl(rows))
        html = response.content.decode()
        assert response.status_code == 200
        assert "support.jsonl: 14 valid tasks" in html
        assert "Preview (first 10 rows)" in html and "T-009" in html and "T-010" not in html
        assert "Import as support v1" in html
        assert not TestSet.objects.exists()  # nothing written before confirm
        response = self.client.post(
            "/testsets/upload/", {"action": "confirm", "token": self.pending_token()}
        )
        assert response.status_code == 302 and response.url == "/testsets/support/v1/"
        ts = TestSet.objects.get(name="support")
        assert (
            ts.task_count == 14
            and ts.created_by == self.users["admin"]
            and ts.source_filename == "support.jsonl"
        )
        assert self.client.session[SESSION_KEY] == {}
        page = self.client.get(response.url).content.decode()
        assert "Imported support v1: 14 tasks." in page

    def test_it_explains_the_format_on_the_page(self):
        html = self.client.get("/testsets/upload/").content.decode()
        assert "README" not in html
        help_block = html[html.index('<details class="card format-help">') :]
        help_block = help_block[: help_block.index("</details>")]
        assert "JSONL or CSV" in help_block and "up to 50.0 MiB" in help_block
        for field in intake.FIELDS:
            assert f"<td><code>{field}</code></td>" in help_block, field
        assert (
            "<td><code>tier</code></td><td>yes</td><td>base or advanced or boundary" in help_block
        )
        assert "<td><code>messages</code></td><td>prompt or messages, not both</td>" in help_block
        assert "<td><code>reference</code></td><td>no</td>" in help_block
        assert "<pre>external_id,category,tier,case_type,prompt,messages," in help_block
        assert "<pre>{&quot;external_id&quot;: &quot;T-1&quot;" in help_block
        assert 'href="/testsets/upload/example.jsonl"' in help_block
        partial = self.validate(jsonl([task_row(1)]), htmx=True).content.decode()
        assert "format-help" not in partial  # stays put (and open) while the form is swapped

    def test_it_offers_example_files_the_upload_accepts(self):
        line = format_help()["example_jsonl"]
        for fmt in ("jsonl", "csv"):
            response = self.client.get(f"/testsets/upload/example.{fmt}")
            assert response["Content-Disposition"] == f'attachment; filename="example.{fmt}"'
            data = body_of(response).encode()
            parsed = intake.parse_testset(data, filename=f"example.{fmt}")
            assert parsed.ok and len(parsed.tasks) == 2, parsed.errors
            assert parsed.tasks[1]["messages"] and json.loads(line)["prompt"] in data.decode()

    def test_it_serves_the_htmx_partial_and_redirects_the_client_on_confirm(self):
        response = self.validate(jsonl([task_row(1)]), htmx=True)
        html = response.content.decode()
        assert response.status_code == 200
        assert "<html" not in html and "Import as support v1" in html  # the #upload partial only
        response = self.client.post(
            "/testsets/upload/",
            {"action": "confirm", "token": self.pending_token()},
            headers={"HX-Request": "true"},
        )
        assert response.status_code == 200 and response["HX-Redirect"] == "/testsets/support/v1/"
        assert TestSet.objects.get(name="support").task_count == 1

    def test_it_lists_every_error_and_offers_no_confirm(self):
        rows = [task_row(1), task_row(2, tier="expert"), task_row(1)]
        response = self.validate(jsonl(rows), htmx=True)
        html = response.content.decode()
        assert "2 problems in support.jsonl" in html and "nothing will be imported" in html
        assert (
            "line 2, field tier: unknown value &#x27;expert&#x27;; use one of base, advanced, boundary"
            in html
        )
        assert (
            "line 3, field external_id: duplicate &#x27;T-001&#x27; (first used on line 1)" in html
        )
        assert 'value="confirm"' not in html
        assert SESSION_KEY not in self.client.session and not TestSet.objects.exists()

    def test_a_bad_name_does_not_stop_the_file_being_checked(self):
        rows = [task_row(1), task_row(2, tier="expert")]
        html = self.validate(jsonl(rows), name="qa bad name!", htmx=True).content.decode()
        assert "line 2, field tier: unknown value" in html  # the file was read too
        assert "name: " in html and 'value="confirm"' not in html
        assert SESSION_KEY not in self.client.session and not TestSet.objects.exists()
        good = self.validate(jsonl([task_row(1)]), name="qa bad name!", htmx=True)
        assert 'value="confirm"' not in good.content.decode()  # a good file, a bad name

    @override_settings(TESTSET_MAX_BYTES=50)
    def test_it_refuses_an_oversize_upload(self):
        html = self.validate(jsonl([task_row(1)])).content.decode()
        assert "line 1, field (file): the file is" in html and "the limit is 50 bytes" in html
        assert not TestSet.objects.exists()

    @override_settings(TESTSET_MAX_BYTES=1000)
    def test_it_refuses_a_huge_request_from_its_content_length_before_parsing(self):
        data = jsonl([task_row(i, reference="x" * 1000) for i in range(80)])  # ~90 KB
        for htmx in (False, True):
            response = self.validate(data, htmx=htmx)
            html = response.content.decode()
            assert response.status_code == 200
            assert (
                "line 1, field (file): the upload is" in html
                and "the limit for a file is 1,000 bytes" in html
            )
        assert SESSION_KEY not in self.client.session and not TestSet.objects.exists()

    def test_it_still_requires_the_csrf_token(self):
        client = self.client_class(enforce_csrf_checks=True)
        client.force_login(self.users["admin"])
        upload = SimpleUploadedFile("a.jsonl", jsonl([task_row(1)]))
        response = client.post(
            "/testsets/upload/", {"name": "a", "file": upload, "action": "validate"}
        )
        assert response.status_code == 403
        client.get("/testsets/upload/")
        token = client.cookies["csrftoken"].value
        upload = SimpleUploadedFile("a.jsonl", jsonl([task_row(1)]))
        response = client.post(
            "/testsets/upload/",
            {"name": "a", "file": upload, "action": "validate"},
            headers={"X-CSRFToken": token},
        )
        assert response.status_code == 200 and "Import as a v1" in response.content.decode()

    def test_it_rejects_a_bad_name_in_the_form(self):
        html = self.validate(jsonl([task_row(1)]), name="no spaces please").content.decode()
        assert "use letters, digits" in html and 'aria-invalid="true"' in html
        assert SESSION_KEY not in self.client.session

    def test_it_says_when_the_file_is_identical_to_an_existing_version(self):
        data = jsonl([task_row(1), task_row(2)])
        services.testset_import(name="support", data=data)
        html = self.validate(data).content.decode()
        assert "identical to" in html and 'href="/testsets/support/v1/"' in html
        assert 'value="confirm"' not in html and TestSet.objects.count() == 1

    def test_it_offers_the_next_version_for_an_existing_name(self):
        services.testset_import(name="support", data=jsonl([task_row(1)]))
        html = self.validate(jsonl([task_row(1), task_row(2)])).content.decode()
        assert "Import as support v2" in html

    def test_it_refuses_a_token_from_another_session_or_a_used_one(self):
        self.validate(jsonl([task_row(1)]))
        token = self.pending_token()
        other = self.client_class()
        other.force_login(self.users["admin"])
        html = other.post(
            "/testsets/upload/", {"action": "confirm", "token": token}
        ).content.decode()
        assert "no longer pending" in html and not TestSet.objects.exists()
        assert (
            self.client.post("/testsets/upload/", {"action": "confirm", "token": token}).status_code
            == 302
        )
        html = self.client.post(
            "/testsets/upload/", {"action": "confirm", "token": token}
        ).content.decode()
        assert "no longer pending" in html and TestSet.objects.count() == 1


class DetailTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        rows = [task_row(i) for i in range(120)]
        rows[7] = task_row(
            7,
            prompt=None,
            messages=[
                {"role": "user", "content": "Hi there"},
                {"role": "assistant", "content": "Hello"},
                {"role": "user", "content": "Where is my kayak?"},
            ],
        )
        rows[8] = task_row(
            8,
            prompt='=HYPERLINK("http://evil.example")',
            reference="-2+3",
            checks={"max_chars": 50},
            metadata={"note": "@mention"},
        )
        cls.ts = services.testset_import(
            name="support", data=jsonl(rows), filename="s.jsonl"
        ).testset

    def setUp(self):
        self.client.force_login(self.users["lead"])

    def test_it_shows_counts_by_category_tier_and_case_type(self):
        html = self.client.get("/testsets/support/v1/").content.decode()
        assert "120 tasks" in html
        for label in ("Categories", "Tiers", "Case types"):
            assert f"<h2>{label}</h2>" in html
        assert '<th scope="row">billing</th><td class="num">40</td>' in html
        assert '<th scope="row">boundary</th><td class="num">40</td>' in html
        assert '<meter min="0" max="120" value="40">' in html

    def test_it_paginates_the_tasks(self):
        first = self.client.get("/testsets/support/v1/").content.decode()
        assert "T-000" in first and "T-049" in first and "T-050" not in first
        assert "page 1 of 3" in first and 'href="?page=2"' in first
        third = self.client.get("/testsets/support/v1/?page=3").content.decode()
        assert "T-119" in third and "T-099" not in third

    def test_it_filters_by_category_tier_case_type_and_text(self):
        html = self.client.get(
            "/testsets/support/v1/?category=shipping&case_type=edge"
        ).content.decode()
        ids = {f"T-{i:03d}" for i in range(120) if i % 3 == 1 and (i // 3) % 3 == 1}
        assert f"{len(ids)} tasks match" in html
        assert all(i in html for i in ids) and "T-000" not in html
        html = self.client.get("/testsets/support/v1/?q=kayak").content.decode()
        assert "1 task match" in html and "T-007" in html and "3 messages" in html
        html = self.client.get("/testsets/support/v1/?q=question+number+119").content.decode()
        assert "1 task match" in html and "T-119" in html
        html = self.client.get("/testsets/support/v1/?tier=nonsense").content.decode()
        assert "120 tasks" in html  # a stale filter value is ignored, not an error

    def test_it_serves_the_tasks_partial_to_htmx_with_filters_and_pages(self):
        response = self.client.get(
            "/testsets/support/v1/?tier=base&page=2", headers={"HX-Request": "true"}
        )
        html = response.content.decode()
        assert "<html" not in html and "<h2>Tiers</h2>" not in html
        # 40 base tasks fit on one page: page 2 clamps to the last page.
        assert "40 tasks match" in html and "<table" in html and "page 1 of" not in html
        assert "T-000" in html and "T-001" not in html

    def test_it_serves_the_whole_page_for_an_htmx_history_restore(self):
        headers = {"HX-Request": "true", "HX-History-Restore-Request": "true"}
        html = self.client.get("/testsets/support/v1/?tier=base", headers=headers).content.decode()
        assert "<html" in html and "<h2>Tiers</h2>" in html and "40 tasks match" in html

    def test_it_escapes_task_text(self):
        services.testset_import(
            name="xss", data=jsonl([task_row(1, prompt="<script>alert(1)</script>")])
        )
        html = self.client.get("/testsets/xss/v1/").content.decode()
        assert (
            "<script>alert(1)</script>" not in html
            and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        )

    def test_it_downloads_jsonl_that_reimports_as_identical(self):
        response = self.client.get("/testsets/support/v1/download.jsonl")
        assert response["Content-Disposition"] == 'attachment; filename="support-v1.jsonl"'
        data = body_of(response).encode()
        assert len(data.splitlines()) == 120
        again = services.testset_import(name="support", data=data, filename="download.jsonl")
        assert not again.created and again.testset.pk == self.ts.pk

    def test_it_downloads_csv_with_formula_cells_escaped(self):
        response = self.client.get("/testsets/support/v1/download.csv")
        assert response["Content-Type"].startswith("text/csv")
        assert response["Content-Disposition"] == 'attachment; filename="support-v1.csv"'
        rows = list(csv.DictReader(io.StringIO(body_of(response))))
        assert len(rows) == 120
        evil = rows[8]
        assert evil["prompt"] == '\'=HYPERLINK("http://evil.example")'
        assert evil["reference"] == "'-2+3"
        assert json.loads(evil["checks"]) == {"max_chars": 50} and json.loads(evil["metadata"]) == {
            "note": "@mention"
        }
        assert (
            json.loads(rows[7]["messages"])[-1]["content"] == "Where is my kayak?"
            and rows[7]["prompt"] == ""
        )
        assert rows[0]["prompt"] == "Customer question number 0"


class DeleteViewTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def setUp(self):
        self.client.force_login(self.users["admin"])
        self.ts = services.testset_import(name="support", data=jsonl([task_row(1)])).testset

    def test_it_deletes_a_set_no_campaign_uses(self):
        assert "Delete</button>" in self.client.get("/testsets/support/v1/").content.decode()
        response = self.client.post("/testsets/support/v1/delete")
        assert response.status_code == 302 and response.url == "/testsets/"
        assert not TestSet.objects.exists() and not Task.objects.exists()
        response = self.client.post("/testsets/support/v1/delete")
        assert response.status_code == 404

    def test_it_refuses_to_delete_a_frozen_set(self):
        Campaign.objects.create(slug="c", name="C", testset=self.ts)
        self.ts.freeze()
        html = self.client.get("/testsets/support/v1/").content.decode()
        assert "Delete</button>" not in html and "frozen" in html
        response = self.client.post("/testsets/support/v1/delete", headers={"HX-Request": "true"})
        assert response["HX-Redirect"] == "/testsets/support/v1/"
        assert (
            "is frozen (a campaign uses it) and cannot be deleted"
            in self.client.get("/testsets/support/v1/").content.decode()
        )
        assert TestSet.objects.filter(pk=self.ts.pk).exists() and Task.objects.count() == 1

    def test_it_refuses_get_for_delete(self):
        assert self.client.get("/testsets/support/v1/delete").status_code == 405
        assert TestSet.objects.exists()
