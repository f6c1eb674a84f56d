"""The rubric builder in a real Chromium: a rubric built without typing YAML, then reviewed."""

import json

import pytest

from reviews.models import Review, Score
from tasks.generation.outputs_import import outputs_import
from tasks.models import Campaign, Contender
from tests.conftest import browser_login, wait_until
from tests.factories import PASSWORD, TaskFactory, TestSetFactory, personas


def preview_legends(page) -> list[str]:
    return [
        t.strip() for t in page.locator("#rubric-preview fieldset.dim legend").all_inner_texts()
    ]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_builds_a_rubric_without_yaml_and_a_reviewer_scores_with_it(browser_page):
    personas()
    ts = TestSetFactory(name="snippets", frozen=False, task_count=2)
    for i in range(2):
        TaskFactory(testset=ts, position=i, external_id=f"T-{i}", prompt=f"Write function {i}.")
    for name in ("alpha", "beta"):
        Contender.objects.create(name=name, provider="imported")
    page = browser_page

    browser_login(page, "admin", PASSWORD)
    page.goto("/campaigns/new/")
    page.fill("input[name=slug]", "code-q1")
    page.select_option("select[name=testset]", str(ts.pk))
    page.check("text=alpha")
    page.check("text=beta")
    page.check("input[name=reviewers_all]")  # the roster starts empty
    # The form starts with a rubric and its preview; pick the coding template instead.
    assert preview_legends(page)[0].startswith("Accuracy")
    page.select_option("#rubric-template", "coding")
    page.get_by_role("button", name="Use template").click()
    page.get_by_text("Rows replaced by the Coding template.").wait_for()
    assert page.input_value("input[name=rubric-0-key]") == "correctness"

    # Edit a row: a new label (its key stays), and one anchor rewritten.
    page.fill("input[name=rubric-0-label]", "Works as asked")
    page.fill("input[name=rubric-0-anchor-5]", "correct on every input tried")
    # Remove the explanation question with the keyboard.
    page.get_by_role("button", name="Remove question 4").focus()
    page.keyboard.press("Enter")
    assert page.locator("[data-rubric-row]").count() == 3

    # Add a question: the key follows the label, the anchors follow the scale.
    page.get_by_role("button", name="+ Add a question").click()
    assert page.evaluate("document.activeElement.name") == "rubric-3-label"
    page.keyboard.type("Security")
    assert page.input_value("input[name=rubric-3-key]") == "security"
    page.fill("input[name=rubric-3-min]", "0")
    page.fill("input[name=rubric-3-max]", "2")
    anchors = page.locator("[data-rubric-row]").nth(3).locator("[data-anchor-list] input")
    assert anchors.count() == 3
    page.fill("input[name=rubric-3-anchor-0]", "exploitable")
    page.fill("input[name=rubric-3-anchor-2]", "no known hole")
    page.check("input[name=rubric-3-allow_na]")
    # Alt+Up moves it above "Code quality".
    page.focus("input[name=rubric-3-label]")
    page.keyboard.press("Alt+ArrowUp")
    assert page.input_value("input[name=rubric-2-key]") == "security"

    # The preview is the review page's own grid, updated as typed.
    assert wait_until(
        page,
        lambda: (
            preview_legends(page)
            == ["Works as asked (1–5)", "Edge cases (1–5)", "Security (0–2)", "Code quality (1–5)"]
        ),
        8,
    ), preview_legends(page)
    preview = page.locator("#rubric-preview")
    assert preview.locator("label.point[title='no known hole']").count() == 2  # outputs A and B
    assert preview.locator("input[name=score-B-security][value=na]").count() == 1

    # A mistake is said at its field while typing, and fixed there.
    page.fill("input[name=rubric-1-max]", "0")
    error = page.locator("#rubric-1-max-error")
    assert wait_until(page, lambda: error.inner_text() == "Max must be greater than min", 8)
    invalid = "input[name=rubric-1-max][aria-invalid=true]"
    assert wait_until(page, lambda: page.locator(invalid).count() == 1)
    page.fill("input[name=rubric-1-max]", "5")
    assert wait_until(page, lambda: error.inner_text() == "", 8)

    page.get_by_role("button", name="Create campaign").click()
    page.wait_for_url("**/campaigns/code-q1/")
    campaign = Campaign.objects.get(slug="code-q1")
    assert [d["key"] for d in campaign.rubric] == [
        "correctness",
        "edge_cases",
        "security",
        "code_quality",
    ]
    security = campaign.rubric[2]
    assert (security["min"], security["max"], security["allow_na"]) == (0, 2, True)
    assert security["anchors"] == {"0": "exploitable", "2": "no known hole"}
    assert campaign.rubric[0]["anchors"]["5"] == "correct on every input tried"

    # Outputs arrive (imported), and a reviewer scores an item with this rubric.
    for name in ("alpha", "beta"):
        lines = [
            json.dumps({"task_id": f"T-{i}", "sample": 0, "output": f"def f{i}(): return {i}"})
            for i in range(2)
        ]
        outputs_import(campaign=campaign, contender_name=name, raw="\n".join(lines).encode())
    page.context.clear_cookies()
    browser_login(page, "reviewer_a", PASSWORD)
    page.goto("/review/code-q1/")
    focused = "() => document.activeElement?.textContent || ''"
    assert wait_until(page, lambda: "Start reviewing" in page.evaluate(focused))
    page.keyboard.press("Enter")
    page.wait_for_selector("#review [data-cell].focused")
    legends = [t.strip() for t in page.locator("#review fieldset.dim legend").all_inner_texts()]
    assert legends[:4] == preview_legends_of_campaign(campaign)
    for key in ("4", "4", "3", "5", "2", "1", "5", "4"):  # each dimension, outputs A then B
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-notice=ok]")  # saved, and the next item is on the page
    assert wait_until(page, lambda: Review.objects.filter(item__campaign=campaign).exists(), 8)
    review = Review.objects.get(item__campaign=campaign)
    assert review.reviewer.username == "reviewer_a"
    given = sorted(
        Score.objects.filter(review=review, dimension="security").values_list("value", flat=True)
    )
    assert given == [1, 2]
    assert Score.objects.filter(review=review).count() == 8
    assert page.js_errors == []


def preview_legends_of_campaign(campaign) -> list[str]:
    return [f"{d['label']} ({d['min']}–{d['max']})" for d in campaign.rubric]
