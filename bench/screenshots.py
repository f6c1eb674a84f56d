"""Screenshots of every page, as each role sees it, at 1280x800 and 390x844 (run by hand).

Loads the demo (`manage.py migrate` and `manage.py demo`) into a throwaway SQLite data
directory, serves it with gunicorn on 127.0.0.1, logs in as admin, lead, reviewer1 and arbiter
in Debian's Chromium (Playwright), opens every page the role has (home, test sets, upload,
contenders, campaigns, a campaign, the new-campaign form with its rubric builder, outputs,
assignments, disputes, an item with its comments, every dashboard tab, the search, monitors,
users, a test-set upload with personal data found, a contender's connection test, the review
page, the reviewer's history and a correction, the arbitration pages, the API schema, ...) and saves a full-page PNG of each into
test-artifacts/screenshots/ (git-ignored). It prints the files, and any page that answered
with an error or logged a JavaScript error.

    .venv/bin/python bench/screenshots.py                  # every role, both sizes (~2 min)
    .venv/bin/python bench/screenshots.py --roles admin --pages campaign-new --out /tmp/shots
    .venv/bin/python bench/screenshots.py --keep docs/screenshots   # and the day-two pages, small

`--keep DIR` also saves the pages of the day-two work (monitors made and run in the browser,
a reviewer's history and correction, an item with its comment thread, every dashboard tab,
the search, a test-set upload with personal data found, a contender's connection test) into
DIR at both widths, cut to two screens and reduced to 64 colours, to be committed.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import TimeoutError as PlaywrightTimeout

ROOT = Path(__file__).resolve().parents[1]
VIEWPORTS = {"1280": {"width": 1280, "height": 800}, "390": {"width": 390, "height": 844}}
PASSWORDS = {}  # username -> password, from the demo's own list


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prepare(data_dir: str) -> dict:
    """Migrate and load the demo into `data_dir`; return the ids the page addresses need."""
    os.environ.update(
        EVALSITE_DATA_DIR=data_dir,
        DJANGO_SETTINGS_MODULE="evalsite.settings",
        SECURE_COOKIES="0",
        SECURE_HSTS_SECONDS="0",
    )
    for name in ("DATABASE_URL", "REDIS_URL"):
        os.environ.pop(name, None)  # the embedded mode: SQLite in data_dir, no broker server
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    from evalsite.demo import DEMO_USERS
    from reviews.demo import DEMO_CAMPAIGN
    from reviews.models import ReviewItem
    from tasks.models import Campaign, Contender, Generation, TestSet
    from tasks.monitors.models import Monitor, MonitorRun

    call_command("migrate", verbosity=0, interactive=False)
    call_command("demo", stdout=open(os.devnull, "w"))
    PASSWORDS.update({name: password for name, _, password in DEMO_USERS})
    # The support campaign (every common dashboard tab, disputes, an arbiter's decisions);
    # any reviewed campaign if the demo no longer has it.
    main = (
        Campaign.objects.filter(slug=DEMO_CAMPAIGN).first()
        or Campaign.objects.filter(items__reviews__isnull=False).distinct().first()
    )
    # An item an arbiter settled: its page names each disagreement and marks what was set.
    reviewed = (
        ReviewItem.objects.filter(campaign=main, arbitration__state="resolved").first()
        or ReviewItem.objects.filter(campaign=main, reviews__isnull=False).first()
    )
    testset = TestSet.objects.order_by("name", "-version").first()
    leak = Generation.objects.filter(campaign=main, identity_leak=True).first()
    # A contender with an endpoint: its page has "Test connection" (imported ones have none).
    contender = Contender.objects.exclude(provider="imported").order_by("pk").first()
    monitor = Monitor.objects.order_by("slug").first()
    run = (
        MonitorRun.objects.filter(monitor=monitor).order_by("-number").first() if monitor else None
    )
    from django.contrib.auth import get_user_model

    open_correction(main, get_user_model().objects.get(username="reviewer1"))
    ids = {
        "campaign": main.slug,
        # The other blind campaigns (a monitor's runs are campaigns too: the monitor pages show them).
        "campaigns": list(
            Campaign.objects.filter(kind=Campaign.Kind.BLIND)
            .exclude(pk=main.pk)
            .values_list("slug", flat=True)
        ),
        "task": reviewed.task.external_id if reviewed else "",
        "testset": f"{testset.name}/v{testset.version}",
        "contender": (contender or Contender.objects.order_by("pk").first()).pk,
        "leak": leak.pk if leak else None,
        "monitor": monitor.slug if monitor else "",
        "run": run.number if run else None,
        "run_task": run.monitor.testset.tasks.first().external_id if run else "",
        "user": get_user_model().objects.get(username="reviewer1").pk,
    }
    connections.close_all()
    return ids


def open_correction(campaign, reviewer) -> None:
    """`reviewer` submits one more review, its item still waiting for its second: the history
    then offers to correct it. Every dimension at its top score, and A preferred."""
    from reviews import review as services
    from tasks.blinding import render as blinding

    claim = services.assignment_claim_next(campaign=campaign, reviewer=reviewer)
    if claim is None:
        return
    assignment = claim.assignment
    labels = blinding.labels(len(assignment.order))
    top = {d["key"]: d["max"] for d in campaign.rubric}
    data = {"scores": {label: dict(top) for label in labels}}
    if campaign.mode != "rubric":
        data["preference"] = labels[0]
    services.assignment_submit(
        token=assignment.token, reviewer=reviewer, key=f"shots-{assignment.token}", data=data
    )


def pages(role: str, ids: dict) -> list[tuple[str, str]]:
    """(name, path) of the pages `role` has, in the order a person would visit them."""
    c = f"/campaigns/{ids['campaign']}"
    lead = [
        ("home", "/"),
        ("testsets", "/testsets/"),
        ("testset", f"/testsets/{ids['testset']}/"),
        ("campaigns", "/campaigns/"),
        ("campaign", f"{c}/"),
        ("outputs", f"{c}/generations/"),
        ("assignments", f"{c}/assignments/"),
        ("disputes", f"{c}/disputes/"),
        ("dashboard", f"{c}/dashboard/"),
        ("search", f"{c}/search/?q=refund"),
    ]
    if ids["task"]:
        lead.append(("item", f"{c}/items/{ids['task']}"))
    if ids["leak"]:
        lead.append(("output-identity", f"{c}/generations/{ids['leak']}/identity"))
    for slug in ids["campaigns"]:
        lead += [
            (f"campaign-{slug}", f"/campaigns/{slug}/"),
            (f"dashboard-{slug}", f"/campaigns/{slug}/dashboard/"),
        ]
    if ids["monitor"]:
        m = f"/monitors/{ids['monitor']}"
        lead += [("monitors", "/monitors/"), ("monitor", f"{m}/")]
        if ids["run"]:
            lead += [("monitor-run", f"{m}/runs/{ids['run']}/")]
            lead += [("monitor-task", f"{m}/runs/{ids['run']}/tasks/{ids['run_task']}/")]
    if role == "lead":
        return [*lead, ("account", "/account/")]
    if role == "admin":
        return [
            *lead[:3],
            ("testset-upload", "/testsets/upload/"),
            ("contenders", "/contenders/"),
            ("contender-edit", f"/contenders/{ids['contender']}/edit/"),
            *lead[3:],
            ("campaign-new", "/campaigns/new/"),
            ("campaign-new-from", f"/campaigns/new/?rubric_from={ids['campaign']}"),
            ("monitor-new", "/monitors/new/"),
            *([("monitor-edit", f"/monitors/{ids['monitor']}/edit")] if ids["monitor"] else []),
            ("users", "/users/"),
            ("user-edit", f"/users/{ids['user']}/"),
            ("account", "/account/"),
            ("api-schema", "/api/v1/schema"),
        ]
    if role == "reviewer":
        return [
            ("home", "/"),
            ("my-reviews", "/review/"),
            ("review-start", f"/review/{ids['campaign']}/"),
            ("review-history", f"/review/{ids['campaign']}/mine/"),
        ]
    if role == "arbiter":
        return [("home", "/"), ("arbitration-home", "/arbitration/")]
    return []


def shoot(page, out: Path, name: str, problems: list[str], full: bool = True) -> Path:
    path = out / f"{name}.png"
    page.wait_for_load_state("networkidle")
    started = time.monotonic()
    try:
        page.screenshot(path=str(path), full_page=full, timeout=20_000)
    except PlaywrightTimeout:  # a page too tall to draw whole: its first screen
        problems.append(f"{name}: too tall for a full-page screenshot; saved the first screen")
        page.screenshot(path=str(path), timeout=20_000)
    print(f"  {name} ({time.monotonic() - started:.1f} s)", flush=True)
    return path


def visit(page, out: Path, prefix: str, name: str, url: str, problems: list[str]) -> Path:
    response = page.goto(url)
    if response is None or response.status >= 400:
        problems.append(f"{prefix}-{name}: HTTP {response.status if response else '?'} at {url}")
    # The API schema is a JSON document of thousands of lines: its first screen says enough.
    return shoot(page, out, f"{prefix}-{name}", problems, full=not url.startswith("/api/"))


def dashboard_tabs(page) -> list[tuple[str, str]]:
    """(page name, path) of the dashboard's other tabs: /campaigns/x/dashboard/<name>/."""
    links = page.locator(".dash-tabs a")
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    return [(href.rstrip("/").rsplit("/", 1)[-1], href) for href in hrefs[1:]]


