"""Judge prices per team (settings page and API) override litellm's table; with no price the
cost is unknown (null) and the re-score confirmation falls back to the token threshold."""

from __future__ import annotations

import pytest
from django.urls import reverse

from judge_engine import JudgeConfig
from judge_engine.pricing import tokens_cost
from runs.models import Evaluation
from runs.selectors.dashboard import home_overview
from teams.models import Team
from tests.api_client import field_locs
from tests.conftest import FAKE_MODEL
from tests.page_helpers import judge_pending, signed_in

pytestmark = pytest.mark.django_db

PRICE = {"input": 2.0, "output": 8.0}  # USD per million tokens


def priced(team: Team, prices: dict | None = None) -> Team:
    team.judge_prices = {FAKE_MODEL: PRICE} if prices is None else prices
    team.save(update_fields=["judge_prices"])
    return team


def test_the_api_reads_and_replaces_the_prices_and_the_token_threshold(api, team):
    assert api.get("/team/settings").json() == {
        "confirm_cost_above": 5.0, "confirm_tokens_above": 200_000, "judge_prices": {},
        "retention_days": None, "retention_delete_protected": False, "otel_export": None,
    }  # fmt: skip

    answer = api.patch(
        "/team/settings", {"judge_prices": {FAKE_MODEL: PRICE}, "confirm_tokens_above": 1_000}
    )

    assert answer.status_code == 200, answer.content
    assert answer.json()["judge_prices"] == {FAKE_MODEL: PRICE}
    team.refresh_from_db()
    assert (team.judge_prices, team.confirm_tokens_above) == ({FAKE_MODEL: PRICE}, 1_000)
    assert float(team.confirm_cost_above) == 5.0  # not sent, not changed


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"judge_prices": {"m": {"input": -0.01, "output": 1}}}, "judge_prices.m.input"),
        ({"judge_prices": {"m": {"input": 1, "output": "1"}}}, "judge_prices.m.output"),
        ({"judge_prices": {"m": {"input": 1}}}, "judge_prices.m"),
        ({"judge_prices": {"m": 3}}, "judge_prices.m"),
        ({"judge_prices": {"two words": {"input": 1, "output": 1}}}, "judge_prices.two words"),
        ({"confirm_tokens_above": -1}, "confirm_tokens_above"),
        ({"confirm_cost_above": -1}, "confirm_cost_above"),
    ],
)
def test_negative_prices_and_malformed_entries_are_a_422_naming_the_field(api, team, body, field):
    answer = api.patch("/team/settings", body)

    locs = [".".join(str(p) for p in loc[2:]) for loc in field_locs(answer)]
    assert field in locs, locs
    team.refresh_from_db()
    assert team.judge_prices == {} and team.confirm_tokens_above == 200_000


def test_a_viewer_reads_the_prices_but_cannot_change_them(session_api, viewer, team):
    api = session_api(viewer)

    assert api.get("/team/settings").status_code == 200
    assert api.patch("/team/settings", {"judge_prices": {FAKE_MODEL: PRICE}}).status_code == 403


def test_a_judged_evaluation_costs_its_tokens_at_the_teams_price_and_none_without(
    fake_judge, team, make_rubric, make_run
):
    rubric = make_rubric()
    unpriced = judge_pending(make_run(rubric=rubric.slug, output="first"))
    priced(team)
    paid = judge_pending(make_run(rubric=rubric.slug, output="second"))

    [free] = Evaluation.objects.filter(run=unpriced)
    [charged] = Evaluation.objects.filter(run=paid)
    assert free.cost is None and free.prompt_tokens > 0  # unknown, never $0
    expected = (charged.prompt_tokens * 2.0 + charged.completion_tokens * 8.0) / 1_000_000
    assert charged.cost == pytest.approx(expected) and charged.cost > 0
    assert charged.calls[0]["cost"] == pytest.approx(expected)
    assert "price" not in (fake_judge.last_request() or {})  # never sent to the judge
    usage = home_overview(team=team).usage
    assert sum(day["cost"] or 0 for day in usage.values()) == pytest.approx(expected)


