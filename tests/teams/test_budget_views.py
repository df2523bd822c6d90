"""The judge budget on the team settings page and the home page's usage bars."""

from __future__ import annotations

import pytest
from django.urls import reverse

from judging.services.budget import budget_update
from judging.services.execute import evaluation_execute
from runs.models import Evaluation
from runs.models.budget import JudgeBudget
from tests.page_helpers import signed_in

pytestmark = pytest.mark.django_db


def test_an_editor_sets_the_budget_and_empty_fields_mean_no_limit(teammate, team):
    client = signed_in(teammate)

    saved = client.post(reverse("team_budget_save"), {"daily_tokens": "50000", "monthly_usd": ""})

    assert saved.status_code == 302
    budget = JudgeBudget.objects.get(team=team)
    assert budget.daily_tokens == 50_000 and budget.monthly_usd is None
    page = client.get(reverse("team_settings")).content.decode()
    assert 'value="50000"' in page and "Daily token budget used" in page


def test_a_negative_budget_is_refused_naming_the_field(owner, team):
    response = signed_in(owner).post(reverse("team_budget_save"), {"daily_usd": "-2"})

    assert response.status_code == 422
    assert "greater than or equal to 0" in response.content.decode()
    assert not JudgeBudget.objects.filter(team=team).exists()


def test_a_viewer_sees_the_budget_but_cannot_change_it(viewer, team):
    budget_update(team=team, monthly_tokens=900)
    client = signed_in(viewer)

    page = client.get(reverse("team_settings")).content.decode()
    refused = client.post(reverse("team_budget_save"), {"daily_tokens": "1"})

    assert "900 tokens" in page and 'action="/team/budget/"' not in page
    assert refused.status_code == 403
    assert JudgeBudget.objects.get(team=team).daily_tokens is None


def test_home_shows_usage_against_the_budget_as_a_progress_bar(
    owner, team, make_rubric, make_run, fake_judge
):
    run = make_run(rubric=make_rubric().slug)
    evaluation_execute(evaluation_id=str(Evaluation.objects.get(run=run).id))
    budget_update(team=team, daily_tokens=1)

    page = signed_in(owner).get(reverse("home")).content.decode()

    assert 'aria-label="Daily token budget used"' in page
    assert 'aria-valuenow="100.0"' in page and "budget is reached" in page


def test_home_shows_no_budget_card_without_a_budget(owner):
    page = signed_in(owner).get(reverse("home")).content.decode()

    assert "budget used" not in page


# --- Saving a budget below what is already used ------------------------------------------------


@pytest.fixture
def used_today(team, make_rubric, make_run, fake_judge) -> int:
    """Judge tokens the team used today (one judged run)."""
    run = make_run(rubric=make_rubric().slug)
    evaluation = Evaluation.objects.get(run=run)
    evaluation_execute(evaluation_id=str(evaluation.id))
    evaluation.refresh_from_db()
    used = evaluation.prompt_tokens + evaluation.completion_tokens
    assert used > 1
    return used


def test_a_daily_budget_below_todays_use_warns_with_the_use_and_saves_only_when_confirmed(
    owner, team, used_today
):
    client = signed_in(owner)

    asked = client.post(reverse("team_budget_save"), {"daily_tokens": "1", "monthly_usd": "5"})

    assert asked.status_code == 200
    page = asked.content.decode()
    assert 'data-testid="budget-warning"' in page and "Not saved yet" in page
    assert f"daily token budget of 1 is below the {used_today:,} tokens already used today" in page
    assert 'name="confirm" value="1"' in page and "Save anyway" in page
    assert not JudgeBudget.objects.filter(team=team).exists()

    confirmed = client.post(
        reverse("team_budget_save"), {"daily_tokens": "1", "monthly_usd": "5.0", "confirm": "1"}
    )

    assert confirmed.status_code == 302
    budget = JudgeBudget.objects.get(team=team)
    assert (budget.daily_tokens, budget.monthly_usd) == (1, 5.0)


def test_a_daily_budget_above_todays_use_saves_without_asking(owner, team, used_today):
    saved = signed_in(owner).post(reverse("team_budget_save"), {"daily_tokens": str(used_today)})

    assert saved.status_code == 302
    assert JudgeBudget.objects.get(team=team).daily_tokens == used_today


def test_the_save_anyway_form_carries_a_csrf_token(owner, team, used_today):
    client = signed_in(owner, enforce_csrf_checks=True)
    page = client.get(reverse("team_settings"))
    token = page.cookies["csrftoken"].value

    asked = client.post(
        reverse("team_budget_save"), {"daily_tokens": "1", "csrfmiddlewaretoken": token}
    )

    warning = asked.content.decode().split('data-testid="budget-warning"')[1].split("</form>")[0]
    assert 'name="csrfmiddlewaretoken"' in warning
    refused = signed_in(owner, enforce_csrf_checks=True).post(
        reverse("team_budget_save"), {"daily_tokens": "1", "confirm": "1"}
    )
    assert refused.status_code == 403
    assert not JudgeBudget.objects.filter(team=team).exists()
