"""A reviewer's session ends while they score an item (logged out elsewhere, sessions lost):
nothing they entered is lost, the page says what to do, and after logging in again in another
tab the same submit goes through."""

import pytest

from reviews.models import Assignment
from tests.conftest import browser_login, wait_until
from tests.factories import PASSWORD, UserFactory, campaign_ready


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_submit_after_the_session_ended_keeps_the_answers_and_goes_through_after_login(
    browser_page,
):
    page = browser_page
    campaign = campaign_ready(items=2, overlap=1)
    reviewer = UserFactory(username="late-reviewer", roles=["reviewer"])
    browser_login(page, reviewer.username, PASSWORD)
    page.goto(f"/review/{campaign.slug}/")
    page.wait_for_selector("button[autofocus]:focus")
    page.keyboard.press("Enter")  # Start reviewing
    page.wait_for_selector("#review [data-cell].focused")
    prompt = page.inner_text("#review .task .prompt")
    for key in ["4", "5", "3", "4", "2"]:
        page.keyboard.press(key)
    page.fill("#review-form textarea[name=comment]", "Kept through a lost session.")

    page.context.clear_cookies(name="sessionid")
    page.keyboard.press("Escape")  # out of the comment, back to the grid
    page.keyboard.press("Enter")

    problem = page.locator("#request-problem")
    problem.wait_for(state="visible")
    assert "session has ended" in problem.inner_text()
    login_link = problem.get_by_role("link", name="Log in again (opens a new tab)")
    assert login_link.get_attribute("target") == "_blank"
    # Not pasted over: the same item, every choice and the comment still there.
    assert page.inner_text("#review .task .prompt") == prompt
    assert page.locator("#review input:checked").count() == 5
    assert page.input_value("#review-form textarea[name=comment]") == "Kept through a lost session."
    assert "Not saved yet" in page.inner_text("#review [data-status]")
    assert not Assignment.objects.filter(reviewer=reviewer, state="submitted").exists()

    # Logging in again in another tab rotates the CSRF token; the open page still submits.
    with page.context.expect_page() as opened:
        login_link.click()
    other = opened.value
    other.fill("input[name=username]", reviewer.username)
    other.fill("input[name=password]", PASSWORD)
    other.click("button[type=submit]")
    other.wait_for_url(lambda url: "/login/" not in url)
    other.close()

    page.bring_to_front()
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-notice=ok]")
    assert wait_until(page, lambda: problem.is_hidden())
    saved = Assignment.objects.get(reviewer=reviewer, state="submitted")
    assert saved.review.comment == "Kept through a lost session."
    # The browser and htmx log the refused request itself; nothing else went wrong.
    assert page.js_errors and all("401" in e for e in page.js_errors), page.js_errors
