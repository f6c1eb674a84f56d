"""Images in test cases: a zip of JSONL + images or data URLs, checked by decoding, stored
without metadata under neutral names, sent to both providers in their formats, shown to
reviewers beside the text; bad input refused with its line and field, nothing imported."""

from __future__ import annotations

import base64
import io
import json
import zipfile

import pytest
from django.core.files.storage import default_storage
from django.test import TestCase, override_settings
from PIL import Image, PngImagePlugin

from tasks.campaigns.definition import campaign_create
from tasks.generation.run import generation_run
from tasks.images.decode import image_checked
from tasks.images.store import image_bytes
from tasks.intake.services import TestSetImportError
from tasks.intake.services import testset_import as import_testset
from tasks.models import Generation, TestSet
from tests.conftest import wait_until
from tests.factories import PASSWORD, personas
from tests.fake_llm import FakeLLM


def png(width=40, height=30, color=(200, 30, 30), *, text_chunk: str = "") -> bytes:
    out = io.BytesIO()
    info = PngImagePlugin.PngInfo()
    if text_chunk:
        info.add_text("Author", text_chunk)
    Image.new("RGB", (width, height), color).save(out, format="PNG", pnginfo=info)
    return out.getvalue()


def jpeg_with_exif() -> bytes:
    out = io.BytesIO()
    exif = Image.Exif()
    exif[0x010F] = "SecretCam"  # Make
    exif[0x013B] = "Jane Reviewer-Name"  # Artist
    Image.new("RGB", (32, 32), (10, 120, 10)).save(out, format="JPEG", exif=exif.tobytes())
    return out.getvalue()


def row(n: int, *parts, external_id: str = "") -> dict:
    return {
        "external_id": external_id or f"IMG-{n}",
        "category": "charts",
        "tier": "base",
        "case_type": "typical",
        "messages": [{"role": "user", "content": list(parts)}],
    }


def jsonl(*rows) -> bytes:
    return "\n".join(json.dumps(r) for r in rows).encode()


