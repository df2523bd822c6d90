"""The whole-site walk: every page kind (tests/browser/page_kinds.py) over demo-like data, at
1280 and at 390 px. axe-core (vendored from the npm package, tests/browser/vendor/) checks WCAG
2.1 A/AA and best practices, and any violation fails the test; at 390 px no page may scroll
sideways (test_phone.py's measure). Every focusable point of the home page's charts has a name."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.page_kinds import page_urls, seed_page_kinds
from tests.browser.test_phone import PHONE, overflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).parent / "vendor" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
# Every page is checked at a desktop and at a phone width, over the same seeded data.
VIEWPORTS = [{"width": 1280, "height": 900}, PHONE]


def axe_violations(page: Any) -> list[str]:
    """Run axe on the page as it is; one line per failing node."""
    page.wait_for_load_state("networkidle")
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    result = page.evaluate(
        "tags => axe.run(document, {runOnly: {type: 'tag', values: tags}})", TAGS
    )
    return [
        f"{v['id']} ({v['impact']}): {node['target']} {node['failureSummary'][:160]!r}"
        for v in result["violations"]
        for node in v["nodes"]
    ]


def check(page: Any, url: str, where: str) -> list[str]:
    """What is wrong with the page at ``url`` as it is: axe's violations, and at phone width
    a sideways scroll."""
    found = [f"{where} {url}: {line}" for line in axe_violations(page)]
    if page.viewport_size["width"] == PHONE["width"] and (wide := overflow(page)):
        found.append(f"{where} {url}: wider than the phone: {wide}")
    return found


def chart_point_names(page: Any) -> list[str]:
    """The accessible name of every focusable element in the home page's charts."""
    page.goto("/")
    points = page.locator("svg.chart [tabindex]:not([tabindex='-1'])")
    assert points.count() > 0
    names = []
    for i in range(points.count()):
        point = points.nth(i)
        expect(point).to_have_accessible_name(re.compile(r"\w{3} \d{2}: \S"))
        names.append(point.get_attribute("aria-label"))
    return names


def test_every_page_kind_has_no_axe_violations_and_fits_a_phone(
    chromium, live_server, browser_page, sign_in, owner, make_rubric, make_run, fake_judge,
    api_key, settings,
):  # fmt: skip
    settings.EVALSITE_OTEL_ASSEMBLE_DELAY = 0  # OTLP spans become a run in the request
    settings.EVALSITE_JUDGE_ALLOW_PRIVATE = True  # the team's connection is the fake judge
    page = sign_in(browser_page, owner)
    data = seed_page_kinds(page, owner, make_rubric, make_run, api_key, fake_judge.url)

    names = chart_point_names(page)
    assert any(" passed (" in name for name in names), names
    assert any(name.startswith("Judge tokens per day · ") for name in names), names
    found = []
    signed_out = chromium.new_context(base_url=live_server.url)
    login = signed_out.new_page()
    for viewport in VIEWPORTS:
        where = f"{viewport['width']} px"
        page.set_viewport_size(viewport)
        for url in page_urls(data):
            page.goto(url)
            found += check(page, url, where)
        login.set_viewport_size(viewport)
        login.goto("/accounts/login/")
        found += check(login, "/accounts/login/", where)
    signed_out.close()
    assert not found, "violations:\n" + "\n".join(found)


def test_the_empty_pages_of_a_new_team_have_no_axe_violations(browser_page, sign_in, owner):
    """Before any data: each list's empty state (its heading follows the page's h1)."""
    page = sign_in(browser_page, owner)
    found = []
    for viewport in VIEWPORTS:
        page.set_viewport_size(viewport)
        for url in ("/", "/runs/", "/rubrics/", "/failures/", "/batches/", "/reviews/alerts/"):
            page.goto(url)
            found += check(page, url, f"{viewport['width']} px")
    assert not found, "violations:\n" + "\n".join(found)
