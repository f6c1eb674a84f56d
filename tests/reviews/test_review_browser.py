"""Two reviewers in a real Chromium, keyboard only (Playwright + Debian's chromium)."""

from pathlib import Path

import pytest

from reviews import review as services
from reviews.models import Assignment, ReviewItem
from tasks.models import Task
from tests.conftest import arrows_scroll, browser_login, wait_until
from tests.factories import PASSWORD, UserFactory, campaign_ready

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
# The unsaved answers this browser keeps (review and arbitration drafts).
DRAFTS = "Object.keys(localStorage).filter((k) => k.startsWith('evalsite-draft:'))"


def start_reviewing(page):
    """Enter on the autofocused "Start reviewing" button. Chromium may apply autofocus after
    the load event, so wait for the focus first: a key pressed before it goes nowhere."""
    start_focused = "document.activeElement?.textContent.includes('Start reviewing')"
    assert wait_until(page, lambda: page.evaluate(start_focused), seconds=15)
    page.keyboard.press("Enter")
    page.wait_for_selector("#review [data-cell].focused")  # the first item, ready for keys


def review_first_item(page, campaign, username: str):
    """A new reviewer, logged in, on the first item of `campaign` (keyboard ready)."""
    reviewer = UserFactory(username=username, roles=["reviewer"])
    browser_login(page, reviewer.username, PASSWORD)
    page.goto(f"/review/{campaign.slug}/")
    start_reviewing(page)
    return reviewer


def arrange_opposite_orders(campaign, first, second):
    """Give the two items shuffle keys at the two reviewers' offsets: each reviewer's order
    starts at their own offset, so one gets [x, y] and the other [y, x]."""
    offsets = sorted(
        services.shuffle_offset(campaign=campaign, reviewer=u) for u in (first, second)
    )
    assert offsets[0] != offsets[1]
    for key, item in zip(
        offsets, ReviewItem.objects.filter(campaign=campaign).order_by("pk"), strict=True
    ):
        ReviewItem.objects.filter(pk=item.pk).update(shuffle_key=key)


def item_fingerprint(page):
    """(prompt, output texts in label order) as the reviewer sees them."""
    prompt = page.inner_text("#review .task .prompt").strip()
    outputs = [t.strip() for t in page.locator("#review .output-body").all_inner_texts()]
    return prompt, outputs


