"""axe-core (vendored from the npm package, tests/browser/vendor/) on every page of a crawl
over demo-like data: WCAG 2.1 A/AA and best practices, and any violation fails the test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.page_kinds import open_comparison, page_urls, seed_page_kinds

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).parent / "vendor" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]


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


def crawl(page: Any, data: dict[str, Any]) -> list[str]:
    found = []
    for url in page_urls(data):
        page.goto(url)
        found += [f"{url}: {line}" for line in axe_violations(page)]
    open_comparison(page, data)
    found += [f"{page.url}: {line}" for line in axe_violations(page)]
    return found


def test_every_page_of_the_crawl_has_no_axe_violations(
    chromium, live_server, browser_page, sign_in, owner, make_rubric, make_run, fake_judge
):
    data = seed_page_kinds(owner, make_rubric, make_run)
    page = sign_in(browser_page, owner)

    found = crawl(page, data)

    signed_out = chromium.new_context(base_url=live_server.url)
    login = signed_out.new_page()
    login.goto("/accounts/login/")
    found += [f"/accounts/login/: {line}" for line in axe_violations(login)]
    signed_out.close()
    assert not found, "axe-core violations:\n" + "\n".join(found)
