"""Re-score services without a worker: scope, duplicates, idempotency, dispatch windows, cancel.

Nothing here is published: in a ``db`` test the transaction never commits, so on-commit
publishing never runs; the tests call the dispatcher themselves where it matters.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from judging.services.rescore import (
    RescoreScope,
    RescoreValidationError,
    batch_cancel,
    batch_create,
    batch_dispatch,
    batch_estimate,
    batch_finish_if_done,
    run_rescore,
)
from judging.services.sweep import evaluations_sweep
from runs.models import AgentRun, BatchStatus, Evaluation, Kind, RescoreBatch, Status
from tests.conftest import queued_evaluation

# The fake judge is the deployment's default judge (nothing here calls it).
pytestmark = pytest.mark.usefixtures("fake_judge")


@pytest.fixture
def rubric(make_rubric):
    return make_rubric()


@pytest.fixture
def bare_runs(make_run):
    """Runs with no evaluation at all (no rubric named): nothing pending, nothing published."""

    def make(n: int) -> list[AgentRun]:
        return [make_run(output=f"Refund for order number {i}, thanks") for i in range(n)]

    return make


def scope_of(runs) -> RescoreScope:
    return RescoreScope(runs=tuple(r.pk for r in runs))


def held(batch) -> int:
    return Evaluation.objects.filter(batch=batch, held=True, status=Status.QUEUED).count()


def released(batch) -> list[Evaluation]:
    return list(Evaluation.objects.filter(batch=batch, held=False, status=Status.QUEUED))


def test_a_new_batch_holds_all_its_evaluations_until_the_dispatcher_releases_them(
    team, rubric, bare_runs
):
    batch, created = batch_create(team=team, rubric=rubric, scope=scope_of(bare_runs(5)))

    assert created and batch.status == BatchStatus.QUEUED and batch.total == 5
    assert held(batch) == 5
    evaluation = Evaluation.objects.filter(batch=batch).first()
    assert evaluation.kind == Kind.RUBRIC and evaluation.rubric_version == rubric.current_version
    assert evaluation.enqueued_at is None
    assert (
        not AgentRun.objects.filter(evaluations__batch=batch).exclude(status=Status.QUEUED).exists()
    )


def test_the_dispatcher_keeps_at_most_the_window_outstanding_and_tops_up_as_work_ends(
    team, rubric, bare_runs, settings
):
    settings.EVALSITE_BATCH_WINDOW = 3
    batch, _ = batch_create(team=team, rubric=rubric, scope=scope_of(bare_runs(10)))

    assert batch_dispatch(batch_id=batch.pk) == 3
    assert batch_dispatch(batch_id=batch.pk) == 0  # the window is full
    first_two = [e.pk for e in released(batch)[:2]]
    Evaluation.objects.filter(pk__in=first_two).update(status=Status.SUCCEEDED)
    assert batch_dispatch(batch_id=batch.pk) == 2

    batch.refresh_from_db()
    assert batch.status == BatchStatus.RUNNING and batch.started_at is not None
    assert held(batch) == 5 and len(released(batch)) == 3


def test_each_batch_has_its_own_window_so_a_small_batch_never_waits_for_a_big_one(
    team, make_rubric, bare_runs, settings
):
    settings.EVALSITE_BATCH_WINDOW = 3
    big, _ = batch_create(team=team, rubric=make_rubric(), scope=scope_of(bare_runs(20)))
    small, _ = batch_create(
        team=team, rubric=make_rubric(name="Other"), scope=scope_of(bare_runs(2))
    )

    assert batch_dispatch(batch_id=big.pk) == 3
    assert batch_dispatch(batch_id=small.pk) == 2
    # Only the big batch's window of messages is ahead of the small batch's two, not 20.
    assert len(released(big)) == 3 and held(big) == 17


def test_the_sweeper_never_sends_held_evaluations_but_refills_the_batch_window(
    team, rubric, bare_runs, settings
):
    settings.EVALSITE_BATCH_WINDOW = 2
    batch, _ = batch_create(team=team, rubric=rubric, scope=scope_of(bare_runs(4)))
    Evaluation.objects.filter(batch=batch).update(created_at=timezone.now() - timedelta(hours=1))

    report = evaluations_sweep(now=timezone.now() + timedelta(hours=1))

    assert report.resent == 0
    assert report.dispatched == 2 and held(batch) == 2


def test_a_run_with_a_pending_evaluation_for_the_same_version_and_judge_is_not_queued_again(
    team, rubric, make_run, django_capture_on_commit_callbacks
):
    run = make_run(rubric=rubric.slug)  # ingest queued its evaluation on version 1
    with django_capture_on_commit_callbacks(execute=True):
        batch, created = run_rescore(run=run)

    batch.refresh_from_db()
    assert created and batch.total == 0 and batch.estimate["skipped_pending"] == 1
    assert batch.status == BatchStatus.COMPLETED and batch.finished_at is not None
    assert Evaluation.objects.filter(run=run).count() == 1


def test_the_database_refuses_a_second_pending_evaluation_for_one_version_and_judge(
    rubric, make_run
):
    run = make_run(rubric=rubric.slug)

    with pytest.raises(IntegrityError), transaction.atomic():
        queued_evaluation(run=run, kind=Kind.RUBRIC, rubric=rubric, version=rubric.current_version)
    # Another judge is another evaluation.
    queued_evaluation(
        run=run, kind=Kind.RUBRIC, rubric=rubric, version=rubric.current_version,
        judge_model="openai/another-judge",
    )  # fmt: skip
    assert Evaluation.objects.filter(run=run).count() == 2


def test_the_same_idempotency_key_returns_the_same_batch_and_queues_nothing_more(
    team, rubric, bare_runs
):
    runs = bare_runs(3)
    first, created = batch_create(
        team=team, rubric=rubric, scope=scope_of(runs), idempotency_key="k-1"
    )
    again, created_again = batch_create(
        team=team, rubric=rubric, scope=scope_of(runs), idempotency_key="k-1"
    )

    assert created and not created_again and again.pk == first.pk
    assert RescoreBatch.objects.count() == 1
    assert Evaluation.objects.filter(run__in=runs).count() == 3


def test_an_idempotency_key_belongs_to_its_team(team, other_team, make_rubric, bare_runs, make_run):
    mine, _ = batch_create(
        team=team, rubric=make_rubric(), scope=scope_of(bare_runs(1)), idempotency_key="k"
    )
    theirs_run = make_run(team=other_team)
    theirs, created = batch_create(
        team=other_team, rubric=make_rubric(team=other_team), scope=scope_of([theirs_run]),
        idempotency_key="k",
    )  # fmt: skip

    assert created and theirs.pk != mine.pk


def test_an_estimate_writes_nothing(team, rubric, bare_runs):
    runs = bare_runs(4)

    estimate = batch_estimate(team=team, rubric=rubric, scope=scope_of(runs))

    assert (estimate.runs, estimate.judge_calls, estimate.criterion_judgements) == (4, 4, 12)
    assert estimate.prompt_tokens > 0 and estimate.tokens > estimate.prompt_tokens
    assert not RescoreBatch.objects.exists()
    assert not Evaluation.objects.filter(run__in=runs).exists()


def test_a_known_model_gets_a_cost_from_litellms_prices(team, rubric, bare_runs):
    estimate = batch_estimate(
        team=team, rubric=rubric, scope=scope_of(bare_runs(2)), judge="gpt-4o-mini"
    )

    assert estimate.model == "gpt-4o-mini"
    assert estimate.cost is not None and estimate.cost > 0


def test_the_filters_pick_the_rubrics_failed_runs_in_the_date_range(team, rubric, make_run):
    runs = [make_run(rubric=rubric.slug) for _ in range(4)]
    Evaluation.objects.filter(run__in=runs).update(status=Status.SUCCEEDED)
    # Judged: only a succeeded run has a result (judge_engine.rules.run_result).
    AgentRun.objects.filter(pk__in=[r.pk for r in runs]).update(status=Status.SUCCEEDED)
    AgentRun.objects.filter(pk__in=[runs[0].pk, runs[1].pk]).update(passed=False)
    AgentRun.objects.filter(pk=runs[0].pk).update(created_at=timezone.now() - timedelta(days=10))
    unrelated = make_run()  # no rubric: never in a rubric's filtered scope
    AgentRun.objects.filter(pk=unrelated.pk).update(passed=False, status=Status.SUCCEEDED)

    scope = RescoreScope(failed_only=True, since=timezone.now() - timedelta(days=1))
    batch, _ = batch_create(team=team, rubric=rubric, scope=scope, force=True)

    assert set(Evaluation.objects.filter(batch=batch).values_list("run_id", flat=True)) == {
        runs[1].pk
    }


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"target_version": 7}, "target_version"),
        ({"judge": "two words"}, "judge"),
        ({"webhook_url": "ftp://example.com/hook"}, "webhook_url"),
        ({"scope": RescoreScope(runs=())}, "runs"),
        ({"scope": RescoreScope(runs=(uuid.uuid4(),), failed_only=True)}, "runs"),
        ({"scope": RescoreScope(criterion="x" * 40)}, "criterion_id"),
        ({"scope": RescoreScope(version=0)}, "version"),
    ],
)
def test_invalid_requests_name_the_field(team, rubric, bare_runs, kwargs, field):
    kwargs.setdefault("scope", scope_of(bare_runs(1)))
    with pytest.raises(RescoreValidationError) as caught:
        batch_create(team=team, rubric=rubric, **kwargs)
    assert field in caught.value.errors
    assert not RescoreBatch.objects.exists()


def test_runs_of_another_team_are_refused_as_unknown(team, rubric, other_team, make_run):
    theirs = make_run(team=other_team)

    with pytest.raises(RescoreValidationError) as caught:
        batch_create(team=team, rubric=rubric, scope=scope_of([theirs]))

    assert "runs" in caught.value.errors
    assert not Evaluation.objects.filter(run=theirs).exclude(batch=None).exists()


def test_without_any_judge_model_configured_nothing_is_queued(
    team, make_rubric, bare_runs, settings
):
    settings.EVALSITE_JUDGE_MODEL = ""

    with pytest.raises(RescoreValidationError) as caught:
        batch_create(team=team, rubric=make_rubric(), scope=scope_of(bare_runs(1)))

    assert "judge" in caught.value.errors


def test_a_rubric_without_criteria_cannot_be_rescored(team, make_rubric, bare_runs):
    empty = make_rubric(name="Empty", criteria=[])

    with pytest.raises(RescoreValidationError) as caught:
        batch_estimate(team=team, rubric=empty, scope=scope_of(bare_runs(1)))

    assert "rubric" in caught.value.errors


def test_cancelling_a_batch_whose_work_is_all_held_ends_it_at_once_and_restores_the_runs(
    team, rubric, bare_runs
):
    runs = bare_runs(3)
    batch, _ = batch_create(team=team, rubric=rubric, scope=scope_of(runs))

    batch = batch_cancel(batch=batch)

    assert batch.status == BatchStatus.CANCELLED and batch.finished_at is not None
    assert set(Evaluation.objects.filter(batch=batch).values_list("status", flat=True)) == {
        Status.CANCELLED
    }
    assert not AgentRun.objects.filter(pk__in=[r.pk for r in runs], status=Status.QUEUED).exists()
    assert batch_dispatch(batch_id=batch.pk) == 0


def test_a_running_evaluation_keeps_a_cancelled_batch_open_until_it_ends(team, rubric, bare_runs):
    batch, _ = batch_create(team=team, rubric=rubric, scope=scope_of(bare_runs(3)))
    batch_dispatch(batch_id=batch.pk)
    running = Evaluation.objects.filter(batch=batch).first()
    Evaluation.objects.filter(pk=running.pk).update(status=Status.RUNNING)

    batch = batch_cancel(batch=batch)

    assert batch.status == BatchStatus.CANCELLED and batch.finished_at is None
    assert Evaluation.objects.get(pk=running.pk).status == Status.RUNNING
    Evaluation.objects.filter(pk=running.pk).update(status=Status.SUCCEEDED)
    assert batch_finish_if_done(batch_id=batch.pk)
    batch.refresh_from_db()
    assert batch.status == BatchStatus.CANCELLED and batch.finished_at is not None


def test_cancelling_an_ended_batch_changes_nothing(team, rubric, bare_runs):
    batch, _ = batch_create(team=team, rubric=rubric, scope=scope_of(bare_runs(1)))
    Evaluation.objects.filter(batch=batch).update(status=Status.SUCCEEDED)
    batch_finish_if_done(batch_id=batch.pk)

    batch = batch_cancel(batch=batch)

    assert batch.status == BatchStatus.COMPLETED and batch.cancelled_at is None
