"""An admin adds a reviewer on the users page in a real Chromium, and the reviewer logs in."""

from pathlib import Path

import pytest

from evalsite.models import ApiToken
from tests.conftest import browser_login
from tests.factories import PASSWORD, personas

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_adds_a_reviewer_who_then_logs_in(browser_page):
    personas()
    page = browser_page
    ARTIFACTS.mkdir(exist_ok=True)
    browser_login(page, "admin", PASSWORD)
    page.get_by_role("link", name="Users").click()
    page.get_by_role("heading", name="Users").wait_for()
    page.evaluate("window.__sameDocument = true")

    # Invalid first: the errors come back in the form, what was typed stays.
    page.fill("input[name=username]", "reviewer_a")
    page.fill("input[name=email]", "fatima@example.org")
    page.get_by_role("button", name="Create user").click()
    page.get_by_text("reviewer_a already exists: edit them instead.").wait_for()
    page.get_by_text("Roles: choose at least one").wait_for()
    assert page.input_value("input[name=email]") == "fatima@example.org"
    # Focus goes to the first field to fix.
    assert page.evaluate("document.activeElement.name") == "username"

    page.fill("input[name=username]", "fatima")
    page.get_by_label("reviewer: scores blind outputs").check()
    page.get_by_role("button", name="Create user").click()
    secret = page.locator("[data-created] [data-secret]")
    secret.wait_for()
    password = secret.inner_text().strip()
    assert len(password) >= 12
    # The new row is in the table, and nothing reloaded the page.
    page.locator('tr[data-user="fatima"]').wait_for()
    assert "reviewer" in page.inner_text('tr[data-user="fatima"]')
    assert page.evaluate("window.__sameDocument") is True
    page.screenshot(path=str(ARTIFACTS / "users-created.png"), full_page=True)

    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(ARTIFACTS / "users-phone.png"), full_page=True)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the users page scrolls sideways on a phone ({width}px)"
    page.set_viewport_size({"width": 1280, "height": 900})

    # A filter pushes its URL; Back brings the unfiltered list back as a whole page.
    page.select_option("select[name=role]", "arbiter")
    page.wait_for_url("**/users/?*role=arbiter*")
    page.locator('tr[data-user="fatima"]').wait_for(state="detached")
    # A user created while the list is filtered: the list keeps its filter.
    page.fill("input[name=username]", "omar")
    page.get_by_label("arbiter: settles disputed items").check()
    page.get_by_role("button", name="Create user").click()
    page.locator('tr[data-user="omar"]').wait_for()
    assert page.locator('tr[data-user="reviewer_a"]').count() == 0
    assert page.evaluate("document.activeElement.matches('[data-created]')")
    # Saving an edit returns to the same filtered list.
    page.get_by_role("link", name="Edit omar").first.click()
    page.get_by_role("button", name="Save").click()
    page.wait_for_url("**/users/?role=arbiter")
    page.get_by_text("omar saved.").wait_for()
    # Back after another filter restores the previous filter's list, as a whole page.
    page.select_option("select[name=role]", "reviewer")
    page.locator('tr[data-user="fatima"]').wait_for()
    page.go_back()
    page.wait_for_url("**/users/?role=arbiter")
    page.locator('tr[data-user="fatima"]').wait_for(state="detached")
    page.locator('tr[data-user="omar"]').wait_for()
    assert page.get_by_role("heading", name="Users").count() == 1
    assert page.locator("section", has_text="New user").count() == 1

    page.get_by_role("link", name="Clear").click()
    page.get_by_role("link", name="Edit fatima").first.click()
    page.get_by_role("heading", name="fatima").wait_for()
    page.screenshot(path=str(ARTIFACTS / "user-edit.png"), full_page=True)

    page.get_by_role("button", name="Log out").click()
    browser_login(page, "fatima", password)
    page.get_by_role("heading", name="My reviews").wait_for()
    assert page.get_by_role("link", name="Users").count() == 0
    # Her own API token, from her account page (her name in the top bar).
    page.get_by_role("link", name="fatima").click()
    page.get_by_role("heading", name="My account").wait_for()
    page.get_by_role("button", name="Issue a new token").click()
    token = page.locator("[data-secret-kind=token] [data-secret]").inner_text().strip()
    assert token.startswith("es_")
    page.screenshot(path=str(ARTIFACTS / "account.png"), full_page=True)
    # Reloading the page does not issue another token, nor show this one again.
    page.reload()
    page.get_by_role("heading", name="My account").wait_for()
    assert page.locator("[data-secret]").count() == 0
    assert ApiToken.objects.filter(user__username="fatima").count() == 1
    assert page.js_errors == [], "\n".join(page.js_errors)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_reloading_a_new_password_shows_the_user_page_and_makes_no_other(browser_page):
    users = personas()
    page = browser_page
    page.on("dialog", lambda dialog: dialog.accept())
    browser_login(page, "admin", PASSWORD)
    page.goto(f"/users/{users['reviewer_a'].pk}/?role=reviewer")
    page.get_by_role("button", name="Generate a new password").click()
    password = page.locator("[data-secret-kind=password] [data-secret]").inner_text().strip()
    # The answer to the POST /users/N/password: a reload must not GET that action (405, a
    # blank page) nor post it again (another password, the one just handed out dead).
    page.reload()
    page.get_by_role("heading", name="reviewer_a").wait_for()
    assert page.url.endswith(f"/users/{users['reviewer_a'].pk}/?role=reviewer")
    assert page.locator("[data-secret]").count() == 0
    page.context.clear_cookies()
    browser_login(page, "reviewer_a", password)
    page.get_by_role("heading", name="My reviews").wait_for()
    assert page.js_errors == [], "\n".join(page.js_errors)
