import pytest

from tests.services import chromium_path, need, postgres_available, redis_available


@pytest.fixture(scope="session", autouse=True)
def fast_password_hashing():
    # PBKDF2 at production strength costs ~0.3 s per user; tests create hundreds.
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def fresh_identity_terms():
    # The per-process cache of a campaign's masking words is keyed by its primary key, which a
    # database never reuses, except a test database whose rolled-back test gave the same pk to
    # another campaign with other contenders.
    from tasks.blinding.campaign_texts import _TERMS_CACHE

    _TERMS_CACHE.clear()


def pytest_runtest_setup(item):
    if item.get_closest_marker("postgres"):
        need(postgres_available(), "needs PostgreSQL: set DATABASE_URL=postgres://...")
    if item.get_closest_marker("redis"):
        need(redis_available(), "needs Redis: set REDIS_URL=redis://127.0.0.1:6379/0")
    if item.get_closest_marker("browser"):
        need(
            chromium_path() is not None,
            "needs Chromium at /usr/bin/chromium (apt-get install chromium)",
        )


@pytest.fixture
def celery_worker(transactional_db):
    """A real worker process; the test must use TransactionTestCase semantics (committed rows)."""
    need(
        postgres_available(),
        "a real worker needs PostgreSQL (it cannot see an in-memory SQLite test db)",
    )
    need(redis_available(), "a real worker needs Redis")
    from tests.services import Worker, purge_broker

    purge_broker()
    worker = Worker()
    yield worker
    worker.stop()


@pytest.fixture
def browser_page(live_server, settings, monkeypatch):
    """A Playwright page in Debian's Chromium, pointed at the live test server.

    Playwright's sync API runs an event loop in this thread; Django's ORM calls made by the
    test itself are still synchronous, hence DJANGO_ALLOW_ASYNC_UNSAFE for the test process.
    """

    need(
        chromium_path() is not None,
        "needs Chromium at /usr/bin/chromium (apt-get install chromium)",
    )
    from django.db import connections
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    settings.SESSION_COOKIE_SECURE = False
    settings.CSRF_COOKIE_SECURE = False
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium_path(),
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
            ],
        )
        context = browser.new_context(
            base_url=live_server.url, viewport={"width": 1280, "height": 900}
        )
        page = context.new_page()
        page.set_default_timeout(15000)
        # JS errors and CSP violations, for tests to assert on; the favicon probe is not one.
        page.js_errors = []
        page.on("pageerror", lambda exc: page.js_errors.append(str(exc)))
        page.on(
            "console",
            lambda m: (
                page.js_errors.append(m.text)
                if m.type == "error" and not m.location.get("url", "").endswith("/favicon.ico")
                else None
            ),
        )
        yield page
        # The test's own ORM calls, made while Playwright's event loop runs, went through a
        # connection of that context, not the main one: close it, or it outlives the test
        # and PostgreSQL refuses to drop the test database at the end of the run.
        connections.close_all()
        context.close()
        browser.close()


def browser_login(page, username: str, password: str) -> None:
    page.goto("/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)


def arrows_scroll(page, box) -> bool:
    """Whether the down arrow, pressed in `box` (a clipped text), scrolls it."""
    box.focus()
    for _ in range(5):
        page.keyboard.press("ArrowDown")
    return wait_until(page, lambda: box.evaluate("el => el.scrollTop") > 0)


def wait_until(page, condition, seconds: float = 3.0) -> bool:
    """Poll `condition` (the browser may scroll smoothly); a page under CSP refuses the string
    predicates of wait_for_function."""
    for _ in range(int(seconds / 0.05)):
        if condition():
            return True
        page.wait_for_timeout(50)
    return condition()