def review_with_keyboard(page, keys):
    page.wait_for_selector("#review [data-cell].focused")
    for key in keys:
        page.keyboard.press(key)
    page.keyboard.press("Enter")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_two_reviewers_complete_items_with_the_keyboard_only(browser_page, live_server):
    page = browser_page
    campaign = campaign_ready(
        items=2, overlap=2, name="Support answers", instructions="Judge *accuracy* first."
    )
    first = UserFactory(username="kb-reviewer-1", roles=["reviewer"])
    second = UserFactory(username="kb-reviewer-2", roles=["reviewer"])
    arrange_opposite_orders(campaign, first, second)
    ARTIFACTS.mkdir(exist_ok=True)

    browser_login(page, first.username, PASSWORD)
    page.goto(f"/review/{campaign.slug}/")
    page.wait_for_selector("button[autofocus]:focus")
    start_reviewing(page)
    page.evaluate("window.__sameDocument = true")

    # `?` shows the shortcuts, `?` again hides them.
    page.keyboard.press("?")
    assert page.locator("dialog#shortcuts").is_visible()
    page.keyboard.press("?")
    assert not page.locator("dialog#shortcuts").is_visible()
    # `i` opens the campaign's instructions and closes them again.
    instructions = page.locator("#review details.instructions")
    assert not instructions.locator("em", has_text="accuracy").is_visible()
    page.keyboard.press("i")
    assert instructions.locator("em", has_text="accuracy").is_visible()
    assert page.evaluate("document.activeElement.matches('[data-cell]')")  # digits still score
    page.keyboard.press("i")
    assert not instructions.locator("em", has_text="accuracy").is_visible()

    # Enter with nothing scored: inline errors, nothing saved, still the same document.
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-notice=error]")
    assert page.locator("#review [data-error]").count() == 5
    assert Assignment.objects.filter(reviewer=first, state="submitted").count() == 0

    page.set_viewport_size({"width": 1280, "height": 800})
    page.screenshot(path=str(ARTIFACTS / "review-1280x800.png"))
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(ARTIFACTS / "review-390x844.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})

    seen_by_first = [item_fingerprint(page)]
    # A-accuracy 4, B-accuracy 5, A-completeness 3, B-completeness 4, preference: 2nd choice (B).
    # In a short window scoring scrolls down to the form...
    page.set_viewport_size({"width": 1280, "height": 400})
    page.wait_for_selector("#review [data-cell].focused")
    for key in ["4", "5", "3", "4", "2"]:
        page.keyboard.press(key)
    assert page.evaluate("window.scrollY") > 0
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-notice=ok]")
    # ...and the next item opens at its top (the notice and the task in view), not down there.
    assert wait_until(page, lambda: page.evaluate("() => window.scrollY") == 0)
    page.set_viewport_size({"width": 1280, "height": 800})
    assert page.evaluate("window.__sameDocument") is True  # swapped in, no page load
    seen_by_first.append(item_fingerprint(page))
    assert seen_by_first[1][0] != seen_by_first[0][0]
    # Arrow keys and vim keys move too: down to completeness, back up, across.
    review_with_keyboard(page, ["2", "2", "j", "k", "l", "h", "x", "5", "ArrowDown", "3"])
    page.wait_for_selector("[data-finished]")
    assert page.evaluate("window.__sameDocument") is True
    assert "Your queue is finished" in page.inner_text("#review")

    submitted = Assignment.objects.filter(reviewer=first, state="submitted")
    assert submitted.count() == 2
    scores = {
        (a.item_id, s.output_id, s.dimension): s.value
        for a in submitted
        for s in a.review.scores.all()
    }
    one = submitted.get(item__task__prompt=seen_by_first[0][0])
    a_out, b_out = one.order
    assert (
        scores[(one.item_id, a_out, "accuracy")] == 4
        and scores[(one.item_id, b_out, "accuracy")] == 5
    )
    assert one.review.preferred_output_id == b_out
    two = submitted.get(item__task__prompt=seen_by_first[1][0])
    assert scores[(two.item_id, two.order[0], "completeness")] is None  # "x" = N/A
    assert two.review.preference == "tie"

    # The second reviewer: same items, another order of items and of outputs.
    context = page.context.browser.new_context(
        base_url=live_server.url, viewport={"width": 1280, "height": 800}
    )
    other = context.new_page()
    other.set_default_timeout(15000)
    browser_login(other, second.username, PASSWORD)
    other.goto(f"/review/{campaign.slug}/")
    other.wait_for_selector("button[autofocus]:focus")
    other.keyboard.press("Enter")
    other.wait_for_selector("#review-form")
    seen_by_second = [item_fingerprint(other)]
    review_with_keyboard(other, ["3", "3", "3", "3", "3"])
    other.wait_for_selector("[data-notice=ok]")
    seen_by_second.append(item_fingerprint(other))
    review_with_keyboard(other, ["4", "4", "4", "4", "4"])
    other.wait_for_selector("[data-finished]")
    context.close()

    prompts_first = [p for p, _ in seen_by_first]
    prompts_second = [p for p, _ in seen_by_second]
    assert sorted(prompts_first) == sorted(prompts_second) and prompts_first != prompts_second
    outputs_first = dict(seen_by_first)
    for prompt, outputs in seen_by_second:
        assert sorted(outputs) == sorted(outputs_first[prompt])
        assert (
            outputs != outputs_first[prompt]
        )  # counterbalanced: B sees the pair the other way round
    for item in ReviewItem.objects.filter(campaign=campaign):
        assert item.submitted_count == 2 and item.state in ("agreed", "disputed")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_home_action_fits_a_phone_and_an_output_scrolls_with_the_arrows(
    browser_page, live_server
):
    page = browser_page
    long_text = "\n\n".join(f"Paragraph {n} of a long answer." for n in range(80))
    campaign = campaign_ready(items=1, overlap=1, outputs=[long_text, long_text])
    reviewer = UserFactory(username="kb-scroller", roles=["reviewer"])
    browser_login(page, reviewer.username, PASSWORD)
    # On a phone the home's action is in view, not in a table column off to the right.
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/review/")
    box = page.get_by_role("button", name="Start reviewing").bounding_box()
    assert box and box["x"] + box["width"] <= 390, box
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"/review/{campaign.slug}/")
    page.wait_for_selector("button[autofocus]:focus")
    start_reviewing(page)
    pane = page.locator("#review .output-body").first
    assert arrows_scroll(page, pane)
    # the keys scrolled the pane and did not move between questions
    assert page.evaluate("document.activeElement.classList.contains('output-body')")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_back_to_the_campaign_page_shows_counts_after_the_review_just_done(
    browser_page, live_server
):
    """Back from the review page lands on the campaign's entry page. Restored from the
    browser's cache it would still say nothing was reviewed; it is fetched again, and, with
    the next item open, it resumes that item with the count that includes the one just done."""
    page = browser_page
    campaign = campaign_ready(items=2, overlap=1)
    reviewer = UserFactory(username="kb-back", roles=["reviewer"])
    browser_login(page, reviewer.username, PASSWORD)
    page.goto(f"/review/{campaign.slug}/")
    page.get_by_text("You have reviewed 0 items here.").wait_for()
    start_reviewing(page)
    review_with_keyboard(page, ["4", "5", "3", "4", "2"])
    page.wait_for_selector("[data-notice=ok]")
    assert Assignment.objects.filter(reviewer=reviewer, state="submitted").count() == 1
    open_item = Assignment.objects.get(reviewer=reviewer, state="active")
    page.go_back()
    page.wait_for_url(f"**/review/{campaign.slug}/{open_item.token}/")
    page.get_by_text("Done by you: 1").wait_for()
    assert page.get_by_text("You have reviewed 0 items here.").count() == 0


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_screen_reader_hears_saved_and_the_finished_queue(browser_page, live_server):
    """The notice comes with the swapped-in item, and a live region that arrives together
    with its text is not read out: the page keeps one region for it across the swaps."""
    page = browser_page
    campaign = campaign_ready(items=2, overlap=1)
    review_first_item(page, campaign, "sr-reviewer")
    page.evaluate("window.__region = document.querySelector('[role=status][data-announce]')")

    def announced():
        return page.evaluate("window.__region.isConnected && window.__region.textContent")

    review_with_keyboard(page, ["4", "5", "3", "4", "2"])
    page.wait_for_selector("[data-notice=ok]")
    assert wait_until(page, lambda: announced() == "Saved.")
    # Only the kept region speaks; the swapped-in notice would say it twice where it is heard.
    assert page.get_attribute("[data-notice=ok]", "role") is None
    review_with_keyboard(page, ["4", "4", "4", "4", "1"])
    page.wait_for_selector("[data-finished]")
    assert wait_until(page, lambda: "Your queue is finished" in (announced() or ""))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_reviewer_skips_with_the_keyboard_only(browser_page, live_server):
    page = browser_page
    campaign = campaign_ready(items=2, overlap=1)
    reviewer = review_first_item(page, campaign, "kb-skipper")
    first = Assignment.objects.get(reviewer=reviewer, state="active")
    page.keyboard.press("4")  # an answer, kept as a draft until the item is skipped
    assert page.evaluate(DRAFTS) == [f"evalsite-draft:review:{first.token}"]
    page.keyboard.press("s")
    assert page.evaluate("document.activeElement.matches('[data-skip-reason]')")
    page.keyboard.press("Enter")  # no reason yet: the browser asks for one, nothing is sent
    page.wait_for_timeout(300)
    first.refresh_from_db()
    assert first.state == "active"
    page.keyboard.press("ArrowDown")  # the first reason
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-notice=ok]")
    assert "Skipped" in page.inner_text("[data-notice=ok]")
    first.refresh_from_db()
    assert first.state == "skipped" and first.skip_reason
    assert page.evaluate(DRAFTS) == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_code_in_an_output_keeps_its_lines(browser_page, live_server):
    """A wrapped code line reads as a new, unindented line: the block scrolls instead."""
    page = browser_page
    code = "```python\nfor line in f:\n    print(line)  # " + "a long comment " * 12 + "\n```"
    campaign = campaign_ready(items=1, overlap=1, outputs=[code, "No code."])
    reviewer = UserFactory(username="kb-coder", roles=["reviewer"])
    browser_login(page, reviewer.username, PASSWORD)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/review/{campaign.slug}/")
    page.get_by_role("button", name="Start reviewing").click()
    block = page.locator("#review .output-body pre").first
    block.wait_for()
    lines = block.evaluate(
        "el => Math.round(el.getClientRects()[0].height / parseFloat(getComputedStyle(el).lineHeight))"
    )
    assert lines <= 3, lines  # two lines of code and the padding, not a wrapped comment
    assert block.evaluate("el => el.scrollWidth > el.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # the page does not


def review_form_state(page):
    """The review form's answers: checked radios and checkboxes, and the comment."""
    return page.evaluate(
        """() => {
          const f = document.getElementById('review-form');
          const on = Array.from(f.querySelectorAll('input:checked'), (i) => `${i.name}=${i.value}`);
          return {checked: on.sort(), comment: f.querySelector('[data-comment]').value};
        }"""
    )


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_unsaved_answers_come_back_after_a_reload_and_go_once_submitted(browser_page, live_server):
    page = browser_page
    campaign = campaign_ready(items=2, overlap=1)
    reviewer = review_first_item(page, campaign, "kb-drafter")
    first = Assignment.objects.get(reviewer=reviewer, state="active")
    # Two scores with the keyboard, a flag with the mouse, a comment.
    page.keyboard.press("4")
    page.keyboard.press("5")
    page.keyboard.press("f")
    page.locator("details.flags input[type=checkbox]").first.check()
    page.keyboard.press("Escape")
    page.keyboard.press("c")
    page.keyboard.type("A's tone is off.")
    typed = review_form_state(page)
    assert len(typed["checked"]) == 3 and typed["comment"] == "A's tone is off."

    page.reload()
    page.wait_for_selector("#review [data-cell].focused")
    assert review_form_state(page) == typed
    status = page.locator("#review-form [data-status]")
    assert status.inner_text() == "Your unsaved answers to this item were restored."
    assert status.get_attribute("role") == "status"
    # Kept under the item's random token; no submit key, no time spent.
    assert page.evaluate(DRAFTS) == [f"evalsite-draft:review:{first.token}"]
    stored = page.evaluate(f"localStorage.getItem('evalsite-draft:review:{first.token}')")
    assert "submit_key" not in stored and "seconds_spent" not in stored
    # The keyboard goes on where the answers stop: the next questions, then submit.
    for key in ["3", "4", "2"]:
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-notice=ok]")
    first.refresh_from_db()
    assert first.state == "submitted" and first.review.comment == "A's tone is off."
    # The next item starts empty, says nothing about a restore, and the draft is gone.
    assert review_form_state(page) == {"checked": [], "comment": ""}
    assert page.locator("#review-form [data-status]").inner_text() == ""
    assert page.evaluate(DRAFTS) == []
    # Logging out leaves nothing typed behind on a shared computer.
    page.keyboard.press("4")
    assert len(page.evaluate(DRAFTS)) == 1
    page.click("form.logout button")
    page.wait_for_url("**/login/**")
    assert page.evaluate(DRAFTS) == []
    assert page.js_errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_stale_draft_or_no_storage_does_not_break_the_review_page(browser_page, live_server):
    page = browser_page
    campaign = campaign_ready(items=2, overlap=1)
    reviewer = review_first_item(page, campaign, "kb-stale")
    token = Assignment.objects.get(reviewer=reviewer, state="active").token
    # A draft from before the rubric changed: a dimension that is gone, a value off the scale,
    # a flag that no longer exists; and one answer that still fits.
    stale = {
        "score-A-tone": ["3"],
        "score-A-accuracy": ["99"],
        "score-B-accuracy": ["2"],
        "flag-A": ["no_such_flag"],
        "comment": "Still here.",
    }
    page.evaluate(
        "([key, fields]) => localStorage.setItem(key, JSON.stringify({at: Date.now(), fields}))",
        [f"evalsite-draft:review:{token}", stale],
    )
    # ...and one older than the age limit, which is dropped on the next page load.
    page.evaluate(
        "localStorage.setItem('evalsite-draft:review:old', JSON.stringify({at: 1, fields: {}}))"
    )
    page.reload()
    page.wait_for_selector("#review [data-cell].focused")
    assert review_form_state(page) == {
        "checked": ["score-B-accuracy=2"],
        "comment": "Still here.",
    }
    assert page.evaluate(DRAFTS) == [f"evalsite-draft:review:{token}"]
    # The marked questions are the ones still open: the off-scale value is not an answer.
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-notice=error]")
    assert page.locator("#review [data-error]").count() == 4  # of 5

    # No storage at all (private mode, refused): the page works as before, silently.
    page.add_init_script(
        "Object.defineProperty(window, 'localStorage', {get() { throw new DOMException('no', 'SecurityError'); }})"
    )
    page.reload()
    page.wait_for_selector("#review [data-cell].focused")
    assert review_form_state(page) == {"checked": [], "comment": ""}
    for key in ["4", "5", "3", "4", "2"]:
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-notice=ok]")
    assert Assignment.objects.filter(reviewer=reviewer, state="submitted").count() == 1
    assert page.js_errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_task_box_is_a_focus_stop_that_scrolls_with_the_arrows(browser_page, live_server):
    page = browser_page
    campaign = campaign_ready(items=1, overlap=1)
    long_prompt = "\n\n".join(f"Paragraph {n} of a long question." for n in range(80))
    Task.objects.filter(review_items__campaign=campaign).update(prompt=long_prompt)
    review_first_item(page, campaign, "kb-task-scroller")
    box = page.get_by_label("Task text")
    assert box.get_attribute("tabindex") == "0"
    assert box.evaluate("el => el.scrollHeight > el.clientHeight")  # clipped
    assert arrows_scroll(page, box)
    # the keys scrolled the box and did not move between questions
    assert page.evaluate("document.activeElement.matches('.task .prompt')")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_question_reached_with_tab_is_the_one_the_digits_score(browser_page, live_server):
    """Tab (or a click) into another question moves the highlight there: a digit scores the
    question that has the focus, not the one highlighted before."""
    page = browser_page
    campaign = campaign_ready(items=1, overlap=1)
    review_first_item(page, campaign, "kb-tabber")

    def highlighted():
        return page.get_attribute("#review [data-cell].focused", "aria-label")

    assert highlighted() == "Accuracy, output A"
    for _ in range(3):  # A-accuracy, B-accuracy, A-completeness: one stop per question
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.name") == "score-A-completeness"
    assert highlighted() == "Completeness, output A"
    page.keyboard.press("4")
    checked = "Array.from(document.querySelectorAll('#review-form input:checked'), (i) => i.name)"
    assert page.evaluate(checked) == ["score-A-completeness"]
    assert highlighted() == "Completeness, output B"  # and the keys go on from there
    page.locator("#review [data-cell]").nth(1).locator("label.point").first.click()
    assert highlighted() == "Accuracy, output B"
    page.keyboard.press("5")
    assert (
        page.evaluate("document.querySelector('input[name=score-B-accuracy]:checked').value") == "5"
    )
    assert page.js_errors == []


