"""Playwright (sync API) driving Debian's Chromium against pytest-django's live server.

No browser is ever downloaded: Playwright launches /usr/bin/chromium. Tests here need
``transactional_db`` (the live server runs in another thread and must see committed data).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TIMEOUT_MS = 15_000


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One browser per test module. Playwright's sync API keeps an event loop running in this
    thread while it is open, so it must not outlive the browser tests: other tests (and the
    scorers' sync API, which refuses to run inside a running loop) would see that loop."""
    from playwright.sync_api import sync_playwright

    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: run `make test` (it installs Debian's chromium)")
    # The test's own ORM calls (factories, assertions) run in this thread beside Playwright's
    # loop; they are synchronous and safe, so Django's async guard is lifted meanwhile.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def browser_page(chromium, live_server) -> Iterator[Any]:
    context = chromium.new_context(
        base_url=live_server.url, viewport={"width": 1360, "height": 900}
    )
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    in_flight: set[Any] = set()
    page.on("request", lambda request: in_flight.add(request))
    page.on("requestfinished", lambda request: in_flight.discard(request))
    page.on("requestfailed", lambda request: in_flight.discard(request))
    yield page
    # Nothing the page sends from now on reaches the server (a debounced autosave would write
    # while the test database is flushed, and deadlock with the flush); what is already on its
    # way is answered first.
    context.route("**/*", lambda route: route.abort())
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while in_flight and time.monotonic() < deadline:
        page.wait_for_timeout(20)  # lets Playwright deliver the requests' events
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture
def sign_in(live_server):
    """Sign ``user`` in through the real login form."""

    def login(page: Any, user: Any, password: str = "correct-horse-battery") -> Any:
        page.goto("/accounts/login/")
        page.fill("#id_username", user.get_username())
        page.fill("#id_password", password)
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        return page

    return login