def role_session(
    browser, base: str, role: str, username: str, size: str, ids: dict, out: Path, only: list
):
    """Every page of one role at one size; returns (files, problems)."""
    context = browser.new_context(base_url=base, viewport=VIEWPORTS[size])
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"{role} {size} {page.url}: {exc}"))
    page.on(
        "console",
        lambda m: (
            problems.append(f"{role} {size} {page.url}: {m.text}")
            if m.type == "error" and "favicon" not in (m.location.get("url") or "")
            else None
        ),
    )
    prefix = f"{role}-{size}"
    files = []
    if role == "admin":  # the login page, once per size
        page.goto("/login/")
        files.append(shoot(page, out, f"anonymous-{size}-login", problems))
    page.goto("/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORDS[username])
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)
    for name, url in pages(role, ids):
        if only and not any(name.startswith(p) for p in only):
            continue
        files.append(visit(page, out, prefix, name, url, problems))
        if name == "dashboard" or name.startswith("dashboard-"):
            for tab, href in dashboard_tabs(page):
                files.append(visit(page, out, prefix, f"{name}-{tab}", href, problems))
        if name == "item":  # the lead starts the item's comment thread
            files.append(comment_on_item(page, out, f"{prefix}-item-comment", problems))
        if name == "testset-upload":  # a file with personal data: what was found, by line
            files.append(pii_upload(page, out, prefix, problems))
        if name == "contender-edit" and page.get_by_role("button", name="Test connection").count():
            page.get_by_role("button", name="Test connection").click()
            page.locator("#connection .connection-result").wait_for()
            files.append(shoot(page, out, f"{prefix}-contender-test", problems))
        if name == "review-history":  # a review still open to correction, with its answers
            correct = page.get_by_role("link", name="Correct")
            if correct.count():
                correct.first.click()
                page.get_by_text("Correcting your review").wait_for()
                files.append(shoot(page, out, f"{prefix}-review-correct", problems))
        if name == "campaign-new":  # the builder alone (readable on a phone), then as text
            page.locator("#rubric-builder").screenshot(
                path=str(out / f"{prefix}-rubric-builder.png")
            )
            files.append(out / f"{prefix}-rubric-builder.png")
            page.get_by_role("radio", name="Text (YAML or JSON)").check()
            page.locator("textarea[name=rubric]").wait_for()
            files.append(shoot(page, out, f"{prefix}-campaign-new-text", problems))
    if role == "reviewer":
        page.goto(f"/review/{ids['campaign']}/")  # the entry, wherever the pages above ended
        start = page.get_by_role("button", name="Start reviewing")
        if start.count():  # else the item held since the other size is on the page already
            start.click()
        try:
            page.wait_for_selector("#review [data-cell].focused, #review [data-finished]")
        except PlaywrightTimeout:
            problems.append(f"{prefix}-review: no item and no 'queue finished' at {page.url}")
        files.append(shoot(page, out, f"{prefix}-review", problems))
    if role == "arbiter":
        done = page.locator("a[href$='/item/']")  # on the arbiter's home: an item resolved
        if done.count():
            files.append(
                visit(
                    page,
                    out,
                    prefix,
                    "arbitration-item",
                    done.first.get_attribute("href"),
                    problems,
                )
            )
            page.goto("/arbitration/")
        start = page.get_by_role("button", name="Start arbitrating")
        resume = page.get_by_role("link", name="Continue")
        (resume if resume.count() else start).first.click()
        page.wait_for_load_state("networkidle")
        files.append(shoot(page, out, f"{prefix}-arbitration", problems))
    context.close()
    return files, problems


