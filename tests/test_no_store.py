"""Pages that edit state answer ``Cache-Control: no-store``: a page the browser brings back from
its history (the back button) is fetched again, so it never shows (or autosaves) a form older
than what the server holds. Refused posts that render their form again say so too."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from reviews.services.alerts import alert_rule_create
from tests.reviews.conftest import CRITERIA, judge_pending

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(owner, team, make_rubric, make_run, fake_judge) -> dict[str, Any]:
    rubric = make_rubric(criteria=CRITERIA, alignment_mode="off")
    run = make_run(rubric=rubric.slug)
    judge_pending()
    rule = alert_rule_create(
        team=team, kind="criterion_failure_rate", rubric=rubric.slug, criterion_key="c2",
        threshold=50,
    )  # fmt: skip
    client = Client()
    client.force_login(owner)
    return {"client": client, "rubric": rubric.id, "run": run.id, "rule": rule.id}


EDITING_PAGES = [
    ("rubric_new", []),
    ("rubric_detail", ["rubric"]),
    ("reviews:queue", ["rubric"]),
    ("reviews:review", ["rubric", "run"]),
    ("reviews:golden", ["rubric"]),
    ("reviews:consistency", ["rubric"]),
    ("reviews:alerts", []),
    ("reviews:alert_rule_edit", ["rule"]),
    ("team_settings", []),
    ("otel_services", []),
]


def no_store(response) -> bool:
    return "no-store" in response.get("Cache-Control", "")


@pytest.mark.parametrize("name,args", EDITING_PAGES)
def test_a_page_that_edits_state_is_never_stored_by_the_browser(site, name, args):
    response = site["client"].get(reverse(name, args=[site[a] for a in args]))

    assert response.status_code == 200
    assert no_store(response), response.get("Cache-Control")


REFUSED_POSTS = [
    ("rubric_new", [], {"name": ""}),
    ("reviews:verdict", ["rubric", "run"], {"criterion": "c2", "satisfied": "false"}),
    ("reviews:alert_rule_new", [], {"kind": "nonsense"}),
    ("team_settings_save", [], {"confirm_cost_above": "-1"}),
]


@pytest.mark.parametrize("name,args,data", REFUSED_POSTS)
def test_a_refused_post_showing_its_form_again_is_never_stored(site, name, args, data):
    response = site["client"].post(reverse(name, args=[site[a] for a in args]), data)

    assert response.status_code in (200, 422)  # the form again, not a redirect
    assert b'class="errorlist' in response.content
    assert no_store(response), response.get("Cache-Control")


def test_a_read_only_page_keeps_the_default_caching(site):
    response = site["client"].get(reverse("run_list"))

    assert response.status_code == 200 and not no_store(response)
