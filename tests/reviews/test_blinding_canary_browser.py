"""The end-to-end blinding canary (docs/blinding.md), in a real Chromium.

One campaign with the leak corpus's two contenders, whose outputs are every "mask" case of
tests/reviews/blinding_corpus.jsonl; the test set's prompts, messages, references and
categories, the campaign's instructions and rubric, and the reviewers' comments carry leaks
too. Two reviewers review every item (one in the browser, one over the API) so that every
item is disputed; an arbiter resolves them all in the browser. Every page and partial either
of them is shown, and every answer of the reviewer and arbiter API, is then read as a reader
can read it (blinding.skeleton: decoded, look-alikes folded, separators dropped) and must not
contain any identity of the corpus, nor a contender's name, model id, vendor or host.

What is read, one string at a time (skeleton() joins words, so a whole page at once would
find names across neighbouring words): every text and comment node of the document (hidden
ones too: they are in the page's source), every attribute value of every element and every
form value, URL-decoded until stable, the page's URL and <title>, each line of the rendered
text (page.inner_text("body")), every string of the API's JSON, and every response header.
"""

from __future__ import annotations

import html
import http.cookies
import json
import math
import re
import urllib.error
import urllib.request
from urllib.parse import unquote

import pytest

from evalsite.models import ApiToken
from reviews.models import Arbitration, Assignment, ReviewItem
from tasks.blinding import render as blinding
from tasks.blinding.campaign_texts import campaign_identity_terms
from tasks.models import Contender
from tests.conftest import browser_login, wait_until
from tests.factories import (
    PASSWORD,
    CampaignFactory,
    ReviewItemFactory,
    TaskFactory,
    UserFactory,
    tool_call,
    transcript_step,
    transcript_turn,
    with_transcript,
)
from tests.reviews.test_blinding_corpus import CORPUS_CONTENDERS, load_corpus

SLUG = "canary"  # neutral: a slug naming a contender is refused (tasks.campaigns.definition)
NAME = "Support answers Q4"  # shown as written (it only warns): neutral here
# The review form was swapped for another item's (its draft key names another token).
SWAPPED = "t => document.querySelector('#review-form')?.dataset.draft !== 'review:' + t"

MASK_CASES = [c for c in load_corpus() if c["expect"] == "mask"]


def _contender_identities() -> set[str]:
    found = {"zzlabs"}  # the vendor's host name, inference.zz-labs.example
    for c in CORPUS_CONTENDERS:
        found |= {blinding.skeleton(c[k]) for k in ("name", "model", "provider")}
        found.add(blinding.skeleton(c["base_url"].split("//", 1)[1].split("/", 1)[0]))
    return {f for f in found if not re.fullmatch(r"[\d]+", f)}  # 127.0.0.1:9 says nothing


# In skeleton form, as the strings are read: the corpus writes "клод" in Cyrillic, whose
# look-alike letters skeleton() folds ("клoд"), as it folds them in the pages.
IDENTITIES = sorted(
    {blinding.skeleton(i) for c in MASK_CASES for i in c["identities"]} | _contender_identities()
)

# Every identity is looked for anywhere in a string's skeleton, short ones ("o1", "4o", "gpt")
# too: once the random tokens are taken out (Leaks.random_tokens), none of them occurs in the
# pages' own words. If a change of wording ever makes one do so ("go to 1" reads "goto1"),
# restrict that identity to whole words here, with the reason: never drop it.


# Identities looked for as whole words only, each with the page wording that made it so.
WHOLE_WORDS = {
    "4o": "the review page's progress, 'Item 4 of 139', reads '4o' once its spaces are gone",
}


def readable(text: str) -> list[str]:
    """The identities that can be read in `text`. Read as written and lower-cased: skeleton()
    folds a capital look-alike and its small letter apart in some scripts ("Клод" reads
    "kлoд", "клод" reads "клoд"), and the corpus writes its identities in small letters."""
    views = {blinding.skeleton(text), blinding.skeleton(text.casefold())}
    words = {
        " ".join(blinding.skeleton(w) for w in re.split(r"[\W_]+", t))
        for t in (text, text.casefold())
    }
    found = []
    for identity in IDENTITIES:
        if identity in WHOLE_WORDS:
            whole = rf"(?<![^\W_]){re.escape(identity)}(?![^\W_])"
            if any(re.search(whole, view) for view in words):
                found.append(identity)
        elif any(identity in view for view in views):
            found.append(identity)
    return found


