"""The judge budget in a real browser: set in team settings, shown on the home page."""

from __future__ import annotations

import pytest
from django.db.models import Sum
from playwright.sync_api import expect

from runs.models import Evaluation
from runs.models_budget import JudgeBudget
from tests.page_helpers import judged_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_set_a_daily_budget_in_team_settings_and_see_usage_against_it_on_home(
    browser_page, sign_in, owner, team, make_rubric, make_run, fake_judge
):
    rubric = make_rubric()
    judged_run(make_run, rubric=rubric.slug)
    used = Evaluation.objects.aggregate(t=Sum("prompt_tokens") + Sum("completion_tokens"))["t"]
    page = sign_in(browser_page, owner)

    page.goto("/team/")
    page.get_by_label("Tokens per day").fill("50000")
    page.get_by_role("button", name="Save budget").click()
    expect(page.get_by_text("Judge budget saved.")).to_be_visible()
    assert JudgeBudget.objects.get(team=team).daily_tokens == 50_000

    page.goto("/")
    bar = page.get_by_role("progressbar", name="Daily token budget used")
    expect(bar).to_be_visible()
    expect(bar).to_have_attribute("aria-valuenow", str(round(used / 50_000 * 100, 1)))
    expect(page.locator(".budget-usage")).to_contain_text(f"{used:,} / 50,000")
    expect(page.get_by_text("calls of unknown cost count in tokens only")).to_be_visible()
