"""Re-scoring end to end: a real Celery worker, the real services, the fake judge counting calls."""

from __future__ import annotations

import pytest

from judging.services.rescore import RescoreScope, batch_cancel, batch_create, batch_estimate
from rubrics.services import rubric_set_criteria
from runs.models import AgentRun, BatchStatus, CriterionVerdict, Evaluation, RescoreBatch, Status
from runs.selectors import batch_progress
from tests.conftest import wait_for

pytestmark = pytest.mark.worker

TEN = [{"description": f'Mentions "word{i}"', "required": i < 5} for i in range(1, 11)]
ALL_WORDS = " ".join(f"word{i}" for i in range(1, 11))


def all_final(qs) -> bool:
    return qs.exists() and not qs.filter(status__in=[Status.QUEUED, Status.RUNNING]).exists()


def scored_runs(make_rubric, make_run, n: int, criteria=TEN, outputs=None, **rubric_kw):
    """A rubric and ``n`` runs whose first evaluations have all ended."""
    rubric = make_rubric(criteria=criteria, **rubric_kw)
    runs = [
        make_run(rubric=rubric.slug, output=(outputs or {}).get(i, f"Answer {i}: {ALL_WORDS}"))
        for i in range(n)
    ]
    evaluations = Evaluation.objects.filter(run__in=runs)
    wait_for(lambda: all_final(evaluations), timeout=90, message="the first evaluations")
    return rubric, runs


def edit(rubric, changes: dict[int, str] | None = None):
    """A new version of a TEN rubric with the criteria at these positions reworded (the same
    keys, so per-criterion history follows them)."""
    changes = changes if changes is not None else {3: 'Mentions "word4" clearly'}
    criteria = [
        {
            "key": f"c{i + 1}",
            "description": changes.get(i, c["description"]),
            "required": c["required"],
        }
        for i, c in enumerate(TEN)
    ]
    version, created = rubric_set_criteria(rubric=rubric, criteria=criteria)
    assert created
    rubric.refresh_from_db()
    return version


def finished(batch: RescoreBatch, timeout: float = 90) -> RescoreBatch:
    wait_for(
        lambda: RescoreBatch.objects.filter(pk=batch.pk, finished_at__isnull=False).exists(),
        timeout=timeout, message=f"batch {batch.pk} to finish",
    )  # fmt: skip
    batch.refresh_from_db()
    return batch


def test_after_editing_one_of_ten_criteria_each_run_costs_one_call_about_that_criterion(
    worker, fake_judge, make_rubric, make_run, team
):
    rubric, runs = scored_runs(make_rubric, make_run, 6)
    edit(rubric)
    fake_judge.reset()

    batch, created = batch_create(team=team, rubric=rubric)
    batch = finished(batch)

    assert created and batch.status == BatchStatus.COMPLETED and batch.total == 6
    assert fake_judge.stats()["completions"] == 6
    assert fake_judge.stats()["criteria_judged"] == 6
    for evaluation in Evaluation.objects.filter(batch=batch):
        assert evaluation.status == Status.SUCCEEDED
        assert (evaluation.criteria_judged, evaluation.criteria_reused) == (1, 9)
        verdicts = CriterionVerdict.objects.filter(evaluation=evaluation)
        fresh = verdicts.filter(reused_from__isnull=True)
        assert [v.criterion_key for v in fresh] == ["c4"]
        assert verdicts.filter(reused_from__isnull=False).count() == 9
        assert all(v.is_current for v in verdicts)
    progress = batch_progress(batch=batch)
    assert progress.actual["judge_calls"] == batch.estimate["judge_calls"] == 6
    assert progress.actual["criterion_judgements"] == batch.estimate["criterion_judgements"] == 6
    assert progress.progress == 1.0 and progress.counts["succeeded"] == 6


def test_the_rescored_result_becomes_current_and_the_history_keeps_every_evaluation(
    worker, fake_judge, make_rubric, make_run, team
):
    rubric, [run] = scored_runs(make_rubric, make_run, 1, outputs={0: "Answer: word1 word2"})
    run.refresh_from_db()
    assert run.passed is False
    rubric_set_criteria(rubric=rubric, criteria=[{"description": 'Mentions "word1"'}])
    rubric.refresh_from_db()

    batch = finished(batch_create(team=team, rubric=rubric)[0])

    run.refresh_from_db()
    assert batch.status == BatchStatus.COMPLETED
    assert run.passed is True and run.current_version_id == rubric.current_version_id
    history = Evaluation.objects.filter(run=run).order_by("created_at")
    assert [e.is_current for e in history] == [False, True]
    assert run.status == Status.SUCCEEDED


def test_a_forced_rescore_asks_the_judge_about_every_criterion_again(
    worker, fake_judge, make_rubric, make_run, team
):
    rubric, runs = scored_runs(make_rubric, make_run, 4)
    fake_judge.reset()

    batch = finished(batch_create(team=team, rubric=rubric, force=True)[0])

    assert batch.status == BatchStatus.COMPLETED
    assert fake_judge.stats()["completions"] == 4
    assert fake_judge.stats()["criteria_judged"] == 40
    assert batch.estimate["criterion_judgements"] == 40
    assert not CriterionVerdict.objects.filter(
        evaluation__batch=batch, reused_from__isnull=False
    ).exists()