def zipped(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


QUESTION = {"type": "text", "text": "What does the chart show?"}


@pytest.mark.django_db
def test_a_zip_with_images_imports_them_without_metadata_under_neutral_names():
    files = {
        "set/tasks.jsonl": jsonl(
            row(1, QUESTION, {"type": "image", "path": "charts/q3-revenue-by-Jane.png"}),
            row(2, QUESTION, {"type": "image", "path": "photo.jpg"}),
        ),
        "set/charts/q3-revenue-by-Jane.png": png(text_chunk="Jane Reviewer-Name"),
        "set/photo.jpg": jpeg_with_exif(),
    }
    result = import_testset(name="charts", data=zipped(files), filename="charts.zip")
    tasks = list(result.testset.tasks.order_by("position"))
    first = tasks[0].messages[0]["content"]
    assert first[0] == QUESTION
    image = first[1]
    assert set(image) == {"type", "image", "media_type", "width", "height"}
    assert image["media_type"] == "image/png" and (image["width"], image["height"]) == (40, 30)
    assert len(image["image"]) == 64 + 4 and "Jane" not in json.dumps(tasks[0].messages)
    stored = image_bytes(image["image"])
    assert b"Jane" not in stored and Image.open(io.BytesIO(stored)).size == (40, 30)
    photo = tasks[1].messages[0]["content"][1]
    assert photo["media_type"] == "image/jpeg"
    again = Image.open(io.BytesIO(image_bytes(photo["image"])))
    assert not again.getexif() and b"SecretCam" not in image_bytes(photo["image"])


@pytest.mark.django_db
def test_an_image_may_come_as_a_data_url_or_base64_in_a_plain_jsonl():
    raw = png(8, 8)
    data_url = "data:image/png;base64," + base64.b64encode(raw).decode()
    result = import_testset(
        name="inline",
        data=jsonl(
            row(1, QUESTION, {"type": "image", "url": data_url}),
            row(2, QUESTION, {"type": "image", "data": base64.b64encode(raw).decode()}),
        ),
        filename="inline.jsonl",
    )
    names = {t.messages[0]["content"][1]["image"] for t in result.testset.tasks.all()}
    assert len(names) == 1  # the same pixels, one stored image


def refused(data: bytes, filename: str = "bad.zip") -> list[str]:
    with pytest.raises(TestSetImportError) as raised:
        import_testset(name="bad", data=data, filename=filename)
    assert not TestSet.objects.exists()
    return raised.value.errors


@pytest.mark.django_db
@override_settings(TASK_IMAGE_MAX_BYTES=20_000, TASK_IMAGE_MAX_PIXELS=1_000_000)
def test_bad_images_and_parts_are_refused_with_line_and_field_and_nothing_is_imported():
    svg = b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
    noise = bytes(range(256)) * 200  # 51 KB
    big = io.BytesIO()
    Image.new("1", (2000, 1000)).save(big, format="PNG")  # 2 megapixels, a few KB
    files = {
        "tasks.jsonl": jsonl(
            row(1, QUESTION, {"type": "image", "path": "not-really.png"}),
            row(2, QUESTION, {"type": "image", "path": "drawing.png"}),
            row(3, QUESTION, {"type": "image", "path": "noise.png"}),
            row(4, QUESTION, {"type": "image", "path": "huge.png"}),
            row(5, {"type": "audio", "path": "a.wav"}),
            row(6, QUESTION, {"type": "image", "url": "https://example.com/chart.png"}),
            row(7, QUESTION, {"type": "image", "path": "missing.png"}),
            row(8, QUESTION, {"type": "image", "path": "ok.png", "data": "AAAA"}),
            row(9, QUESTION, {"type": "image", "path": "ok.png"}),
        ),
        "not-really.png": b"this is text, whatever its name says",
        "drawing.png": svg,
        "noise.png": noise,
        "huge.png": big.getvalue(),
        "ok.png": png(21, 13),
    }
    errors = refused(zipped(files))
    assert errors[0].startswith(
        "line 1, field messages[0].content[1].path: not an image that decodes"
    )
    assert errors[1].startswith("line 2, field messages[0].content[1].path: SVG images are refused")
    assert errors[2] == (
        "line 3, field messages[0].content[1].path: the image is 51,200 bytes; the limit is 20,000"
    )
    assert errors[3].startswith(
        "line 4, field messages[0].content[1].path: the image is 2000 x 1000 pixels"
    )
    assert errors[4] == (
        "line 5, field messages[0].content[0].type: unknown part type 'audio'; use text or image"
    )
    assert errors[5].startswith("line 6, field messages[0].content[1].url: only data: URLs")
    assert errors[6].startswith("line 7, field messages[0].content[1].path: no file 'missing.png'")
    assert errors[7].startswith(
        "line 8, field messages[0].content[1]: an image part needs exactly one"
    )
    assert len(errors) == 8  # row 9 is fine, and still nothing was imported
    # Row 9's image was fine, but nothing of a refused upload is stored.
    fine = image_checked(files["ok.png"]).name
    assert not default_storage.exists(f"task-images/{fine}")


@pytest.mark.django_db
@override_settings(TESTSET_ZIP_MAX_BYTES=1_000_000)
def test_a_zip_bomb_and_paths_outside_the_root_are_refused():
    bomb = zipped({"tasks.jsonl": jsonl(row(1, QUESTION)), "zeros.png": bytes(5_000_000)})
    assert len(bomb) < 20_000  # 5 MB of zeros deflate to a few KB
    errors = refused(bomb)
    assert errors == [
        "line 1, field (zip): 'zeros.png' inflates the zip past 1,000,000 bytes (the limit of "
        "what a zip may hold): refused as a zip bomb"
    ]
    escape = zipped({"tasks.jsonl": jsonl(row(1, QUESTION)), "../outside.png": png()})
    assert refused(escape) == [
        "line 1, field (zip): '../outside.png' is outside the zip's root: refused"
    ]
    two = zipped({"a.jsonl": b"", "b.jsonl": b""})
    assert "exactly one .jsonl or .csv test set" in refused(two)[0]


def image_campaign(fake: FakeLLM, slug: str):
    chart = png(64, 48, (30, 30, 200))
    files = {
        "tasks.jsonl": jsonl(
            *(
                row(
                    n,
                    {"type": "text", "text": f"Chart {n}: which bar is tallest?"},
                    {"type": "image", "path": "chart.png"},
                )
                for n in (1, 2)
            )
        ),
        "chart.png": chart,
    }
    ts = import_testset(name=f"ts-{slug}", data=zipped(files), filename="charts.zip").testset
    campaign, _ = campaign_create(
        definition={
            "slug": slug,
            "testset": ts.name,
            "contenders": [
                {
                    "name": "vis-a",
                    "provider": "openai",
                    "model": "vis-a",
                    "base_url": fake.base_url,
                },
                {
                    "name": "vis-b",
                    "provider": "anthropic",
                    "model": "vis-b",
                    "base_url": fake.base_url,
                },
            ],
            "rubric": [{"key": "accuracy"}],
            "overlap": 1,
            "hold_identity_leaks": False,
        }
    )
    for gen in Generation.objects.filter(campaign=campaign):
        assert generation_run(generation_id=gen.pk).action == "done"
    return campaign


@override_settings(GENERATION_READ_TIMEOUT=2, GENERATION_MAX_ATTEMPTS=2)
class ImageGenerationTests(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fake = FakeLLM()

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    def test_an_image_task_goes_to_each_provider_in_its_format_and_to_reviewers_beside_the_text(
        self,
    ):
        campaign = image_campaign(self.fake, "charts")
        outputs = dict(
            Generation.objects.filter(campaign=campaign).values_list("contender__name", "output")
        )
        assert outputs["vis-a"].endswith("[1 image]") and outputs["vis-b"].endswith("[1 image]")
        openai_part = self.fake.calls_for("vis-a")[0]["body"]["messages"][0]["content"][1]
        assert openai_part["type"] == "image_url"
        assert openai_part["image_url"]["url"].startswith("data:image/png;base64,")
        anthropic_part = self.fake.calls_for("vis-b")[0]["body"]["messages"][0]["content"][1]
        assert anthropic_part["type"] == "image"
        assert anthropic_part["source"]["type"] == "base64"
        assert anthropic_part["source"]["media_type"] == "image/png"
        stored = base64.b64decode(anthropic_part["source"]["data"])
        assert Image.open(io.BytesIO(stored)).size == (64, 48)

        users = personas()
        self.client.force_login(users["reviewer_a"])
        body = self.client.get(self.client.post("/review/charts/next").url).content.decode()
        assert "chart.png" not in body and 'class="task-image"' in body
        url = body.split('<img src="', 1)[1].split('"', 1)[0]
        assert url.startswith("/task-images/") and url.endswith(".png")
        image = self.client.get(url)
        assert image.status_code == 200 and image["Content-Type"] == "image/png"
        self.client.logout()
        assert self.client.get(url).status_code == 302  # a login first


@pytest.mark.browser
def test_a_reviewer_sees_the_image_beside_the_text_and_enlarges_it_by_keyboard(
    browser_page, transactional_db
):
    from tests.conftest import browser_login
    from tests.factories import UserFactory

    with FakeLLM() as fake, override_settings(GENERATION_READ_TIMEOUT=2):
        image_campaign(fake, "seen")
    reviewer = UserFactory(username="eyes", roles=["reviewer"])
    page = browser_page
    browser_login(page, reviewer.username, PASSWORD)
    page.goto("/review/seen/")
    start_focused = "document.activeElement?.textContent.includes('Start reviewing')"
    assert wait_until(page, lambda: page.evaluate(start_focused), seconds=15)
    page.keyboard.press("Enter")
    image = page.locator("#review .task-image img").first
    image.wait_for()
    assert image.evaluate("img => img.complete && img.naturalWidth") == 64
    assert "chart.png" not in page.content()
    button = page.locator("#review .task-image").first
    button.focus()
    page.keyboard.press("Enter")
    assert button.get_attribute("aria-pressed") == "true"
    assert "zoomed" in button.get_attribute("class")
    page.keyboard.press("Enter")
    assert button.get_attribute("aria-pressed") == "false"
    assert page.js_errors == []


@pytest.mark.django_db
def test_a_download_re_imports_as_identical():
    from tasks.intake.selectors import rows_as_jsonl, testset_export_rows

    files = {
        "tasks.jsonl": jsonl(row(1, QUESTION, {"type": "image", "path": "c.png"})),
        "c.png": png(5, 5),
    }
    first = import_testset(name="round", data=zipped(files), filename="round.zip").testset
    download = "".join(rows_as_jsonl(testset_export_rows(testset=first))).encode()
    assert b"c.png" not in download
    again = import_testset(name="round", data=download, filename="round.jsonl")
    assert not again.created and again.testset == first


@pytest.mark.django_db
def test_arbiters_see_the_images_beside_the_text(client):
    from tests.factories import CampaignFactory, TaskFactory
    from tests.reviews.test_arbitration import disputed_item

    users = personas()
    chart = image_checked(png(30, 20))
    from tasks.images.store import images_store

    images_store({chart.name: chart})
    campaign = CampaignFactory(slug="arb-img", name="Arb")
    part = {
        "type": "image",
        "image": chart.name,
        "media_type": "image/png",
        "width": 30,
        "height": 20,
    }
    task = TaskFactory(
        testset=campaign.testset,
        prompt="",
        messages=[{"role": "user", "content": [QUESTION, part]}],
    )
    disputed_item(campaign, users["reviewer_a"], users["reviewer_b"], task=task)
    client.force_login(users["arbiter"])
    page = client.get(client.post("/arbitration/arb-img/next").url).content.decode()
    assert f'<img src="/task-images/{chart.name}"' in page and "What does the chart show?" in page


@pytest.mark.django_db
def test_the_api_takes_a_zip_upload(client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from evalsite.models import ApiToken

    users = personas()
    files = {
        "tasks.jsonl": jsonl(row(1, QUESTION, {"type": "image", "path": "c.png"})),
        "c.png": png(),
    }
    response = client.post(
        "/api/v1/testsets",
        {"name": "api-zip", "file": SimpleUploadedFile("charts.zip", zipped(files))},
        headers={"Authorization": f"Bearer {ApiToken.issue(users['admin'])}"},
    )
    assert response.status_code == 201, response.content
    task = TestSet.objects.get(name="api-zip").tasks.get()
    assert task.messages[0]["content"][1]["media_type"] == "image/png"


@pytest.mark.django_db
def test_the_test_set_pages_show_an_image_task_without_its_file_name(client):
    users = personas()
    files = {
        "tasks.jsonl": jsonl(row(1, QUESTION, {"type": "image", "path": "secret-name.png"})),
        "secret-name.png": png(),
    }
    ts = import_testset(name="pages", data=zipped(files), filename="pages.zip").testset
    client.force_login(users["lead"])
    page = client.get(f"/testsets/{ts.name}/v{ts.version}/")
    body = page.content.decode()
    assert page.status_code == 200 and "secret-name" not in body
    assert "What does the chart show?" in body and "'type'" not in body
    image = ts.tasks.get().messages[0]["content"][1]["image"]
    assert f'<img src="/task-images/{image}"' in body


@pytest.mark.django_db
def test_the_upload_page_validates_a_zip_and_imports_it_on_confirm(client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tasks.intake.pending import SESSION_KEY

    users = personas()
    client.force_login(users["admin"])
    files = {
        "tasks.jsonl": jsonl(row(1, QUESTION, {"type": "image", "path": "c.png"})),
        "c.png": png(),
    }
    upload = SimpleUploadedFile("charts.zip", zipped(files))
    page = client.post("/testsets/upload/", {"name": "paged", "file": upload})
    assert page.status_code == 200 and "1 valid task" in page.content.decode()
    assert not TestSet.objects.exists()
    (token,) = client.session[SESSION_KEY].keys()
    done = client.post("/testsets/upload/", {"action": "confirm", "token": token})
    assert done.status_code == 302
    assert (
        TestSet.objects.get(name="paged").tasks.get().messages[0]["content"][1]["type"] == "image"
    )


@override_settings(GENERATION_READ_TIMEOUT=2, GENERATION_MAX_ATTEMPTS=2)
class TurnImageTests(TestCase):
    """A scripted user's turn may show an image too: sent at its turn, shown in its row."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fake = FakeLLM()

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    def test_an_image_in_a_turn_goes_out_at_that_turn_and_shows_in_its_row(self):
        turns = [
            "I will send you a chart.",
            [
                {"type": "text", "text": "Here it is: which bar is tallest?"},
                {"type": "image", "path": "turn-chart.png"},
            ],
        ]
        files = {
            "tasks.jsonl": jsonl({**row(1), "messages": None, "turns": turns}),
            "turn-chart.png": png(50, 40),
        }
        ts = import_testset(name="turnimg", data=zipped(files), filename="t.zip").testset
        stored = ts.tasks.get().turns
        assert stored[0] == turns[0] and stored[1][1]["type"] == "image"
        campaign, _ = campaign_create(
            definition={
                "slug": "turnimg",
                "testset": ts.name,
                "contenders": [
                    {
                        "name": "eye-1",
                        "provider": "openai",
                        "model": "eye-1",
                        "base_url": self.fake.base_url,
                    },
                    {
                        "name": "eye-2",
                        "provider": "anthropic",
                        "model": "eye-2",
                        "base_url": self.fake.base_url,
                    },
                ],
                "rubric": [{"key": "accuracy"}],
                "overlap": 1,
                "hold_identity_leaks": False,
            }
        )
        for gen in Generation.objects.filter(campaign=campaign):
            assert generation_run(generation_id=gen.pk).action == "done"
        first, second = self.fake.calls_for("eye-1")
        assert isinstance(first["body"]["messages"][-1]["content"], str)
        assert second["body"]["messages"][-1]["content"][1]["type"] == "image_url"
        anthropic = self.fake.calls_for("eye-2")[1]["body"]["messages"][-1]["content"]
        assert anthropic[1]["source"]["media_type"] == "image/png"
        users = personas()
        self.client.force_login(users["reviewer_a"])
        body = self.client.get(self.client.post("/review/turnimg/next").url).content.decode()
        assert "A conversation of 2 turns" in body and "turn-chart" not in body
        turn2 = body.split('data-turn-row="2"')[1].split("</section>")[0]
        assert "Here it is: which bar is tallest?" in turn2 and 'class="task-image"' in turn2