def comment_on_item(page, out: Path, name: str, problems: list[str]) -> Path:
    """Post a comment on the item page (htmx swaps the thread in), then shoot the page."""
    said = {
        "admin": "Reviewer B scored the tone 5 on a reply that refuses the customer; arbiter?",
        "lead": "Agreed with the arbiter's 3: polite, but it promises nothing the policy allows.",
    }
    page.fill("textarea[name=text]", said.get(name.split("-", 1)[0], "Noted."))
    page.get_by_role("button", name="Comment").click()
    page.locator(".comment-thread .comment").first.wait_for()
    return shoot(page, out, name, problems)


PII_TASKS = (
    '{"external_id": "P-1", "category": "account", "tier": "base", "case_type": "typical", '
    '"prompt": "Change my email from jane.doe@example.com; call +44 20 7946 0958."}\n'
    '{"external_id": "P-2", "category": "billing", "tier": "base", "case_type": "edge", '
    '"prompt": "Refund card 4111 1111 1111 1111 to IBAN DE89 3704 0044 0532 0130 00.", '
    '"metadata": {"requester": "jane.doe@example.com"}}\n'
)


def pii_upload(page, out: Path, prefix: str, problems: list[str]) -> Path:
    """Validate a two-task file with personal data on the upload page (nothing imported)."""
    path = out / "pii-example.jsonl"
    path.write_text(PII_TASKS)
    page.fill("input[name=name]", "pii-example")
    page.set_input_files("input[name=file]", str(path))
    page.get_by_role("button", name="Validate").click()
    page.locator(".pii-table").wait_for()
    return shoot(page, out, f"{prefix}-testset-upload-pii", problems)


