"""GET/PUT /api/team/budget and GET /api/usage: scoped to the caller's team, bad input a 422
naming the field."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.utils import timezone

from judging.services.budget import budget_update
from judging.services.execute import evaluation_execute
from runs.models import Evaluation
from tests.api_client import assert_error, field_locs


def judged_run(make_run, rubric):
    run = make_run(rubric=rubric.slug)
    evaluation = Evaluation.objects.get(run=run)
    evaluation_execute(evaluation_id=str(evaluation.id))
    evaluation.refresh_from_db()
    return evaluation


def test_a_budget_put_is_read_back_with_the_days_usage(api, fake_judge, make_rubric, make_run):
    used = judged_run(make_run, make_rubric())

    put = api.put("/team/budget", {"daily_tokens": 50_000, "monthly_usd": 12.5})

    assert put.status_code == 200, put.content
    body = api.get("/team/budget").json()
    assert body["daily_tokens"] == 50_000 and body["monthly_usd"] == 12.5
    assert body["daily_usd"] is None and body["monthly_tokens"] is None
    day, month = body["usage"]
    assert day["period"] == "day" and month["period"] == "month"
    assert day["tokens"] == used.prompt_tokens + used.completion_tokens
    assert day["token_limit"] == 50_000 and day["token_percent"] < 100
    assert month["usd_limit"] == 12.5 and day["reached"] is False


@pytest.mark.parametrize("field", ["daily_tokens", "daily_usd", "monthly_tokens", "monthly_usd"])
def test_a_negative_budget_is_a_422_naming_the_field(api, field):
    [loc] = field_locs(api.put("/team/budget", {field: -1}))

    assert loc[0] == "body" and loc[-1] == field


def test_an_unknown_budget_field_is_a_422_naming_it(api):
    assert ["body", "payload", "weekly_tokens"] in field_locs(
        api.put("/team/budget", {"weekly_tokens": 5})
    )


def test_a_viewer_cannot_set_the_budget(session_api, viewer):
    assert_error(session_api(viewer).put("/team/budget", {"daily_tokens": 5}), 403)


def test_usage_is_grouped_per_day_rubric_and_judge_model(api, fake_judge, make_rubric, make_run):
    rubric = make_rubric()
    first, second = judged_run(make_run, rubric), judged_run(make_run, rubric)
    tokens = sum(e.prompt_tokens + e.completion_tokens for e in (first, second))

    body = api.get("/usage").json()

    [day] = body["days"]
    assert day["day"] == timezone.now().date().isoformat()
    assert day["evaluations"] == 2 and day["tokens"] == tokens
    [by_rubric] = body["rubrics"]
    assert by_rubric["rubric_id"] == str(rubric.id) and by_rubric["rubric_name"] == rubric.name
    [by_model] = body["models"]
    assert by_model["judge_model"] == first.judge_model and by_model["tokens"] == tokens
    assert day["calls"] == first.judge_calls + second.judge_calls


def test_usage_of_another_team_is_not_shown(other_api, fake_judge, make_rubric, make_run):
    judged_run(make_run, make_rubric())

    body = other_api.get("/usage").json()

    assert body["days"] == [] and body["rubrics"] == [] and body["models"] == []


def test_an_unknown_cost_is_counted_as_unpriced_not_as_zero(api, fake_judge, make_rubric, make_run):
    evaluation = judged_run(make_run, make_rubric())
    Evaluation.objects.filter(pk=evaluation.pk).update(cost=None)

    [day] = api.get("/usage").json()["days"]

    assert day["cost"] is None and day["unpriced"] == 1 and day["tokens"] > 0


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"start": "2026-02-30"}, "start"),
        ({"end": "yesterday"}, "end"),
        ({"start": "2026-03-02", "end": "2026-03-01"}, "end"),
        ({"start": "2026-01-01", "end": "2026-06-01"}, "start"),
    ],
)
def test_a_bad_usage_range_is_a_422_naming_the_field(api, params, field):
    [loc] = field_locs(api.get("/usage", **params))

    assert loc[0] == "query" and loc[-1] == field


def test_the_longest_range_is_accepted(api):
    end = date(2026, 3, 31)
    start = end - timedelta(days=91)

    response = api.get("/usage", start=start.isoformat(), end=end.isoformat())

    assert response.status_code == 200 and response.json()["start"] == start.isoformat()


def test_a_run_waiting_over_budget_reads_as_over_budget_and_filters_by_it(
    api, team, fake_judge, make_rubric, make_run
):
    budget_update(team=team, daily_tokens=0)
    waiting = judged_run(make_run, make_rubric())

    run = api.get(f"/runs/{waiting.run_id}").json()
    listed = api.get("/runs", status="over_budget").json()

    assert run["status"] == "over_budget"
    assert [r["id"] for r in listed["items"]] == [str(waiting.run_id)]


def test_a_budget_put_below_todays_use_is_saved_with_a_warning(
    api, team, fake_judge, make_rubric, make_run
):
    run = make_run(rubric=make_rubric().slug)
    evaluation_execute(evaluation_id=str(Evaluation.objects.get(run=run).id))

    below = api.put("/team/budget", {"daily_tokens": 1})
    above = api.put("/team/budget", {"daily_tokens": 10_000_000})

    assert below.status_code == 200 and above.status_code == 200
    (warning,) = below.json()["warnings"]
    assert warning.startswith("The daily token budget of 1 is below the ")
    assert "tokens already used today" in warning
    assert above.json()["warnings"] == []
    assert api.get("/team/budget").json()["warnings"] == []
