"""Over budget reads "Waiting for budget — resumes <when>" on every surface, <when> from the
budget rules (judging.services.budget_wait): the next UTC day or month for a reached limit, "when
the budget is raised" for a limit of 0. Real engine, fake judge over HTTP, Django client."""

from __future__ import annotations

from datetime import UTC, date, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from judging.services.budget import budget_update
from judging.services.budget_wait import budget_wait
from judging.services.rescore import RescoreScope, batch_create, batch_dispatch
from runs.models import Evaluation, Status
from tests.page_helpers import judge_pending, judged_run, signed_in

pytestmark = pytest.mark.django_db


def resumes_on(day: date) -> str:
    return f"Waiting for budget — resumes {day.day} {day:%b %Y}, 00:00 UTC"


def tomorrow() -> date:
    return timezone.now().astimezone(UTC).date() + timedelta(days=1)


def next_month() -> date:
    today = timezone.now().astimezone(UTC).date()
    return (today.replace(day=28) + timedelta(days=4)).replace(day=1)


@pytest.fixture
def rubric(make_rubric):
    return make_rubric()


@pytest.fixture
def waiting_run(team, rubric, make_run, fake_judge):
    """A run parked over budget: the first run uses up a daily budget of 1 token."""
    budget_update(team=team, daily_tokens=1)
    judged_run(make_run, rubric=rubric.slug, external_id="first")
    run = judged_run(make_run, rubric=rubric.slug, external_id="waits")
    assert run.status == Status.OVER_BUDGET
    return run


def test_a_reached_daily_limit_resumes_at_the_next_utc_midnight(team, waiting_run):
    wait = budget_wait(team_id=team.pk)

    assert wait.resumes_at is not None and wait.resumes_at.date() == tomorrow()
    assert wait.label == resumes_on(tomorrow())


def test_a_reached_monthly_limit_resumes_on_the_first_of_next_month(
    team, rubric, make_run, fake_judge
):
    budget_update(team=team, monthly_tokens=1, daily_tokens=1)
    judged_run(make_run, rubric=rubric.slug)

    # Both reached: the day's end does not help while the month's limit holds.
    assert budget_wait(team_id=team.pk).label == resumes_on(next_month())


def test_a_limit_of_zero_resumes_only_when_the_budget_is_raised(team):
    budget_update(team=team, daily_usd=0)

    wait = budget_wait(team_id=team.pk)

    assert wait.raise_needed and wait.resumes_at is None
    assert wait.label == "Waiting for budget — resumes when the budget is raised"


def test_a_budget_with_room_again_resumes_shortly(team):
    budget_update(team=team, daily_tokens=1_000_000)

    assert budget_wait(team_id=team.pk).label == (
        "Waiting for budget — resumes shortly (the budget has room again)"
    )


def test_the_runs_list_and_its_status_cell_say_when_a_waiting_run_resumes(owner, waiting_run):
    client = signed_in(owner)

    page = client.get(reverse("run_list")).content.decode()
    cell = client.get(reverse("run_status", args=[waiting_run.pk])).content.decode()

    for html in (page, cell):
        assert resumes_on(tomorrow()) in html
        assert "Over budget" not in html and "not judged" not in html
    assert "hx-trigger" not in cell  # waiting, not judging: the cell does not poll
    # The status filter offers it under the same name.
    assert '<option value="over_budget" >Waiting for budget</option>' in page


def test_the_run_page_says_when_it_resumes_without_a_spinner(owner, waiting_run):
    response = signed_in(owner).get(reverse("run_detail", args=[waiting_run.pk]))

    html = response.content.decode()
    assert html.count(resumes_on(tomorrow())) >= 3  # the callout, the badges, the rubric card
    assert 'data-testid="budget-wait"' in html and 'data-testid="rubric-budget-wait"' in html
    assert "spinner" not in html
    assert "over_budget…" not in html and "Evaluation over" not in html
    assert 'hx-trigger="every 30s"' in html


def test_home_counts_waiting_evaluations_under_the_same_words(owner, waiting_run):
    html = signed_in(owner).get(reverse("home")).content.decode()

    assert resumes_on(tomorrow()) in html
    assert "Over budget" not in html


def test_a_batch_paused_on_the_budget_says_when_it_resumes(
    owner, team, rubric, make_run, fake_judge
):
    runs = [judged_run(make_run, rubric=rubric.slug, external_id=f"r{i}") for i in range(2)]
    budget_update(team=team, daily_tokens=1)
    batch, _ = batch_create(
        team=team, rubric=rubric, scope=RescoreScope(runs=tuple(r.pk for r in runs)), force=True
    )
    batch_dispatch(batch_id=batch.pk)
    for run in runs:
        judge_pending(run)
    assert Evaluation.objects.filter(batch=batch, status=Status.OVER_BUDGET).exists()

    html = signed_in(owner).get(reverse("batch_detail", args=[batch.pk])).content.decode()

    assert 'data-testid="batch-budget-wait"' in html
    assert resumes_on(tomorrow()) in html