# The day-two pages `--keep` saves, by role (the name after "<role>-<size>-").
KEEP = {
    # An admin's monitor page: with Pause, Resume and Delete.
    "admin": {"monitor", "monitor-new", "monitor-edit", "testset-upload-pii", "contender-test"},
    "lead": {
        "item-comment",
        "monitors",
        "monitor-run",
        "monitor-task",
        "search",
        "dashboard",
        *(
            f"dashboard-{tab}"
            for tab in (
                "agreement",
                "reviewers",
                "leaderboard",
                "capability",
                "stability",
                "cost",
                "bias",
                "head-to-head",
            )
        ),
        "dashboard-agents-demo-tools",
        "dashboard-agents-demo-conversation",
    },
    "reviewer": {"review-history", "review-correct", "review"},
}


def keep_small(path: Path, keep: Path) -> Path | None:
    """A copy of a day-two page's screenshot in `keep`: at most two screens tall (the item
    page four), 64 colours."""
    from PIL import Image

    role, size, name = path.stem.split("-", 2)
    if name not in KEEP.get(role, ()):
        return None
    with Image.open(path) as shot:
        # The item page's comment thread is at its foot: that page is kept whole.
        screens = 4 if name == "item-comment" else 2
        height = min(shot.height, screens * VIEWPORTS[size]["height"])
        small = shot.crop((0, 0, shot.width, height)).convert("RGB").quantize(colors=64)
        target = keep / path.name
        small.save(target, optimize=True)
    return target


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default=str(ROOT / "test-artifacts" / "screenshots"))
    parser.add_argument("--roles", default="admin,lead,reviewer,arbiter")
    parser.add_argument("--sizes", default="1280,390")
    parser.add_argument("--pages", default="", help="only pages whose name starts so (a,b)")
    parser.add_argument("--keep", default="", help="save the day-two pages, small, here")
    args = parser.parse_args()
    only = [p for p in args.pages.split(",") if p]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    users = {"admin": "admin", "lead": "lead", "reviewer": "reviewer1", "arbiter": "arbiter"}
    with tempfile.TemporaryDirectory(prefix="evalsite-shots-") as data_dir:
        ids = prepare(data_dir)
        port = free_port()
        log = open(out / "server.log", "w")
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "evalsite.wsgi",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "1",
                "--threads",
                "4",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=os.environ.copy(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(f"{base}/healthz?quick", timeout=1)
                    break
                except OSError:
                    time.sleep(0.2)
            from playwright.sync_api import sync_playwright

            sys.path.insert(0, str(ROOT))
            from tests.services import chromium_path

            files, problems = [], []
            with sync_playwright() as p:
                browser = p.chromium.launch(
                    executable_path=chromium_path(),
                    args=["--headless", "--no-sandbox", "--disable-gpu"],
                )
                for role in args.roles.split(","):
                    for size in args.sizes.split(","):
                        got, found = role_session(
                            browser, base, role, users[role], size, ids, out, only
                        )
                        files += got
                        problems += found
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=10)
    for path in files:
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    print(f"{len(files)} screenshots in {out}")
    if args.keep:
        keep = Path(args.keep)
        keep.mkdir(parents=True, exist_ok=True)
        kept = [k for k in (keep_small(path, keep) for path in files) if k]
        print(f"{len(kept)} day-two pages kept in {keep}")
    for problem in problems:
        print(f"PROBLEM {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
