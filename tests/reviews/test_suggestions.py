"""Suggested criterion edits: a malformed or schema-breaking judge answer fails the job with a
clear error and applies nothing; the tokens a suggestion takes count against the team's judge
budget (and survive a recount); a reached budget refuses to ask. The fake judge answers over
HTTP."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from judging.services.budget import budget_update
from judging.services.budget_slices import period_starts
from reviews.models import Suggestion, SuggestionThreshold
from reviews.services import override_create
from reviews.services.suggestions import suggestion_generate, suggestions_request
from rubrics.models import RubricVersion
from runs.models import Evaluation
from runs.models.budget import BudgetCounter
from tests.api_client import assert_error

from .conftest import FAILING, judge_pending


def _disagree(judged_run, reviewer, note: str, n: int = 3) -> list[Any]:
    runs = [judged_run(output=f"{FAILING} (#{i})") for i in range(n)]
    for run in runs:
        override_create(run=run, criterion_key="c2", satisfied=True, note=note, reviewer=reviewer)
    return runs


def _ask(team, rubric) -> Suggestion:
    [suggestion] = suggestions_request(team=team, rubric=rubric, criterion_id="c2")
    return suggestion


def test_a_malformed_answer_fails_the_job_with_a_clear_error_and_applies_nothing(
    team, rubric, judged_run, reviewer, fake_judge
):
    _disagree(judged_run, reviewer, "It is fine [[judge:malformed]]")
    suggestion = _ask(team, rubric)

    assert suggestion_generate(suggestion_id=suggestion.pk) == "failed"

    suggestion.refresh_from_db()
    assert suggestion.status == "failed" and suggestion.kind == "" and suggestion.text == ""
    assert suggestion.error.startswith("judge output invalid after 2 attempts")
    assert "not valid JSON" in suggestion.error
    assert fake_judge.stats()["by_fault"] == {"malformed": 2}  # asked, then one repair re-ask
    assert suggestion.prompt_tokens > 0  # what the failed calls took still counts
    assert RubricVersion.objects.filter(rubric=rubric).count() == 1


def test_an_answer_outside_the_schema_fails_naming_the_field(
    team, rubric, judged_run, reviewer, fake_judge
):
    _disagree(judged_run, reviewer, "Reads fine to me [[judge:wrong_type]]")
    suggestion = _ask(team, rubric)

    assert suggestion_generate(suggestion_id=suggestion.pk) == "failed"

    suggestion.refresh_from_db()
    assert "kind: Input should be 'reword', 'split' or 'instruction'" in suggestion.error


def test_a_redelivered_job_does_not_ask_the_judge_twice(
    team, rubric, judged_run, reviewer, fake_judge
):
    _disagree(judged_run, reviewer, "Not needed here")
    suggestion = _ask(team, rubric)

    assert suggestion_generate(suggestion_id=suggestion.pk) == "ready"
    assert suggestion_generate(suggestion_id=suggestion.pk) is None
    assert fake_judge.suggestions() == 1


def _today(team) -> BudgetCounter:
    return BudgetCounter.objects.get(
        team=team, period="day", starts_on=period_starts(timezone.now())["day"]
    )


def _evaluation_tokens(team) -> int:
    rows = Evaluation.objects.filter(team=team).values_list("prompt_tokens", "completion_tokens")
    return sum((p or 0) + (c or 0) for p, c in rows)


def test_a_suggestions_tokens_count_against_the_teams_budget_and_survive_a_recount(
    team, rubric, judged_run, reviewer, fake_judge
):
    _disagree(judged_run, reviewer, "Not needed here")
    budget_update(team=team, daily_tokens=10_000_000)
    judged = _evaluation_tokens(team)
    assert judged > 0 and _today(team).tokens == judged
    suggestion = _ask(team, rubric)

    assert suggestion_generate(suggestion_id=suggestion.pk) == "ready"

    suggestion.refresh_from_db()
    used = suggestion.prompt_tokens + suggestion.completion_tokens
    assert used > 0
    assert _today(team).tokens == judged + used
    # Saving the budget counts the period again from the records: the suggestion is one.
    budget_update(team=team, daily_tokens=10_000_000)
    assert _today(team).tokens == judged + used


def test_a_reached_budget_refuses_to_ask_and_fails_a_job_still_waiting(
    api, team, rubric, judged_run, reviewer, fake_judge
):
    _disagree(judged_run, reviewer, "Not needed here")
    waiting = _ask(team, rubric)
    budget_update(team=team, daily_tokens=1)

    refused = assert_error(
        api.post(f"/rubrics/{rubric.slug}/suggestions", {"criterion_id": "c2"}), 409
    )
    assert "judge budget is reached" in refused["message"]
    assert suggestion_generate(suggestion_id=waiting.pk) == "failed"
    waiting.refresh_from_db()
    assert "judge budget is reached" in waiting.error
    assert fake_judge.suggestions() == 0


def test_one_request_asks_about_at_most_ten_criteria_the_most_disputed_first(
    team, make_rubric, make_run, reviewer, fake_judge
):
    rubric = make_rubric(
        name="Many", criteria=[f"- Point {i}" for i in range(12)], alignment_mode="off"
    )
    runs = [make_run(rubric=rubric.slug, output=f"Fine ({i})") for i in range(2)]
    judge_pending()
    for n, run in enumerate(runs):
        run.refresh_from_db()
        keys = [f"c{i + 1}" for i in range(12)] if n == 0 else ["c12"]
        for key in keys:
            override_create(
                run=run, criterion_key=key, satisfied=False, note="no", reviewer=reviewer
            )
    SuggestionThreshold.objects.create(rubric=rubric, min_labels=1)

    made = suggestions_request(team=team, rubric=rubric)

    assert len(made) == 10 and "c12" in {s.criterion_key for s in made}
