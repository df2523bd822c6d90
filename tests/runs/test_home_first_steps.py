"""A new team's home shows its first steps (rubric, API key, first run) until it has runs, each
ticked when done, with a curl snippet that works as shown; the cost card does not blame prices
when there were no judge calls. Django client; the snippet is sent through the real API."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from runs.models import AgentRun
from teams.models import ApiKey
from tests.api_client import Api
from tests.page_helpers import judged_run, signed_in

pytestmark = pytest.mark.django_db


def home(user) -> str:
    response = signed_in(user).get(reverse("home"))
    assert response.status_code == 200
    return response.content.decode()


def step(page: str, name: str) -> str:
    match = re.search(rf'data-testid="step-{name}" data-done="(true|false)"', page)
    assert match, f"no step {name}"
    return match.group(1)


def curl_body(page: str) -> dict:
    snippet = html.unescape(page.split('data-testid="first-run-curl">')[1].split("</pre>")[0])
    return json.loads(snippet.split("-d '")[1].rsplit("'", 1)[0])


def test_a_new_team_sees_three_steps_to_do_and_no_price_blamed_for_missing_calls(owner):
    page = home(owner)

    assert 'data-testid="first-steps"' in page and "0 of 3 done" in page
    assert (step(page, "rubric"), step(page, "key"), step(page, "run")) == ("false",) * 3
    assert f'href="{reverse("rubric_new")}"' in page
    assert 'href="/team/#keys-h"' in page
    assert "curl -sS http://testserver/api/runs" in page
    assert "export EVALSITE_URL=http://testserver" in page
    assert curl_body(page)["rubric"] == "your-rubric"
    cost_card = page.split('data-testid="judge-cost"')[1].split("</div></div>")[0]
    assert "No judge calls yet" in cost_card and "price" not in cost_card
    assert "has a price for this judge model" not in page  # nor does the cost chart
    assert page.count("No judge calls yet.") == 3  # the cost card and both charts


def test_steps_tick_as_the_rubric_and_key_are_made_and_the_snippet_names_them(
    owner, team, make_rubric, api_key
):
    rubric = make_rubric()
    prefix = ApiKey.objects.get(team=team).prefix

    page = home(owner)

    assert "2 of 3 done" in page
    assert (step(page, "rubric"), step(page, "key"), step(page, "run")) == ("true", "true", "false")
    assert f"<code>{rubric.slug}</code>" in page and f"<code>{prefix}…</code>" in page
    assert curl_body(page)["rubric"] == rubric.slug
    assert f"--rubric {rubric.slug}" in page


def test_the_curl_snippets_run_is_accepted_and_the_steps_go_away(
    owner, team, make_rubric, api_key, fake_judge
):
    make_rubric()
    body = curl_body(home(owner))

    created = Api(api_key).post("/runs", body)

    assert created.status_code == 201, created.content
    run = AgentRun.objects.get(team=team)
    assert run.rubric is not None and run.evaluations.exists()
    assert 'data-testid="first-steps"' not in home(owner)


def test_a_revoked_key_does_not_tick_the_key_step(owner, team, api_key):
    ApiKey.objects.filter(team=team).update(revoked_at=timezone.now())

    assert step(home(owner), "key") == "false"


def test_a_viewer_is_told_who_can_do_each_step(viewer):
    page = home(viewer)

    assert "An editor can make one." in page and "An owner of the team can make one." in page
    assert f'href="{reverse("rubric_new")}"' not in page


def test_a_team_with_judged_runs_sees_no_steps_and_the_cost_card_speaks_of_prices(
    owner, make_rubric, make_run, fake_judge
):
    judged_run(make_run, rubric=make_rubric().slug)

    page = home(owner)

    assert 'data-testid="first-steps"' not in page
    cost_card = page.split('data-testid="judge-cost"')[1].split("</div></div>")[0]
    assert "No judge calls yet" not in cost_card and "price" in cost_card