def decoded(value: str) -> str:
    """A URL (or any attribute) percent-decoded until it no longer changes."""
    for _ in range(10):
        once = unquote(value)
        if once == value:
            break
        value = once
    return value


class Leaks:
    """The identities found, per place; random tokens (assignment, arbitration, CSRF, submit
    keys) are taken out first: they are random letters, where a short name occurs by chance."""

    def __init__(self):
        self.found: list[tuple[str, str, str, str]] = []
        self.checked = 0
        self._memo: dict[str, list[str]] = {}
        # Transcript parts read: steps and conversation turns in pages, turns in API answers.
        self.steps_seen = self.turn_rows_seen = self.api_turns_seen = 0

    def random_tokens(self, extra=()) -> list[str]:
        tokens = {*Assignment.objects.values_list("token", flat=True)}
        tokens |= {*Arbitration.objects.values_list("token", flat=True)}
        tokens |= {t for t in extra if t and len(t) >= 8}
        return sorted(tokens, key=len, reverse=True)

    def check(self, where: str, strings, tokens) -> None:
        for what, value in strings:
            if not isinstance(value, str) or not value.strip():
                continue
            for token in tokens:
                if token in value:
                    value = value.replace(token, " ")
            for text in {value, decoded(value)}:
                self.checked += 1
                if text not in self._memo:  # the pages repeat most of their strings
                    self._memo[text] = readable(text)
                for identity in self._memo[text]:
                    self.found.append((where, what, identity, text[:200]))

    def assert_none(self, terms):
        """Fails with every finding, grouped by the corpus cases whose masked text it is in."""
        if not self.found:
            return
        masked = {c["id"]: blinding.mask_identity(c["text"], terms).text for c in MASK_CASES}
        by_case: dict[str, set] = {}
        for where, what, identity, text in self.found:
            ids = [i for i, m in masked.items() if text.strip() and text.strip() in m] or ["-"]
            for case_id in ids:
                by_case.setdefault(f"{case_id} ({identity!r} in {text!r})", set()).add(
                    f"{where} [{what}]"
                )
        summary = "\n".join(
            f"{key}: {len(places)} places, e.g. {sorted(places)[0]}"
            for key, places in sorted(by_case.items())
        )
        raise AssertionError(f"{len(self.found)} identities readable, by corpus case:\n{summary}")


# Every string of the document: text and comment nodes, attribute values, form values.
COLLECT = """() => {
  const out = [["title", document.title], ["url", location.href]];
  const walker = document.createTreeWalker(document, NodeFilter.SHOW_TEXT | NodeFilter.SHOW_COMMENT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    out.push([n.nodeType === 8 ? "comment" : "text in " + n.parentNode.nodeName, n.nodeValue]);
  }
  for (const el of document.querySelectorAll("*")) {
    for (const a of el.attributes) out.push([el.nodeName + "@" + a.name, a.value]);
    if ("value" in el && typeof el.value === "string") out.push([el.nodeName + ".value", el.value]);
  }
  const csrf = [...document.querySelectorAll("input[name=csrfmiddlewaretoken], [data-submit-key]")]
    .map((i) => i.value);
  const headers = document.body && document.body.getAttribute("hx-headers");
  if (headers) csrf.push(JSON.parse(headers)["x-csrftoken"]);
  return {strings: out, random: csrf};
}"""


