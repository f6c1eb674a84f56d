"""Personal data in an upload, in a real Chromium: listed by line and field, masked on confirm."""

from pathlib import Path

import pytest

from tasks.models import Task, TestSet
from tests.conftest import browser_login
from tests.factories import PASSWORD, personas
from tests.tasks.test_pii import PII_FILE

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1280, 390])
def test_an_admin_sees_the_personal_data_and_masks_it_consistently(browser_page, tmp_path, width):
    personas()
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    path = tmp_path / "support.jsonl"
    path.write_bytes(PII_FILE)
    browser_login(page, "admin", PASSWORD)
    page.goto("/testsets/upload/")
    page.fill("input[name=name]", "support")
    page.set_input_files("input[name=file]", str(path))
    page.get_by_role("button", name="Validate").click()
    page.get_by_text("Personal data: 7 places").wait_for()
    rows = page.locator(".pii-table tbody tr").all_inner_texts()
    assert rows[0].split("\t") == [
        "1",
        "prompt",
        "email address: Jane.Doe@example.com",
        "<EMAIL_1>",
    ]
    # The same address in another task, another case: the same placeholder.
    assert rows[3].split("\t") == [
        "2",
        "messages[1].content",
        "email address: jane.doe@example.com",
        "<EMAIL_1>",
    ]
    # Nothing scrolls sideways on a phone but the table's own box.
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"testset-upload-pii-{width}.png"), full_page=True)
    assert not TestSet.objects.exists()

    page.get_by_role("button", name="Mask and import as support v1").click()
    page.wait_for_url("**/testsets/support/v1/")
    page.get_by_text("Personal data: 7 pieces masked.").wait_for()
    assert "masked with placeholders" in page.inner_text(".pii-decision")
    assert "by admin (upload page)" in page.inner_text(".pii-decision")
    prompts = dict(Task.objects.values_list("external_id", "prompt"))
    assert prompts["T-1"] == "Please change my email from <EMAIL_1> to <EMAIL_2>."
    assert Task.objects.get(external_id="T-2").messages[1]["content"].endswith("<EMAIL_1>")
    assert page.js_errors == []
