"""axe-core (vendored from the npm package, tests/browser/vendor/) on every page of a crawl
over demo-like data: WCAG 2.1 A/AA and best practices, and any violation fails the test."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from reviews.models import RunReview
from reviews.services.calibration import golden_run
from tests.browser.test_screenshots import label_some_runs, rescore_in_process, seed
from tests.browser.test_trajectory import make_run as make_trajectory_run

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
    support, failed, batch = data["support"], data["failed"], data["batch"]
    reviewed, trajectory = data["reviewed"], data["trajectory"]
    walk = f"/failures/{support.id}/{support.current_version.criteria.first().key}/"
    pages = [
        "/",
        "/runs/",
        "/runs/?passed=false",
        f"/runs/{failed.id}/",
        f"/runs/{trajectory.id}/",
        "/rubrics/",
        "/rubrics/new/",
        f"/rubrics/{support.id}/",
        f"/rubrics/{support.id}/?a=1&b=2",
        f"/failures/?rubric={support.id}",
        walk,
        "/batches/",
        f"/batches/{batch.id}/",
        f"/reviews/{support.id}/",
        f"/reviews/{support.id}/runs/{reviewed[0].id}/",
        f"/reviews/{support.id}/runs/{reviewed[3].id}/",
        f"/reviews/{support.id}/agreement/",
        f"/reviews/{support.id}/golden/",
        f"/reviews/{support.id}/consistency/",
        f"/reviews/calibrations/{data['calibration'].id}/",
        "/reviews/alerts/",
        "/team/",
        "/team/otel/",
        "/no-such-page/",
    ]
    found = []
    for url in pages:
        page.goto(url)
        found += [f"{url}: {line}" for line in axe_violations(page)]
    # The comparison page, reached the way a user does: from the editor's compare button.
    page.goto(f"/rubrics/{support.id}/")
    page.locator('textarea[name="c-1-description"]').fill('Mentions "refund" clearly')
    with page.expect_navigation(url=re.compile(r"/reviews/comparisons/")):
        page.get_by_test_id("compare-draft").click()
    found += [f"{page.url}: {line}" for line in axe_violations(page)]
    return found


def test_every_page_of_the_crawl_has_no_axe_violations(
    chromium, live_server, browser_page, sign_in, owner, make_rubric, make_run, fake_judge
):
    data = seed(make_rubric, make_run)
    support = data["support"]
    data["batch"] = rescore_in_process(support)
    data["reviewed"] = label_some_runs(support, owner)
    RunReview.objects.filter(rubric=support, run__in=data["reviewed"][:3]).update(golden=True)
    data["calibration"] = golden_run(rubric=support, user=owner)
    data["trajectory"] = make_trajectory_run(support.team, support)
    page = sign_in(browser_page, owner)

    found = crawl(page, data)

    signed_out = chromium.new_context(base_url=live_server.url)
    login = signed_out.new_page()
    login.goto("/accounts/login/")
    found += [f"/accounts/login/: {line}" for line in axe_violations(login)]
    signed_out.close()
    assert not found, "axe-core violations:\n" + "\n".join(found)