def json_strings(value, path="$"):
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield f"{path}.{k} (key)", str(k)
            yield from json_strings(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from json_strings(v, f"{path}[{i}]")


def header_strings(headers: dict):
    for name, value in headers.items():
        if name.lower() == "set-cookie":
            # Cookie values are random (session, CSRF): their names and attributes are read.
            for line in value.split("\n"):
                cookie = http.cookies.SimpleCookie()
                cookie.load(line)
                for morsel in cookie.values():
                    yield f"header {name}", morsel.key
                    yield from ((f"header {name} {k}", str(v)) for k, v in morsel.items() if v)
        else:
            yield f"header {name}", f"{name}: {value}"


def campaign_with_leaks(terms_cases: list[dict]):
    """The campaign: its rubric, instructions and test set name the contenders too."""
    cases = [c["text"] for c in terms_cases]
    contenders = [
        Contender.objects.create(
            name=c["name"], provider=c["provider"], model=c["model"], base_url=c["base_url"]
        )
        for c in CORPUS_CONTENDERS
    ]
    rubric = [
        {
            "key": "accuracy",
            "label": f"Accuracy: {cases[0]}",
            "description": cases[1],
            "min": 1,
            "max": 5,
            "level": "ordinal",
            "max_gap": 1,
            "anchors": {str(n): cases[1 + n] for n in range(1, 6)},
        },
        {
            "key": "completeness",
            "label": cases[7][:100],
            "description": cases[8],
            "min": 1,
            "max": 5,
            "level": "ordinal",
            "max_gap": 1,
            "anchors": {"1": cases[9], "5": cases[10]},
        },
    ]
    return CampaignFactory(
        slug=SLUG,
        name=NAME,
        contenders=contenders,
        rubric=rubric,
        mode="both",
        overlap=2,
        show_reference=True,
        instructions="\n\n".join(cases[11:20]),
    )


CATEGORIES = ["billing", "zz-secret-model-9_tickets", "claude_style", "acme/it follow-ups"]
# Tool names that name a contender or a vendor (a test set's own names, shown masked).
TOOL_NAMES = ["ask_zz-secret-model-9", "claude_search", "acme-it_lookup", "lookup_acme_it"]


def leaky_transcript(texts: list[str], at: int, answer: str) -> dict:
    """One turn whose every part names a model: the steps' text, the tools' names, argument
    keys and values, results, errors, and arguments that are not JSON."""
    leak = lambda k: texts[(at + k) % len(texts)]  # noqa: E731
    return transcript_turn(
        answer,
        transcript_step(
            leak(1),
            tool_call(
                TOOL_NAMES[at % len(TOOL_NAMES)],
                {"model": leak(2), "zz_secret_model_9": [leak(3), {"vendor": leak(4)}]},
                result={"answer": leak(5), "host": "inference.zz-labs.example"},
            ),
            tool_call(TOOL_NAMES[(at + 1) % len(TOOL_NAMES)], {"q": "x"}, error=leak(6)),
        ),
        transcript_step("", tool_call("get_order", raw=f"{{who: {json.dumps(leak(7))}")),
        transcript_step("", tool_call("acme/it", {"q": leak(8)}, unmocked=True)),
    )


def fill_items(campaign) -> int:
    """One item per pair of mask cases (the two contenders' outputs), each task with a prompt
    or a conversation, a reference and a category that name a model too."""
    n = math.ceil(len(MASK_CASES) / 2)
    texts = [c["text"] for c in MASK_CASES]
    for i in range(n):
        leak = texts[(i * 7) % len(texts)]
        fields = {
            "category": CATEGORIES[i % len(CATEGORIES)],
            "reference": texts[(i * 5 + 3) % len(texts)],
        }
        if i % 4 == 3:  # a conversation whose user turns name models too
            fields["prompt"] = ""
            fields["turns"] = [leak, texts[(i * 11 + 2) % len(texts)], "Thanks, and the refund?"]
        elif i % 3 == 0:
            fields["prompt"] = ""
            fields["messages"] = [
                {"role": "system", "content": texts[(i * 3 + 1) % len(texts)]},
                {"role": "user", "content": "Who are you, and can you help with my refund?"},
                {"role": "assistant", "content": leak},
                {"role": "user", "content": "Please summarise the refund policy."},
            ]
        else:
            fields["prompt"] = f"Answer the customer. Earlier reply: {leak}"
        task = TaskFactory(testset=campaign.testset, position=i, external_id=f"T-{i + 1}", **fields)
        item = ReviewItemFactory(campaign=campaign, task=task)
        for k, output in enumerate(item.outputs.order_by("generation__contender_id")):
            index = 2 * i + k
            text = texts[index] if index < len(texts) else texts[index % len(texts)]
            output.generation.output = text
            output.generation.save(update_fields=["output"])
            if i % 4 == 1:  # a tool-use transcript ending in the corpus output
                with_transcript(output.generation, leaky_transcript(texts, index, text))
            elif i % 4 == 3:  # the conversation, its replies naming models, the last the output
                replies = [texts[(index * 13 + t) % len(texts)] for t in (1, 2)] + [text]
                with_transcript(
                    output.generation,
                    *(
                        transcript_turn(reply, user=user)
                        for reply, user in zip(replies, task.turns, strict=True)
                    ),
                )
    return n


class Api:
    """The JSON API over real HTTP, so its headers are the server's."""

    def __init__(self, base: str, user):
        self.base, self.token = base, ApiToken.issue(user)

    def post(self, path: str, body: dict | None = None) -> tuple[int, dict, dict]:
        data = json.dumps(body).encode() if body is not None else b""
        request = urllib.request.Request(
            self.base + path,
            data=data,
            method="POST",
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                raw, status, headers = response.read(), response.status, dict(response.headers)
        except urllib.error.HTTPError as error:
            raw, status, headers = error.read(), error.code, dict(error.headers)
        return status, (json.loads(raw) if raw else {}), headers


def check_page(page, leaks: Leaks, where: str, responses: list) -> None:
    page.wait_for_load_state()
    # A transcript's steps open, so their text is among the rendered lines too.
    page.evaluate("document.querySelectorAll('details[data-step]').forEach(d => (d.open = true))")
    leaks.steps_seen += page.locator("details[data-step]").count()
    leaks.turn_rows_seen += page.locator("[data-turn-row]").count()
    dom = page.evaluate(COLLECT)
    tokens = leaks.random_tokens(dom["random"])
    lines = [("rendered line", line) for line in page.inner_text("body").splitlines()]
    leaks.check(where, [*dom["strings"], *lines], tokens)
    for response in responses:
        try:
            headers = response.all_headers()
        except Exception:  # noqa: BLE001 - a response whose request was cancelled
            continue
        leaks.check(f"{where}: {response.url}", header_strings(headers), tokens)
    responses.clear()


def check_api(leaks: Leaks, where: str, status: int, body: dict, headers: dict) -> None:
    tokens = leaks.random_tokens()
    leaks.check(where, [*json_strings(body), *header_strings(headers)], tokens)
    leaks.api_turns_seen += sum(len(c.get("transcript") or []) for c in body.get("candidates", []))


def mark_answers(page, *, score: str, preference: str) -> None:
    """Every score of the review form at `score`, the preference at `preference`."""
    page.evaluate(
        """([score, preference]) => {
          for (const cell of document.querySelectorAll("#review-form [data-kind=score] [data-cell]")) {
            cell.querySelector(`input[value="${score}"]`).checked = true;
          }
          const pref = document.querySelector(`#review-form input[name=preference][value="${preference}"]`);
          if (pref) pref.checked = true;
        }""",
        [score, preference],
    )


@pytest.mark.browser
@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True)
def test_no_identity_is_readable_anywhere_a_reviewer_or_arbiter_looks(browser_page, live_server):
    page, leaks = browser_page, Leaks()
    responses: list = []
    page.on("response", lambda r: responses.append(r))
    campaign = campaign_with_leaks(MASK_CASES)
    n_items = fill_items(campaign)
    first = UserFactory(username="canary-reviewer-1", roles=["reviewer"])
    second = UserFactory(username="canary-reviewer-2", roles=["reviewer"])
    arbiter = UserFactory(username="canary-arbiter", roles=["arbiter"])
    first_api, second_api = Api(live_server.url, first), Api(live_server.url, second)

    # The first reviewer, in the browser: home, start page (instructions), every item; and for
    # each item, the API's answer for the same claim (the API resumes the item one holds).
    browser_login(page, first.username, PASSWORD)
    responses.clear()
    page.goto("/review/")
    check_page(page, leaks, "reviewer home", responses)
    page.goto(f"/review/{SLUG}/")
    check_page(page, leaks, "review start page", responses)
    page.click("button:has-text('Start reviewing')")
    page.wait_for_selector("#review-form")
    check_page(page, leaks, "review page (full load)", responses)
    seen_tokens = []
    for n in range(n_items):
        token = page.get_attribute("#review-form", "data-draft").removeprefix("review:")
        seen_tokens.append(token)
        status, body, headers = first_api.post(f"/api/v1/campaigns/{SLUG}/next")
        assert status == 200 and body["token"] == token and body["resumed"]
        check_api(leaks, f"reviewer API next, item {n + 1}", status, body, headers)
        if n == 0:  # sent with nothing scored: the form comes back with its errors
            page.click("#review-form [data-submit]")
            page.wait_for_selector("[data-notice=error]")
            check_page(page, leaks, "review page with errors", responses)
        if n == 1:  # the page as a reload shows it, not only as a swap
            page.reload()
            page.wait_for_selector("#review-form")
            check_page(page, leaks, "review page (reload)", responses)
        mark_answers(page, score="5", preference="tie")
        page.click("#review-form [data-submit]")
        if n + 1 < n_items:
            assert wait_until(page, lambda t=token: page.evaluate(SWAPPED, t), seconds=15)
            check_page(page, leaks, f"review page (swap), item {n + 2}", responses)
    page.wait_for_selector("[data-finished]")
    check_page(page, leaks, "review page, queue finished", responses)
    page.goto(f"/review/{SLUG}/{seen_tokens[0]}/")
    check_page(page, leaks, "a submitted item's page", responses)
    page.goto(f"/review/{SLUG}/")
    check_page(page, leaks, "start page, nothing left", responses)
    page.goto(f"/review/{SLUG}/no-such-token/")
    check_page(page, leaks, "404 page", responses)
    page.js_errors.clear()  # the console's "404 (Not Found)" for the page just asked for

    # The second reviewer, over the API: every item, scored far from the first (a dispute on
    # every item), with a comment that names a model (the arbiter sees it masked).
    for n in range(n_items):
        status, body, headers = second_api.post(f"/api/v1/campaigns/{SLUG}/next")
        assert status == 200, body
        check_api(
            leaks, f"reviewer API next (second reviewer), item {n + 1}", status, body, headers
        )
        labels = [c["label"] for c in body["candidates"]]
        answer = {
            "scores": {label: {d["key"]: 1 for d in body["rubric"]} for label in labels},
            "preference": "both_bad",
            "comment": MASK_CASES[(n * 11) % len(MASK_CASES)]["text"],
        }
        status, result, headers = second_api.post(body["submit_url"], answer)
        assert status == 201, result
        check_api(leaks, f"reviewer API submit, item {n + 1}", status, result, headers)
    status, _, headers = second_api.post(f"/api/v1/campaigns/{SLUG}/next")
    assert status == 204
    assert ReviewItem.objects.filter(campaign=campaign, state="disputed").count() == n_items

    # The arbiter, in the browser: home, every arbitration (and the API's answer for the same
    # claim), the resolved page, the last one's answer, a resolved arbitration's link.
    arbiter_api = Api(live_server.url, arbiter)
    page.context.clear_cookies()
    browser_login(page, arbiter.username, PASSWORD)
    responses.clear()
    page.goto("/arbitration/")
    check_page(page, leaks, "arbiter home", responses)
    page.click("button:has-text('Start arbitrating')")
    page.wait_for_selector("#arb-form")
    check_page(page, leaks, "arbitration page (full load)", responses)
    resolved = []
    for n in range(n_items):
        token = page.get_attribute("#arb-form", "data-draft").removeprefix("arbitration:")
        status, body, headers = arbiter_api.post(f"/api/v1/campaigns/{SLUG}/arbitration/next")
        assert status == 200 and body["token"] == token, body
        check_api(leaks, f"arbiter API next, item {n + 1}", status, body, headers)
        if n == 0:  # sent with nothing chosen: the errors name the rubric's (masked) labels
            page.fill("#arb-note", "Settled on the rubric.")
            page.click("#arb-form button[type=submit]")
            page.wait_for_selector(".arb-errors")
            check_page(page, leaks, "arbitration page with errors", responses)
        page.evaluate(
            """() => {
              for (const group of document.querySelectorAll("#arb-form fieldset[data-disputed]")) {
                group.querySelector("input[type=radio]").checked = true;
              }
            }"""
        )
        page.fill("#arb-note", "Settled on the rubric.")
        page.click("#arb-form button[type=submit]")
        page.wait_for_selector(".arb-done")
        resolved.append(token)
        check_page(page, leaks, f"arbitration resolved, item {n + 1}", responses)
        if n + 1 < n_items:
            page.click(".arb-done button[type=submit]")
            page.wait_for_selector("#arb-form")
            check_page(page, leaks, f"arbitration page (swap), item {n + 2}", responses)
    status, _, _ = arbiter_api.post(f"/api/v1/campaigns/{SLUG}/arbitration/next")
    assert status == 204
    page.goto(f"/arbitration/t/{resolved[0]}/")
    check_page(page, leaks, "a resolved arbitration's page", responses)
    page.goto("/arbitration/")
    check_page(page, leaks, "arbiter home, all resolved", responses)

    assert not page.js_errors, page.js_errors  # the pages worked as a reviewer's do
    assert leaks.checked > 10_000  # the canary read the pages, not an empty list
    assert min(leaks.steps_seen, leaks.turn_rows_seen, leaks.api_turns_seen) > 10  # transcripts
    leaks.assert_none(campaign_identity_terms(campaign))


def test_the_canary_reads_every_identity_in_the_corpus_as_written():
    """The canary's reader is not blind: it finds every case's identities in the case's text
    unmasked, as written or as rendered ("[Cl](x)[aude](y)" reads "Claude" once rendered; the
    page's rendered lines are read for that)."""
    missed = []
    for c in MASK_CASES:
        rendered = re.sub(r"<[^>]*>", "", blinding.render_markdown(c["text"]))
        found = {*readable(c["text"]), *readable(html.unescape(rendered))}
        if left := {blinding.skeleton(i) for i in c["identities"]} - found:
            missed.append((c["id"], sorted(left)))
    assert not missed


@pytest.mark.browser
@pytest.mark.timeout(600)
@pytest.mark.django_db(transaction=True)
def test_the_report_key_and_the_probe_question_show_no_identity(browser_page, live_server):
    """The key that reports a leak (r, a note, Enter) takes the item away and shows the next
    with nothing readable; the blinding probe's question names the contenders only in its
    choices, never beside a label, and its answer text is masked; the report's `blinding` key
    counts both."""
    from reviews.models import BlindingGuess, IdentityReport
    from reviews.report.campaign import campaign_report

    page, leaks = browser_page, Leaks()
    responses: list = []
    page.on("response", lambda r: responses.append(r))
    campaign = campaign_with_leaks(MASK_CASES)
    campaign.blinding_probe = {"every": 1}
    campaign.save(update_fields=["blinding_probe"])
    fill_items(campaign)
    reviewer = UserFactory(username="canary-probe-1", roles=["reviewer"])
    names = sorted(c["name"] for c in CORPUS_CONTENDERS)

    browser_login(page, reviewer.username, PASSWORD)
    page.goto(f"/review/{SLUG}/")
    page.click("button:has-text('Start reviewing')")
    page.wait_for_selector("#review-form")
    reported = page.get_attribute("#review-form", "data-draft").removeprefix("review:")
    # The report key: r opens it with the cursor in the note, Enter sends it.
    page.locator("#review-form").click(position={"x": 2, "y": 2})
    page.keyboard.press("Escape")
    page.keyboard.press("r")
    page.wait_for_selector("details.report-identity[open] [data-report-note]:focus")
    page.keyboard.type("the second answer says who made it")
    page.keyboard.press("Enter")
    assert wait_until(page, lambda: page.evaluate(SWAPPED, reported), seconds=15)
    check_page(page, leaks, "review page after a report", responses)
    report = IdentityReport.objects.get()
    assert report.note == "the second answer says who made it" and report.role == "reviewer"
    assert not ReviewItem.objects.get(pk=report.item_id).ready

    # A review, then the question (every item here): the contenders' names in its choices only.
    mark_answers(page, score="4", preference="tie")
    page.click("#review-form [data-submit]")
    page.wait_for_selector("[data-probe]")
    labels = [t.strip() for t in page.locator("[data-probe] fieldset label").all_inner_texts()]
    assert labels == names
    answer = page.inner_text("[data-probe-answer]")
    assert answer.strip() and not readable(answer)
    page.evaluate("document.querySelector('[data-probe] fieldset').remove()")
    check_page(page, leaks, "blinding probe question (its choices aside)", responses)
    page.reload()
    page.check(f"[data-probe] input[value='{names[1]}']")
    page.click("[data-probe] button[type=submit]")
    page.wait_for_selector("#review-form")
    check_page(page, leaks, "review page after the question", responses)
    guess = BlindingGuess.objects.get()
    assert guess.guessed.name == names[1] and guess.answered_at is not None

    # The API: the submit's answer carries the question; nothing but its choices names anyone.
    api = Api(live_server.url, UserFactory(username="canary-probe-2", roles=["reviewer"]))
    status, body, _ = api.post(f"/api/v1/campaigns/{SLUG}/next")
    assert status == 200
    labels_ = [c["label"] for c in body["candidates"]]
    answer_body = {
        "scores": {label: {d["key"]: 3 for d in body["rubric"]} for label in labels_},
        "preference": "tie",
    }
    status, result, headers = api.post(body["submit_url"], answer_body)
    assert status == 201 and result["blinding_probe"]["choices"] == names
    question = {k: v for k, v in result["blinding_probe"].items() if k != "choices"}
    check_api(leaks, "reviewer API submit with the probe question", status, question, headers)
    status, _, _ = api.post(result["blinding_probe"]["answer_url"], {"guess": names[0]})
    assert status == 200

    assert not page.js_errors, page.js_errors
    leaks.assert_none(campaign_identity_terms(campaign))
    figures = campaign_report(campaign=campaign, n_boot=10)["blinding"]
    assert figures["reports"] == 1 and figures["probe_every"] == 1
    assert sum(f["guesses"] for f in figures["probe"].values()) == 2
    assert set(figures["probe"]) == set(names)