def test_a_price_does_not_change_which_verdicts_are_reused():
    plain = JudgeConfig(model=FAKE_MODEL)
    with_price = JudgeConfig(model=FAKE_MODEL, price=(2.0, 8.0))

    assert plain.identity() == with_price.identity()


def test_the_rescore_estimate_uses_the_same_price_as_judging(
    api, fake_judge, team, make_rubric, make_run
):
    rubric = make_rubric()
    judge_pending(make_run(rubric=rubric.slug))
    body = {"rubric": rubric.slug, "dry_run": True, "force": True}  # force: nothing reused

    unknown = api.post("/rescore", body).json()["estimate"]
    priced(team)
    known = api.post("/rescore", body).json()["estimate"]

    assert unknown["cost"] is None and unknown["tokens"] > 0
    assert known["cost"] == pytest.approx(
        tokens_cost(FAKE_MODEL, known["prompt_tokens"], known["completion_tokens"], (2.0, 8.0))
    )
    assert known["cost"] == pytest.approx(
        (known["prompt_tokens"] * 2 + known["completion_tokens"] * 8) / 1e6
    )


def rescore_one(client, run):
    form = {"scope": "run", "run": str(run.pk), "force": "on"}
    return client.post(reverse("rescore_start"), form)


def test_with_no_price_a_rescore_above_the_token_threshold_asks_for_confirmation(
    owner, fake_judge, team, make_rubric, make_run
):
    rubric = make_rubric()
    run = judge_pending(make_run(rubric=rubric.slug))
    team.confirm_cost_above = 0  # the $0 threshold of the issue: never fired for unknown costs
    team.confirm_tokens_above = 10
    team.save()
    client = signed_in(owner)

    asked = rescore_one(client, run)

    assert asked.status_code == 200
    page = asked.content.decode()
    assert "Confirm this re-score" in page and "token threshold" in page
    assert not Evaluation.objects.filter(batch__isnull=False).exists()
    team.confirm_tokens_above = 10_000_000
    team.save()
    assert rescore_one(client, run).status_code == 302
    assert Evaluation.objects.filter(batch__isnull=False).count() == 1


def test_with_a_price_the_cost_threshold_decides_not_the_tokens(
    owner, fake_judge, team, make_rubric, make_run
):
    rubric = make_rubric()
    run = judge_pending(make_run(rubric=rubric.slug))
    priced(team)
    team.confirm_tokens_above = 0  # would ask for any tokens, but the cost is known
    team.confirm_cost_above = 100
    team.save()

    assert rescore_one(signed_in(owner), run).status_code == 302


def test_the_settings_page_saves_prices_one_model_a_line_and_names_bad_lines(owner, team):
    client = signed_in(owner)
    url = reverse("team_settings_save")
    base = {"confirm_cost_above": "5", "confirm_tokens_above": "5000"}

    saved = client.post(url, base | {"judge_prices": f"{FAKE_MODEL} 0.15 0.6\n\nother/m 1 2"})
    malformed = client.post(url, base | {"judge_prices": "just-a-model 1"})
    negative = client.post(url, base | {"judge_prices": "m -1 2"})

    assert saved.status_code == 302
    assert malformed.status_code == 200 and "line 1" in malformed.content.decode()
    assert negative.status_code == 200 and "judge_prices.m.input" in negative.content.decode()
    team.refresh_from_db()
    assert team.judge_prices == {
        FAKE_MODEL: {"input": 0.15, "output": 0.6}, "other/m": {"input": 1.0, "output": 2.0},
    }  # fmt: skip
    assert team.confirm_tokens_above == 5000
    page = client.get(reverse("team_settings")).content.decode()
    assert f"{FAKE_MODEL} 0.15 0.6" in page
