"""Judge budgets in-process (real engine, fake judge over HTTP): admission, parking, settling,
resuming, and reservations that expire."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from judging.services.budget import (
    BudgetValidationError,
    budget_admit,
    budget_holds_expire,
    budget_update,
    budget_usage,
    budgets_resume,
)
from judging.services.execute import evaluation_claim, evaluation_execute
from judging.services.rescore import RescoreScope, batch_cancel, batch_create, batch_dispatch
from runs.models import AgentRun, BatchStatus, BudgetCounter, BudgetHold, Evaluation, Status


def evaluation_of(run) -> Evaluation:
    return Evaluation.objects.get(run=run)


def judge(run) -> str:
    return evaluation_execute(evaluation_id=str(evaluation_of(run).id)).status


def test_a_team_without_a_budget_is_judged_and_nothing_is_counted(
    fake_judge, make_rubric, make_run
):
    run = make_run(rubric=make_rubric().slug)

    assert judge(run) == "succeeded"

    assert not BudgetCounter.objects.exists() and not BudgetHold.objects.exists()


def test_judging_stops_once_the_daily_token_budget_is_reached_and_waits_over_budget(
    fake_judge, team, make_rubric, make_run
):
    rubric = make_rubric()
    budget_update(team=team, daily_tokens=1)
    first, second = make_run(rubric=rubric.slug), make_run(rubric=rubric.slug)

    assert judge(first) == "succeeded"  # below the limit when it started
    assert judge(second) == "over_budget"

    used = evaluation_of(first)
    waiting = evaluation_of(second)
    assert waiting.status == Status.OVER_BUDGET and waiting.attempts == 0
    assert waiting.lease_token is None and waiting.error == ""
    assert AgentRun.objects.get(pk=second.pk).status == Status.OVER_BUDGET
    day = BudgetCounter.objects.get(team=team, period="day")
    assert day.tokens == used.prompt_tokens + used.completion_tokens > 0
    assert day.reserved_tokens == 0 and not BudgetHold.objects.exists()
    assert fake_judge.stats()["completions"] == 1


def test_raising_the_budget_queues_the_waiting_evaluations_again_and_they_are_judged(
    fake_judge, team, make_rubric, make_run, django_capture_on_commit_callbacks
):
    rubric = make_rubric()
    budget_update(team=team, daily_tokens=1)
    make_run(rubric=rubric.slug)
    judge(Evaluation.objects.get().run)
    waiting = make_run(rubric=rubric.slug)
    assert judge(waiting) == "over_budget"

    with django_capture_on_commit_callbacks(execute=True):
        budget_update(team=team, daily_tokens=1_000_000)

    evaluation = evaluation_of(waiting)
    assert evaluation.status == Status.QUEUED
    assert AgentRun.objects.get(pk=waiting.pk).status == Status.QUEUED
    assert judge(waiting) == "succeeded"


def test_over_budget_work_stays_waiting_while_there_is_no_room(
    fake_judge, team, make_rubric, make_run
):
    rubric = make_rubric()
    budget_update(team=team, daily_tokens=1)
    judge(make_run(rubric=rubric.slug))
    waiting = make_run(rubric=rubric.slug)
    judge(waiting)

    assert budgets_resume() == 0

    assert evaluation_of(waiting).status == Status.OVER_BUDGET


def test_the_next_day_has_room_again(fake_judge, team, make_rubric, make_run):
    rubric = make_rubric()
    budget_update(team=team, daily_tokens=1)
    judge(make_run(rubric=rubric.slug))
    waiting = make_run(rubric=rubric.slug)
    judge(waiting)

    assert budgets_resume(now=timezone.now() + timedelta(days=1)) == 1

    assert evaluation_of(waiting).status == Status.QUEUED


def test_a_monthly_usd_budget_of_zero_judges_nothing(fake_judge, team, make_rubric, make_run):
    budget_update(team=team, monthly_usd=0)
    run = make_run(rubric=make_rubric().slug)

    assert judge(run) == "over_budget"

    assert fake_judge.stats()["completions"] == 0


def test_a_killed_workers_reservation_is_given_back_when_it_expires(
    fake_judge, team, make_rubric, make_run
):
    budget_update(team=team, daily_tokens=1_000_000)
    run = make_run(rubric=make_rubric().slug)
    claim = evaluation_claim(evaluation_id=str(evaluation_of(run).id))
    admission = budget_admit([claim])  # reserved, then the worker "dies" before settling
    assert admission is not None and admission.admitted == [True]
    day = BudgetCounter.objects.get(team=team, period="day")
    assert day.reserved_tokens > 0

    assert budget_holds_expire() == 0  # not expired yet
    assert budget_holds_expire(now=timezone.now() + timedelta(days=1)) == 1

    day.refresh_from_db()
    assert day.reserved_tokens == 0 and day.tokens == 0
    assert not BudgetHold.objects.exists()


def test_usage_already_recorded_today_counts_when_a_budget_is_set(
    fake_judge, team, make_rubric, make_run
):
    run = make_run(rubric=make_rubric().slug)
    judge(run)
    used = evaluation_of(run)

    budget_update(team=team, daily_tokens=100_000)

    [day] = budget_usage(team=team)
    assert day["period"] == "day" and day["tokens"] == used.prompt_tokens + used.completion_tokens
    assert day["token_limit"] == 100_000 and day["reached"] is False


@pytest.mark.parametrize(
    ("field", "value"),
    [("daily_tokens", -1), ("monthly_usd", -0.5), ("daily_usd", float("nan"))],
)
def test_a_negative_or_non_finite_limit_names_its_field(team, field, value):
    with pytest.raises(BudgetValidationError) as refused:
        budget_update(team=team, **{field: value})

    assert list(refused.value.errors) == [field]


def test_a_rescore_batch_pauses_while_its_work_waits_over_budget_and_cancelling_ends_it(
    fake_judge, team, make_rubric, make_run, settings
):
    settings.EVALSITE_BATCH_WINDOW = 2
    rubric = make_rubric()
    runs = [make_run(output=f"Refund for order number {i}, thanks") for i in range(5)]
    budget_update(team=team, daily_tokens=0)
    batch, _ = batch_create(
        team=team, rubric=rubric, scope=RescoreScope(runs=tuple(r.pk for r in runs))
    )
    batch_dispatch(batch_id=batch.pk)
    released = Evaluation.objects.filter(batch=batch, held=False)
    for evaluation in released:
        assert evaluation_execute(evaluation_id=str(evaluation.id)).status == "over_budget"

    assert batch_dispatch(batch_id=batch.pk) == 0  # the window is full of waiting work
    assert Evaluation.objects.filter(batch=batch, held=True).count() == 3

    batch = batch_cancel(batch=batch)

    assert batch.status == BatchStatus.CANCELLED and batch.finished_at is not None
    statuses = set(Evaluation.objects.filter(batch=batch).values_list("status", flat=True))
    assert statuses == {Status.CANCELLED}
