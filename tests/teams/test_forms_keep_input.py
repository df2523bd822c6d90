"""Every team settings form shows its error beside what was typed (nothing typed is lost):
the budget, a new connection, a new API key and the team's confirmation settings."""

from __future__ import annotations

import pytest
from django.urls import reverse

from runs.models.budget import JudgeBudget
from teams.models import JudgeConnection
from tests.page_helpers import signed_in

pytestmark = pytest.mark.django_db


def test_the_budget_form_keeps_every_limit_typed_when_one_is_refused(owner, team):
    response = signed_in(owner).post(
        reverse("team_budget_save"),
        {"daily_tokens": "-5", "daily_usd": "12.5", "monthly_tokens": "900000", "monthly_usd": ""},
    )

    page = response.content.decode()
    assert response.status_code == 422
    assert 'value="-5"' in page and 'value="12.5"' in page and 'value="900000"' in page
    assert not JudgeBudget.objects.filter(team=team).exists()


def test_a_refused_connection_keeps_its_name_model_and_address_but_never_the_key(owner, team):
    response = signed_in(owner).post(
        reverse("connection_new"),
        {
            "new-name": "Team judge",
            "new-model": "bogusprovider/nomodel",
            "new-api_base": "https://judge.example.com/v1",
            "new-api_key": "sk-typed-secret",
        },
    )

    page = response.content.decode()
    assert 'value="Team judge"' in page and 'value="bogusprovider/nomodel"' in page
    assert 'value="https://judge.example.com/v1"' in page
    assert "sk-typed-secret" not in page  # a secret is typed again, never sent back
    assert not JudgeConnection.objects.filter(team=team).exists()


def test_a_refused_key_name_is_kept(owner, team):
    long_name = "pipeline-" + "x" * 120

    response = signed_in(owner).post(reverse("api_key_new"), {"name": long_name})

    page = response.content.decode()
    assert f'value="{long_name}"' in page and "at most 100 characters" in page


def test_the_confirmation_settings_keep_what_was_typed_on_an_error(owner, team):
    response = signed_in(owner).post(
        reverse("team_settings_save"),
        {
            "confirm_cost_above": "7.50",
            "confirm_tokens_above": "150000",
            "judge_prices": "openai/my-judge 0.15\nopenai/other 1 2",
        },
    )

    page = response.content.decode()
    assert "line 1: write" in page
    assert 'value="7.50"' in page and 'value="150000"' in page and "openai/other 1 2" in page
