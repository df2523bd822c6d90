"""Every kind of page of the site, over demo-like data: the one list the whole-site browser
test walks (test_accessibility.py runs axe on each at 1280 and 390 px, and measures at 390 px
that none scrolls sideways).

``seed_page_kinds`` makes the data through the real services (the judge faked at its HTTP
boundary by the ``fake_judge`` fixture, OTLP spans posted to the real endpoint), with a
signed-in page for what a user reaches by clicking (the comparison, from the rubric editor's
compare button); ``page_urls`` names a URL of each page kind. The login page is visited signed
out by the test.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

from django.test import Client
from django.utils import timezone

from judging.services.budget import budget_update
from reviews.models import Alert, RunReview
from reviews.services.alerts import alert_rule_create, alerts_evaluate
from reviews.services.calibration import consistency_check, golden_run
from runs.models import AgentRun, OtelRejection, Status
from runs.otel.service_rubrics import otel_service_set
from teams.crypto import secret_encrypt
from teams.models import OtelExport
from teams.services import api_key_create, connection_create
from tests.browser.test_screenshots import (
    PARTIAL,
    label_some_runs,
    order_number_key,
    rescore_in_process,
    seed,
)
from tests.browser.test_trajectory import make_run as make_trajectory_run
from tests.otel.otlp import export_json, two_tool_trace
from tests.otel.test_rejections import contentless_trace
from tests.page_helpers import judge_pending
from tests.reviews.conftest import judge_pending as judge_all_pending

OTLP = "/api/otel/v1/traces"
# Long unbroken text a page must wrap, not widen itself for.
LONG_URL = "https://hooks.example.com/services/T0000000000/B0000000000/" + "x" * 48


def seed_page_kinds(
    page: Any, owner: Any, make_rubric: Any, make_run: Any, api_key: str, judge_url: str
) -> dict[str, Any]:
    """The screenshot data plus a re-score batch, reviewer labels, golden runs and their
    calibration, a forty-step trajectory run, a finished comparison and consistency check,
    alerts, OTLP services, API keys, a judge connection and a run waiting over the budget.
    ``page`` is signed in as ``owner``; the caller sets EVALSITE_OTEL_ASSEMBLE_DELAY = 0 and
    EVALSITE_JUDGE_ALLOW_PRIVATE = True (the team's connection is the fake judge)."""
    data = seed(make_rubric, make_run)
    support = data["support"]
    data["batch"] = rescore_in_process(support)
    data["reviewed"] = label_some_runs(support, owner)
    RunReview.objects.filter(rubric=support, run__in=data["reviewed"][:3]).update(golden=True)
    data["calibration"] = golden_run(rubric=support, user=owner)
    data["trajectory"] = make_trajectory_run(support.team, support)
    data["walk_key"] = support.current_version.criteria.first().key
    data["comparison"], data["consistency"] = compare_a_draft(page, support, owner)
    _seed_settings_and_alerts(data, owner, api_key, make_run, judge_url)
    return data


def compare_a_draft(page: Any, support: Any, owner: Any) -> tuple[str, str]:
    """A finished comparison, reached the way a user does (the editor's compare button), and a
    finished consistency check: both judged to the end here (no worker). Their paths."""
    consistency = consistency_check(rubric=support, user=owner, sample=3, repeats=2)
    page.goto(f"/rubrics/{support.id}/")
    page.locator('textarea[name="c-1-description"]').fill('Mentions "refund" clearly')
    with page.expect_navigation(url=re.compile(r"/reviews/comparisons/")):
        page.get_by_test_id("compare-draft").click()
    comparison = urlsplit(page.url).path
    assert judge_all_pending() > 0
    page.reload()
    page.locator("#report:not([hx-get])").wait_for()  # done: the report stops polling
    return comparison, f"/reviews/calibrations/{consistency.id}/"


def _seed_settings_and_alerts(
    data: dict[str, Any], owner: Any, api_key: str, make_run: Any, judge_url: str
) -> None:
    """Alert rules with fired alerts (one with a long webhook URL), OTLP services with a
    default, spans that became a run and a rejection, API keys, a judge connection, a budget,
    and a run waiting over that budget (last: nothing is judged after it)."""
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
    # An export as a receiver that is down leaves it (team settings shows its state).
    OtelExport.objects.create(
        team=team, endpoint=LONG_URL + "/v1/logs", header_names=["x-api-key"],
        headers_ciphertext=secret_encrypt('{"x-api-key": "k"}'), sent_events=812,
        failed_events=3, last_error="HTTP 503 Service Unavailable", last_error_at=timezone.now(),
    )  # fmt: skip
    data["rule"] = alert_rule_create(
        team=team, kind="criterion_failure_rate", rubric=support.slug,
        criterion_key=order_number_key(support), threshold=1, window_hours=168,
        webhook_url=LONG_URL,
    )  # fmt: skip
    budget_update(team=team, daily_tokens=1)
    judge_pending(make_run(rubric=support.slug, output=PARTIAL))  # under the limit when started
    data["over_budget"] = judge_pending(make_run(rubric=support.slug, output=PARTIAL))
    assert data["over_budget"].status == Status.OVER_BUDGET
    data["budget_rule"] = alert_rule_create(team=team, kind="budget", threshold=100)
    alerts_evaluate(team_id=team.id)
    fired = Alert.objects.filter(
        resolved_at__isnull=True, rule__in=[data["rule"], data["budget_rule"]]
    )
    assert fired.count() == 2


def page_urls(data: dict[str, Any]) -> list[str]:
    """A URL of every page kind, signed in as the team's owner."""
    support, reviewed = data["support"], data["reviewed"]
    return [
        "/",
        "/runs/",
        "/runs/?passed=false",
        f"/runs/{data['failed'].id}/",
        f"/runs/{data['trajectory'].id}/",
        f"/runs/{data['over_budget'].id}/",
        f"/runs/{data['otel_run'].id}/",
        "/rubrics/",
        "/rubrics/new/",
        f"/rubrics/{support.id}/",
        f"/rubrics/{support.id}/?a=1&b=2",
        f"/failures/?rubric={support.id}",
        f"/failures/{support.id}/{data['walk_key']}/",
        "/batches/",
        f"/batches/{data['batch'].id}/",
        f"/reviews/{support.id}/",
        f"/reviews/{support.id}/runs/{reviewed[0].id}/",
        f"/reviews/{support.id}/runs/{reviewed[3].id}/",
        f"/reviews/{support.id}/agreement/",
        f"/reviews/{support.id}/golden/",
        f"/reviews/{support.id}/consistency/",
        f"/reviews/{support.id}/suggestions/",
        f"/reviews/calibrations/{data['calibration'].id}/",
        data["consistency"],
        data["comparison"],
        "/reviews/alerts/",
        f"/reviews/alerts/rules/{data['rule'].id}/",
        f"/reviews/alerts/rules/{data['budget_rule'].id}/",
        "/team/",
        "/team/otel/",
        "/team/none/",
        "/no-such-page/",
    ]
