"""GET /api/rubrics/{rubric}/trend: pass rate per UTC day, one series per rubric version."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rubrics.services import rubric_set_criteria
from tests.api_client import assert_error, field_locs
from tests.conftest import queued_evaluation
from tests.reviews.conftest import CRITERIA, FAILING, PASSING, judge_pending


@pytest.fixture
def rubric(make_rubric, fake_judge):
    return make_rubric(criteria=CRITERIA, alignment_mode="off")


def test_the_trend_has_one_series_per_version_with_daily_runs_and_pass_rates(api, rubric, make_run):
    runs = [make_run(rubric=rubric.slug, output=out) for out in (PASSING, PASSING, FAILING)]
    judge_pending()
    rubric_set_criteria(rubric=rubric, criteria='- Says "thanks"')
    rubric.refresh_from_db()
    queued_evaluation(run=runs[0], kind="rubric", rubric=rubric, version=rubric.current_version)
    judge_pending()  # one passing run re-scored on v2: it counts there now

    response = api.get(f"/rubrics/{rubric.slug}/trend")

    assert response.status_code == 200, response.content
    body = response.json()
    today = datetime.now(UTC).date().isoformat()
    assert body["days"] == 30
    assert [(s["version"], s["points"]) for s in body["series"]] == [
        (1, [{"day": today, "runs": 2, "pass_rate": 0.5}]),
        (2, [{"day": today, "runs": 1, "pass_rate": 1.0}]),
    ]
    assert [s["took_over"] for s in body["series"]] == [None, today]
    # By id as by slug, and a shorter window holds today.
    again = api.get(f"/rubrics/{rubric.id}/trend", days=1).json()
    assert again["series"] == body["series"] and again["days"] == 1


def test_a_rubric_without_results_has_no_series(api, rubric):
    assert api.get(f"/rubrics/{rubric.slug}/trend").json()["series"] == []


@pytest.mark.parametrize("days", [0, 366, -5, "many"])
def test_days_out_of_range_is_a_422_naming_the_field(api, rubric, days):
    assert field_locs(api.get(f"/rubrics/{rubric.slug}/trend", days=days)) == [["query", "days"]]


def test_another_teams_rubric_is_a_404(api, make_rubric, other_team, make_run):
    theirs = make_rubric(team=other_team, name="Theirs", criteria=CRITERIA)
    make_run(team=other_team, rubric=theirs.slug, output=PASSING)
    assert_error(api.get(f"/rubrics/{theirs.id}/trend"), 404)
    assert_error(api.get("/rubrics/nope/trend"), 404)
