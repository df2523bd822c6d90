"""Budget slices (judging.services.budget_slices): a process's messages draw on one reservation
of the team's budget, which is settled on the counters once its last message is; slices never
reserve past a limit, retire when the budget is saved, and give parked work its room back."""

from __future__ import annotations

from judging.services.budget import budget_admit, budget_settle, budget_update
from judging.services.execute import evaluation_claim
from runs.models import BudgetCounter, BudgetHold, Evaluation, Status


def _claim(make_run, rubric, i: int):
    run = make_run(rubric=rubric.slug, output=f"Refund {i} sent, thanks for your patience.")
    return evaluation_claim(evaluation_id=str(Evaluation.objects.get(run=run).id))


def _record(claim, tokens: int) -> None:
    """What judging the claim recorded (the worker writes it with the result)."""
    Evaluation.objects.filter(pk=claim.evaluation.pk).update(
        prompt_tokens=tokens, completion_tokens=0, status=Status.SUCCEEDED
    )


def _day(team) -> BudgetCounter:
    return BudgetCounter.objects.get(team=team, period="day")


def test_messages_in_flight_draw_on_one_slice_settled_once_the_last_one_ends(
    db, team, make_rubric, make_run
):
    rubric = make_rubric()
    budget_update(team=team, daily_tokens=10_000_000)
    claims = [_claim(make_run, rubric, i) for i in range(3)]

    admissions = [budget_admit([claim]) for claim in claims]  # three messages in flight

    assert all(a is not None and a.admitted == [True] for a in admissions)
    [hold] = BudgetHold.objects.filter(team=team)
    assert _day(team).reserved_tokens == hold.tokens > 0
    for claim, admission in zip(claims, admissions, strict=True):
        _record(claim, 100)
        budget_settle(admission)
        assert _day(team).tokens == (0 if claim is not claims[-1] else 300)

    day = _day(team)
    assert day.tokens == 300 and day.reserved_tokens == 0
    assert not BudgetHold.objects.exists()


def test_a_slice_takes_at_most_a_quarter_of_the_room_left(db, team, make_rubric, make_run):
    rubric = make_rubric()
    budget_update(team=team, daily_tokens=8_000)

    admission = budget_admit([_claim(make_run, rubric, 0)])

    assert admission is not None and admission.admitted == [True]
    assert BudgetHold.objects.get(team=team).tokens == 2_000


def test_saving_the_budget_retires_the_slice_in_use(db, team, make_rubric, make_run):
    rubric = make_rubric()
    budget_update(team=team, daily_tokens=10_000_000)
    first = budget_admit([_claim(make_run, rubric, 0)])

    budget_update(team=team, daily_tokens=20_000_000)
    second = budget_admit([_claim(make_run, rubric, 1)])

    assert first is not None and second is not None
    assert first.holds[0][0] is not second.holds[0][0]
    assert BudgetHold.objects.filter(team=team).count() == 2


def test_work_parked_while_another_slice_held_the_room_is_queued_when_it_is_given_back(
    db, team, make_rubric, make_run, django_capture_on_commit_callbacks
):
    rubric = make_rubric()
    first, second = _claim(make_run, rubric, 0), _claim(make_run, rubric, 1)
    estimate = budget_admit([first])  # no budget yet: nothing drawn
    assert estimate is None
    budget_update(team=team, daily_tokens=1)
    holding = budget_admit([first])  # takes the whole (tiny) room
    assert holding is not None and holding.admitted == [True]

    parked = budget_admit([second])

    assert parked is not None and parked.admitted == [False]
    assert Evaluation.objects.get(pk=second.evaluation.pk).status == Status.OVER_BUDGET

    Evaluation.objects.filter(pk=first.evaluation.pk).update(status=Status.FAILED)  # used 0
    with django_capture_on_commit_callbacks(execute=True):
        budget_settle(holding)

    assert Evaluation.objects.get(pk=second.evaluation.pk).status == Status.QUEUED
    assert _day(team).reserved_tokens == 0 and _day(team).tokens == 0


def test_a_message_settled_with_what_it_recorded_costs_no_query_until_its_slice_settles(
    db, team, make_rubric, make_run, django_assert_num_queries
):
    rubric = make_rubric()
    budget_update(team=team, daily_tokens=10_000_000)
    first, second = _claim(make_run, rubric, 0), _claim(make_run, rubric, 1)
    admissions = [budget_admit([first]), budget_admit([second])]

    with django_assert_num_queries(0):
        budget_settle(admissions[0], {first.evaluation.id: (120, None)})
    with django_assert_num_queries(4):  # the slice: savepoint, hold deleted, counters, release
        budget_settle(admissions[1], {second.evaluation.id: (80, 0.5)})

    day = _day(team)
    assert (day.tokens, day.usd, day.reserved_tokens) == (200, 0.5, 0)