TABLE = (
    "| Plan | Price | Notes |\n|------|------:|-------|\n| Basic | 5 | email only |\n"
    "| Pro | 15 | phone support and a very long note that goes on and on, and on, "
    "to fill its cell several times over |\n"
)


def lines_of(locator):
    """How many lines the element's text takes."""
    return locator.evaluate(
        """el => { const r = document.createRange(); r.selectNodeContents(el);
        return new Set(Array.from(r.getClientRects(), (b) => Math.round(b.top))).size; }"""
    )


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_table_in_an_output_keeps_its_words_whole(browser_page, live_server):
    """A short cell beside a long one read "Basi" over "c": words break only where a word
    is wider than its whole column."""
    page = browser_page
    campaign = campaign_ready(items=1, overlap=1, outputs=[TABLE, "No table."])
    review_first_item(page, campaign, "kb-tables")
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 800})
        page.reload()
        page.wait_for_selector("#review .output-body table")
        cell = page.locator("#review .output-body td", has_text="Basic")
        assert lines_of(cell) == 1, width
        assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_short_conversation_shows_its_last_turn_without_scrolling(browser_page, live_server):
    """Four one-line turns fit the task box: the last user turn, the one the outputs answer,
    was below its clip, hidden by each turn's paragraph margins."""
    page = browser_page
    campaign = campaign_ready(items=1, overlap=1)
    Task.objects.filter(review_items__campaign=campaign).update(
        prompt="",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi, my router is down."},
            {"role": "assistant", "content": "Did you restart it?"},
            {"role": "user", "content": "Yes, twice. Still down."},
        ],
    )
    reviewer = UserFactory(username="kb-chat", roles=["reviewer"])
    browser_login(page, reviewer.username, PASSWORD)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"/review/{campaign.slug}/")
    start_reviewing(page)
    box = page.get_by_label("Task conversation")
    last = box.locator(".turn").last
    assert "Still down." in last.inner_text()
    assert box.evaluate("el => el.scrollHeight <= el.clientHeight")  # nothing clipped


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_cards_headings_line_up(browser_page, live_server):
    """The task card's heading sat a heading margin lower in its card than the outputs' (and
    the arbitration page's cards all had that gap): a card's first heading starts at its
    padding."""
    page = browser_page
    campaign = campaign_ready(items=1, overlap=1)
    review_first_item(page, campaign, "kb-cards")
    gaps = page.evaluate(
        """() => Array.from(document.querySelectorAll('#review .card > h2:first-child'),
          (h) => Math.round(h.getBoundingClientRect().top - h.parentElement.getBoundingClientRect().top))"""
    )
    assert len(gaps) == 3 and len(set(gaps)) == 1, gaps  # the task and outputs A and B
    padding = page.evaluate(
        "parseFloat(getComputedStyle(document.querySelector('.card')).paddingTop)"
    )
    assert gaps[0] <= padding + 1, (gaps, padding)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_escape_from_the_flags_goes_back_to_the_question(browser_page, live_server):
    """`f` then Esc left the focus on a flag's checkbox: Esc returns to the highlighted
    question, as it does from the comment."""
    page = browser_page
    campaign = campaign_ready(items=1, overlap=1)
    review_first_item(page, campaign, "kb-flagger")
    page.keyboard.press("4")  # A-accuracy; B-accuracy is highlighted now
    page.keyboard.press("f")
    assert page.evaluate("document.activeElement.closest('details.flags') !== null")
    page.keyboard.press("Escape")
    focused = page.evaluate("document.activeElement.getAttribute('aria-label')")
    assert focused == "Accuracy, output B"
    assert page.get_attribute("#review [data-cell].focused", "aria-label") == focused
    assert page.js_errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_x_where_na_is_not_allowed_says_so(browser_page, live_server):
    """`x` on a question without N/A did nothing and said nothing; a digit that is not a
    choice says so, and so does `x` now."""
    page = browser_page
    campaign = campaign_ready(items=1, overlap=1)  # accuracy has no N/A, completeness has
    review_first_item(page, campaign, "kb-na")
    page.keyboard.press("x")
    assert page.inner_text("#review [data-status]") == "N/A is not a choice here"
    assert page.get_attribute("#review [data-cell].focused", "aria-label") == "Accuracy, output A"
    assert page.locator("#review-form input:checked").count() == 0
    for key in ("4", "4", "x"):  # A and B accuracy, then N/A for A's completeness
        page.keyboard.press(key)
    assert page.locator("input[name=score-A-completeness][value=na]").is_checked()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_shortcuts_dialog_heading_starts_at_its_padding(browser_page, live_server):
    """The dialog's heading had a heading's top margin on top of the dialog's padding."""
    page = browser_page
    campaign = campaign_ready(items=1, overlap=1)
    review_first_item(page, campaign, "kb-shortcuts")
    page.keyboard.press("?")
    gap, padding = page.evaluate(
        """() => { const d = document.getElementById('shortcuts');
          const h = d.querySelector('h2'); const s = getComputedStyle(d);
          return [h.getBoundingClientRect().top - d.getBoundingClientRect().top,
                  parseFloat(s.paddingTop) + parseFloat(s.borderTopWidth)]; }"""
    )
    assert gap <= padding + 1, (gap, padding)
