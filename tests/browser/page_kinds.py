"""Every kind of page of the site, over demo-like data: the one list the whole-site browser
tests walk (test_accessibility.py runs axe on each, test_phone.py measures each at 390 px).

``seed_page_kinds`` makes the data (through the real services, the judge faked at its HTTP
boundary by the ``fake_judge`` fixture); ``page_urls`` names a URL of each page kind reached
by address; ``open_comparison`` reaches the comparison page the way a user does, from the
rubric editor's compare button. The login page is visited signed out by each test.
"""

from __future__ import annotations

import re
from typing import Any

from reviews.models import RunReview
from reviews.services.alerts import alert_rule_create, alerts_evaluate
from reviews.services.calibration import golden_run
from runs.otel.rejections import no_content, otel_rejections_record
from runs.otel.service_rubrics import otel_service_set
from tests.browser.test_screenshots import (
    label_some_runs,
    order_number_key,
    rescore_in_process,
    seed,
)
from tests.browser.test_trajectory import make_run as make_trajectory_run

# Long unbroken text a page must wrap, not widen itself for.
LONG_URL = "https://hooks.example.com/services/T0000000000/B0000000000/" + "x" * 48


def seed_page_kinds(owner: Any, make_rubric: Any, make_run: Any) -> dict[str, Any]:
    """The screenshot data plus a re-score batch, reviewer labels, golden runs and their
    calibration, a forty-step trajectory run, a firing alert, an OTLP service default and a
    rejected trace."""
    data = seed(make_rubric, make_run)
    support = data["support"]
    data["batch"] = rescore_in_process(support)
    data["reviewed"] = label_some_runs(support, owner)
    RunReview.objects.filter(rubric=support, run__in=data["reviewed"][:3]).update(golden=True)
    data["calibration"] = golden_run(rubric=support, user=owner)
    data["trajectory"] = make_trajectory_run(support.team, support)
    data["walk_key"] = support.current_version.criteria.first().key
    data["rule"] = alert_rule_create(
        team=support.team, kind="criterion_failure_rate", rubric=support.slug,
        criterion_key=order_number_key(support), threshold=1, window_hours=168,
        webhook_url=LONG_URL,
    )  # fmt: skip
    assert alerts_evaluate(team_id=support.team_id).fired == 1
    otel_service_set(team=support.team, service_name="support-bot-production", rubric=support.slug)
    otel_rejections_record(team=support.team, rejections=[no_content("f" * 32, "e" * 16, 3)])
    return data


def page_urls(data: dict[str, Any]) -> list[str]:
    """A URL of every page kind reached by address, signed in as the team's owner."""
    support, reviewed = data["support"], data["reviewed"]
    return [
        "/",
        "/runs/",
        "/runs/?passed=false",
        f"/runs/{data['failed'].id}/",
        f"/runs/{data['trajectory'].id}/",
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
        f"/reviews/calibrations/{data['calibration'].id}/",
        "/reviews/alerts/",
        f"/reviews/alerts/rules/{data['rule'].id}/",
        "/team/",
        "/team/otel/",
        "/no-such-page/",
    ]


def open_comparison(page: Any, data: dict[str, Any]) -> None:
    """Reach the comparison page from the editor's compare button, a criterion reworded."""
    page.goto(f"/rubrics/{data['support'].id}/")
    page.locator('textarea[name="c-1-description"]').fill('Mentions "refund" clearly')
    with page.expect_navigation(url=re.compile(r"/reviews/comparisons/")):
        page.get_by_test_id("compare-draft").click()
