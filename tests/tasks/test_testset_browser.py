"""The upload flow in a real Chromium: htmx under the strict CSP, validate -> fix -> confirm."""

import json
from pathlib import Path

import pytest

from tasks.models import TestSet
from tests.conftest import browser_login
from tests.factories import PASSWORD, personas

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def row(i: int, **extra) -> str:
    return json.dumps(
        {
            "external_id": f"T-{i}",
            "category": "billing",
            "tier": "base",
            "case_type": "typical",
            "prompt": f"Question {i}",
            **extra,
        }
    )


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_uploads_sees_every_error_fixes_the_file_and_confirms(browser_page, tmp_path):
    personas()
    page = browser_page
    errors = page.js_errors
    ARTIFACTS.mkdir(exist_ok=True)
    bad, good = tmp_path / "support.jsonl", tmp_path / "support-fixed.jsonl"
    bad.write_text(row(1) + "\n" + row(2, tier="expert") + "\n" + row(1) + "\n")
    good.write_text("\n".join(row(i) for i in range(1, 4)) + "\n")

    browser_login(page, "admin", PASSWORD)
    page.goto("/testsets/upload/")
    page.fill("input[name=name]", "support")
    page.set_input_files("input[name=file]", str(bad))
    page.get_by_role("button", name="Validate").click()
    page.get_by_text("2 problems in support.jsonl").wait_for()
    assert "line 2, field tier: unknown value 'expert'" in page.inner_text(".intake-errors")
    assert "line 3, field external_id: duplicate 'T-1' (first used on line 1)" in page.inner_text(
        ".intake-errors"
    )
    assert page.locator("button[value=confirm]").count() == 0
    page.screenshot(path=str(ARTIFACTS / "testset-upload-errors.png"), full_page=True)
    assert not TestSet.objects.exists()

    page.fill("input[name=name]", "support")
    page.set_input_files("input[name=file]", str(good))
    page.get_by_role("button", name="Validate").click()
    page.get_by_text("support-fixed.jsonl: 3 valid tasks").wait_for()
    assert not TestSet.objects.exists()  # nothing before confirm
    page.get_by_role("button", name="Import as support v1").click()
    page.wait_for_url("**/testsets/support/v1/")
    page.get_by_text("Imported support v1: 3 tasks.").wait_for()
    assert TestSet.objects.get(name="support").task_count == 3

    # The filter form swaps only the table (htmx) and keeps the URL shareable.
    page.fill("input[name=q]", "Question 2")
    page.get_by_text("1 task match").wait_for()
    assert "q=Question%202" in page.url
    page.screenshot(path=str(ARTIFACTS / "testset-detail.png"), full_page=True)
    assert errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_file_over_the_limit_is_refused_before_it_is_sent(browser_page, settings, tmp_path):
    personas()
    settings.TESTSET_MAX_BYTES = 1000
    page = browser_page
    big = tmp_path / "big.jsonl"
    big.write_text("\n".join(row(i) for i in range(40)) + "\n")  # about 4 kB
    browser_login(page, "admin", PASSWORD)
    page.goto("/testsets/upload/")
    page.fill("input[name=name]", "support")
    page.set_input_files("input[name=file]", str(big))
    message = page.eval_on_selector("input[name=file]", "el => el.validationMessage")
    size = f"{big.stat().st_size:,} bytes"
    assert message == f"This file is {size}; the limit is 1,000 bytes. Choose a smaller file."
    page.get_by_role("button", name="Validate").click()
    # Not sent: the name is still there and nothing came back.
    assert page.input_value("input[name=name]") == "support"
    assert page.locator(".upload-result").count() == 0
    small = tmp_path / "small.jsonl"
    small.write_text(row(1) + "\n")
    page.set_input_files("input[name=file]", str(small))
    assert page.eval_on_selector("input[name=file]", "el => el.validationMessage") == ""
    page.get_by_role("button", name="Validate").click()
    page.get_by_text("small.jsonl: 1 valid task").wait_for()
    assert page.js_errors == []
