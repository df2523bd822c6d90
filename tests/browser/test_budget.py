"""The judge budget and alerts in a real browser: a budget set in team settings, usage shown
on the home page, a budget alert rule added on the alerts page and its alert listed there."""

from __future__ import annotations

import pytest
from django.db.models import Sum
from playwright.sync_api import expect

from reviews.services.alerts import alerts_evaluate
from runs.models import Evaluation
from runs.models.budget import JudgeBudget
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


def test_add_a_budget_alert_rule_and_see_the_alert_it_fires_on_the_alerts_page(
    browser_page, sign_in, owner, team, make_rubric, make_run, fake_judge
):
    judged_run(make_run, rubric=make_rubric().slug)
    page = sign_in(browser_page, owner)
    page.goto("/team/")
    page.get_by_label("Tokens per day").fill("1")  # the run's judge tokens are well over it
    page.get_by_role("button", name="Save budget").click()
    # Below today's use: the page asks before saving.
    page.get_by_test_id("budget-warning").get_by_role("button", name="Save anyway").click()
    expect(page.get_by_text("Judge budget saved.")).to_be_visible()

    page.goto("/reviews/alerts/")
    page.get_by_label("When").select_option("budget")
    page.get_by_label("Threshold").fill("80")
    page.get_by_role("button", name="Add rule").click()
    expect(page.get_by_text("Alert rule added.")).to_be_visible()
    assert alerts_evaluate().fired == 1  # what the beat task does every minute
    page.reload()

    history = page.get_by_test_id("alert-history")
    expect(history).to_contain_text("Firing")
    expect(history).to_contain_text("100.0 % of the daily judge budget is used")
    expect(history.get_by_role("link", name="Runs")).to_have_attribute(
        "href", "/runs/?status=over_budget"
    )


def test_a_judge_price_set_in_team_settings_prices_the_calls_shown_on_home(
    browser_page, sign_in, owner, team, make_rubric, make_run, fake_judge
):
    """litellm knows no price for the fake judge: without the team's price its cost is "—"."""
    page = sign_in(browser_page, owner)
    page.goto("/team/")
    page.get_by_label("Judge prices (USD per million tokens)").fill("openai/fake-judge 1000 2000")
    page.locator(
        "form", has=page.get_by_label("Judge prices (USD per million tokens)")
    ).get_by_role("button", name="Save").click()
    team.refresh_from_db()
    assert team.judge_prices == {"openai/fake-judge": {"input": 1000.0, "output": 2000.0}}

    run = judged_run(make_run, rubric=make_rubric().slug)
    [evaluation] = Evaluation.objects.filter(run=run)
    expected = (evaluation.prompt_tokens * 1000 + evaluation.completion_tokens * 2000) / 1e6
    assert evaluation.cost is not None and abs(evaluation.cost - expected) < 1e-9

    page.goto("/")
    card = page.locator(".card.stat", has_text="Judge cost")
    expect(card.locator(".value")).to_have_text(
        f"${expected:.4f}" if expected < 1 else f"${expected:,.2f}"
    )


def test_a_budget_below_todays_use_is_saved_only_after_the_warning_and_runs_then_wait(
    browser_page, sign_in, owner, team, make_rubric, make_run, fake_judge
):
    from datetime import UTC, timedelta

    from django.utils import timezone

    rubric = make_rubric()
    judged_run(make_run, rubric=rubric.slug)
    used = Evaluation.objects.aggregate(t=Sum("prompt_tokens") + Sum("completion_tokens"))["t"]
    page = sign_in(browser_page, owner)

    page.goto("/team/")
    page.get_by_label("Tokens per day").fill("10")
    page.get_by_role("button", name="Save budget").click()
    warning = page.get_by_test_id("budget-warning")
    expect(warning).to_contain_text(f"below the {used:,} tokens already used today")
    assert not JudgeBudget.objects.filter(team=team).exists()
    warning.get_by_role("button", name="Save anyway").click()
    expect(page.get_by_text("Judge budget saved.")).to_be_visible()
    assert JudgeBudget.objects.get(team=team).daily_tokens == 10

    waiting = judged_run(make_run, rubric=rubric.slug, external_id="waits")
    day = timezone.now().astimezone(UTC).date() + timedelta(days=1)
    words = f"Waiting for budget — resumes {day.day} {day:%b %Y}, 00:00 UTC"
    page.goto("/runs/")
    expect(page.get_by_test_id("run-result").first).to_contain_text(words)
    page.goto(f"/runs/{waiting.pk}/")
    expect(page.get_by_test_id("budget-wait")).to_contain_text(words)
    expect(page.locator(".spinner")).to_have_count(0)