def test_without_any_change_a_rescore_reuses_everything_and_calls_no_judge(
    worker, fake_judge, make_rubric, make_run, team
):
    rubric, runs = scored_runs(make_rubric, make_run, 3)
    fake_judge.reset()

    estimate = batch_estimate(team=team, rubric=rubric)
    batch = finished(batch_create(team=team, rubric=rubric)[0])

    assert (estimate.judge_calls, estimate.criterion_judgements, estimate.criteria_reused) == (
        0,
        0,
        30,
    )
    assert estimate.tokens == 0 and estimate.cost == 0.0
    assert fake_judge.stats()["requests"] == 0
    assert batch.status == BatchStatus.COMPLETED
    assert Evaluation.objects.filter(batch=batch, status=Status.SUCCEEDED).count() == 3


def test_the_estimate_equals_the_calls_made_when_nothing_fails(
    worker, fake_judge, make_rubric, make_run, team
):
    # Independent strategy: one call per criterion still to judge; two runs share no text.
    rubric, runs = scored_runs(make_rubric, make_run, 5, strategy="independent")
    edit(rubric, {0: 'Mentions "word1" early', 9: 'Mentions "word10" late'})
    fresh = make_run(output=f"Unscored: {ALL_WORDS}")  # never judged: every criterion is asked
    scope = RescoreScope(runs=tuple(r.pk for r in [*runs, fresh]))
    fake_judge.reset()

    estimate = batch_estimate(team=team, rubric=rubric, scope=scope)
    batch = finished(batch_create(team=team, rubric=rubric, scope=scope)[0])

    stats = fake_judge.stats()
    actual = batch_progress(batch=batch).actual
    assert batch.status == BatchStatus.COMPLETED
    assert estimate.judge_calls == stats["completions"] == actual["judge_calls"] == 5 * 2 + 10
    assert (
        estimate.criterion_judgements == stats["criteria_judged"] == actual["criterion_judgements"]
    )
    assert estimate.criteria_reused == actual["criteria_reused"] == 5 * 8
    # The fake judge counts characters / 4 of the messages, as the estimate does.
    assert estimate.prompt_tokens == actual["prompt_tokens"]
    assert batch.estimate == estimate.as_json()
    assert estimate.cost is None  # litellm has no price for the fake model


def test_cancelling_mid_batch_cancels_queued_work_lets_running_work_finish_and_ends_cancelled(
    worker, fake_judge, make_rubric, make_run, team
):
    rubric, runs = scored_runs(make_rubric, make_run, 40)
    edit(rubric)
    fake_judge.set_latency(0.5)

    batch, _ = batch_create(team=team, rubric=rubric)
    mine = Evaluation.objects.filter(batch=batch)
    wait_for(
        lambda: mine.filter(status=Status.RUNNING).exists(), timeout=30, message="work to start"
    )
    batch = batch_cancel(batch=batch)

    assert batch.status == BatchStatus.CANCELLED and batch.cancelled_at is not None
    batch = finished(batch)
    assert batch.status == BatchStatus.CANCELLED
    counts = batch_progress(batch=batch).counts
    assert counts["queued"] == counts["running"] == 0
    assert counts["succeeded"] >= 1 and counts["cancelled"] >= 1
    assert counts["succeeded"] + counts["cancelled"] == 40
    for evaluation in mine:
        verdicts = CriterionVerdict.objects.filter(evaluation=evaluation).count()
        assert verdicts == (10 if evaluation.status == Status.SUCCEEDED else 0)
    assert (
        not AgentRun.objects.filter(pk__in=[r.pk for r in runs])
        .exclude(status=Status.SUCCEEDED)
        .exists()
    )


def test_a_batch_where_the_judge_fails_for_some_runs_ends_with_failures_and_their_messages(
    worker, fake_judge, make_rubric, make_run, team, settings
):
    outputs = {1: f"{ALL_WORDS} [[judge:400]]", 3: f"{ALL_WORDS} [[judge:400]]"}
    rubric, runs = scored_runs(make_rubric, make_run, 5, outputs=outputs)
    edit(rubric)

    batch = finished(batch_create(team=team, rubric=rubric)[0])

    assert batch.status == BatchStatus.COMPLETED_WITH_FAILURES
    progress = batch_progress(batch=batch)
    assert progress.counts["failed"] == 2 and progress.counts["succeeded"] == 3
    assert {f["run_id"] for f in progress.failures} == {str(runs[1].pk), str(runs[3].pk)}
    assert all("400" in f["error"] for f in progress.failures)


def test_a_batch_bigger_than_its_window_is_fed_as_its_evaluations_finish(
    worker, fake_judge, make_rubric, make_run, team, settings
):
    settings.EVALSITE_BATCH_WINDOW = 3
    rubric, runs = scored_runs(make_rubric, make_run, 12)
    edit(rubric)

    batch, _ = batch_create(team=team, rubric=rubric)
    mine = Evaluation.objects.filter(batch=batch)
    outstanding = []

    def ended() -> bool:
        outstanding.append(
            mine.filter(held=False, status__in=[Status.QUEUED, Status.RUNNING]).count()
        )
        return RescoreBatch.objects.filter(pk=batch.pk, finished_at__isnull=False).exists()

    wait_for(ended, timeout=90, message="the batch to finish")
    batch.refresh_from_db()

    assert max(outstanding) <= 3  # never more than the window in the broker or running
    assert batch.status == BatchStatus.COMPLETED
    assert Evaluation.objects.filter(batch=batch, status=Status.SUCCEEDED).count() == 12
