"""axe-core (vendored from the npm package, tests/browser/vendor/) on every page of a crawl
over demo-like data, at 1280 and at 390 px: WCAG 2.1 A/AA and best practices, and any
violation fails the test. Every focusable point of the home page's charts has a name."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.test import Client
from playwright.sync_api import expect

from reviews.models import Alert, RunReview
from reviews.services.alerts import alert_rule_create, alerts_evaluate
from reviews.services.calibration import consistency_check, golden_run
from runs.models import AgentRun, OtelRejection, Status
from runs.otel.service_rubrics import otel_service_set
from runs.services.budget import budget_update
from teams.services import api_key_create, connection_create
from tests.browser.test_screenshots import PARTIAL, label_some_runs, rescore_in_process, seed
from tests.browser.test_trajectory import make_run as make_trajectory_run
from tests.otel.otlp import export_json, two_tool_trace
from tests.otel.test_rejections import contentless_trace
from tests.page_helpers import judge_pending
from tests.reviews.conftest import judge_pending as judge_all_pending

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).parent / "vendor" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
# Every page is checked at a desktop and at a phone width, over the same seeded data.
VIEWPORTS = [{"width": 1280, "height": 900}, {"width": 390, "height": 844}]
OTLP = "/api/otel/v1/traces"


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
    # ---- Page kinds added for issue #29 (each with data; see seed_more_page_kinds). The merger
    # moves these into tests/browser/page_kinds.py with the list above. ----
    pages += [
        data["finished"]["comparison"],  # the rubric editor above lists it under "Recent"
        data["finished"]["consistency"],
        f"/reviews/alerts/rules/{data['alert_rule'].id}/",
        f"/runs/{data['over_budget'].id}/",
        f"/runs/{data['otel_run'].id}/",
        "/team/none/",
    ]
    found = []
    for url in pages:
        page.goto(url)
        found += [f"{url}: {line}" for line in axe_violations(page)]
    return found


def compare_a_draft(page: Any, support: Any, owner: Any) -> dict[str, str]:
    """A finished comparison, reached the way a user does (the editor's compare button), and a
    finished consistency check: both judged to the end here (no worker)."""
    consistency = consistency_check(rubric=support, user=owner, sample=3, repeats=2)
    page.goto(f"/rubrics/{support.id}/")
    page.locator('textarea[name="c-1-description"]').fill('Mentions "refund" clearly')
    with page.expect_navigation(url=re.compile(r"/reviews/comparisons/")):
        page.get_by_test_id("compare-draft").click()
    comparison = urlsplit(page.url).path
    assert judge_all_pending() > 0
    page.reload()
    page.locator("#report:not([hx-get])").wait_for()  # done: the report stops polling
    return {"comparison": comparison, "consistency": f"/reviews/calibrations/{consistency.id}/"}


def seed_more_page_kinds(
    data: dict[str, Any], owner: Any, api_key: str, make_run: Any, judge_url: str
) -> None:
    """What the crawl's newer page kinds show: an alert rule with a fired alert, OTLP services
    with a default, spans that became a run and a rejection, API keys, a judge connection, a
    budget, and a run waiting over that budget (last: nothing is judged after it)."""
    support = data["support"]
    team = support.team
    otlp = Client(headers={"Authorization": f"Bearer {api_key}"})
    for spans in (list(two_tool_trace().values()), contentless_trace()):
        body = json.dumps(export_json(spans, {"service.name": "support-agent"}))
        assert otlp.post(OTLP, body, content_type="application/json").status_code == 200
    assert OtelRejection.objects.filter(team=team).exists()
    data["otel_run"] = AgentRun.objects.get(team=team, external_id__startswith="otel:")
    otel_service_set(team=team, service_name="support-agent", rubric=support.slug)
    api_key_create(team=team, name="CI pipeline", created_by=owner)
    connection_create(
        team=team, name="Staging judge", model="openai/gpt-4o-mini",
        api_base=judge_url, api_key="sk-staging-0123456789abcdef",
    )  # fmt: skip
    budget_update(team=team, daily_tokens=1)
    judge_pending(make_run(rubric=support.slug, output=PARTIAL))  # under the limit when started
    data["over_budget"] = judge_pending(make_run(rubric=support.slug, output=PARTIAL))
    assert data["over_budget"].status == Status.OVER_BUDGET
    data["alert_rule"] = alert_rule_create(team=team, kind="budget", threshold=100)
    alert_rule_create(
        team=team, kind="criterion_failure_rate", rubric=support.slug, criterion_key="c1",
        threshold=50,
    )  # fmt: skip
    alerts_evaluate(team_id=team.id)
    assert Alert.objects.filter(rule=data["alert_rule"], resolved_at__isnull=True).exists()


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


def test_every_page_of_the_crawl_has_no_axe_violations_at_desktop_and_phone_width(
    chromium, live_server, browser_page, sign_in, owner, make_rubric, make_run, fake_judge,
    api_key, settings,
):  # fmt: skip
    settings.EVALSITE_OTEL_ASSEMBLE_DELAY = 0  # OTLP spans become a run in the request
    settings.EVALSITE_JUDGE_ALLOW_PRIVATE = True  # the team's connection is the fake judge
    data = seed(make_rubric, make_run)
    support = data["support"]
    data["batch"] = rescore_in_process(support)
    data["reviewed"] = label_some_runs(support, owner)
    RunReview.objects.filter(rubric=support, run__in=data["reviewed"][:3]).update(golden=True)
    data["calibration"] = golden_run(rubric=support, user=owner)
    data["trajectory"] = make_trajectory_run(support.team, support)
    page = sign_in(browser_page, owner)
    data["finished"] = compare_a_draft(page, support, owner)
    seed_more_page_kinds(data, owner, api_key, make_run, fake_judge.url)

    names = chart_point_names(page)
    assert any(" passed (" in name for name in names), names
    assert any(name.startswith("Judge tokens per day · ") for name in names), names
    found = []
    signed_out = chromium.new_context(base_url=live_server.url)
    login = signed_out.new_page()
    for viewport in VIEWPORTS:
        where = f"{viewport['width']} px"
        page.set_viewport_size(viewport)
        found += [f"{where} {line}" for line in crawl(page, data)]
        login.set_viewport_size(viewport)
        login.goto("/accounts/login/")
        found += [f"{where} /accounts/login/: {line}" for line in axe_violations(login)]
    signed_out.close()
    assert not found, "axe-core violations:\n" + "\n".join(found)


def test_the_empty_pages_of_a_new_team_have_no_axe_violations(browser_page, sign_in, owner):
    """Before any data: each list's empty state (its heading follows the page's h1)."""
    page = sign_in(browser_page, owner)
    found = []
    for viewport in VIEWPORTS:
        page.set_viewport_size(viewport)
        for url in ("/", "/runs/", "/rubrics/", "/failures/", "/batches/", "/reviews/alerts/"):
            page.goto(url)
            found += [f"{viewport['width']} px {url}: {line}" for line in axe_violations(page)]
    assert not found, "axe-core violations:\n" + "\n".join(found)
