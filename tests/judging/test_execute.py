"""Evaluation execution in-process (real engine, fake judge over HTTP): claim, lease, outcomes."""

from datetime import timedelta

from django.utils import timezone

from judge_engine import Criterion, RubricScorer
from judging.services.execute import evaluation_claim, evaluation_execute
from judging.services.results import record_success
from judging.services.sweep import evaluations_sweep
from rubrics.judging import judge_for
from runs.models import AgentRun, CriterionVerdict, Evaluation, Status
from tests.conftest import queued_evaluation


def only_evaluation(run) -> Evaluation:
    return Evaluation.objects.get(run=run)


def test_executing_an_evaluation_stores_one_verdict_per_criterion(
    fake_judge, make_rubric, make_run
):
    run = make_run(rubric=make_rubric().slug)
    evaluation = only_evaluation(run)

    assert evaluation_execute(evaluation_id=str(evaluation.id)).status == "succeeded"

    evaluation.refresh_from_db()
    assert evaluation.status == Status.SUCCEEDED and evaluation.attempts == 1
    assert evaluation.prompt_tokens > 0 and evaluation.latency_ms is not None
    assert evaluation.calls[0]["messages"][0]["role"] == "system"
    assert CriterionVerdict.objects.filter(evaluation=evaluation, is_current=True).count() == 3


def test_a_duplicate_message_for_a_finished_evaluation_does_nothing(
    fake_judge, make_rubric, make_run
):
    evaluation = only_evaluation(make_run(rubric=make_rubric().slug))
    evaluation_execute(evaluation_id=str(evaluation.id))

    assert evaluation_execute(evaluation_id=str(evaluation.id)).status == "skipped"

    assert CriterionVerdict.objects.filter(evaluation=evaluation).count() == 3
    assert fake_judge.stats()["completions"] == 1


def test_a_worker_that_lost_its_lease_cannot_write_its_late_result(
    fake_judge, make_rubric, make_run
):
    run = make_run(rubric=make_rubric().slug)
    evaluation = only_evaluation(run)
    stale, stale_token, _ = evaluation_claim(evaluation_id=str(evaluation.id))
    later = timezone.now() + timedelta(hours=1)
    assert evaluations_sweep(now=later).expired == 1
    assert evaluation_execute(evaluation_id=str(evaluation.id)).status == "succeeded"
    late_result = RubricScorer(
        judge=judge_for(stale), criteria=[Criterion(id="c1", description="Anything")]
    ).score(task=run.task_text, output=run.output_text)

    assert record_success(stale, stale_token, late_result, {}) is False

    evaluation.refresh_from_db()
    assert evaluation.attempts == 2 and evaluation.status == Status.SUCCEEDED
    assert CriterionVerdict.objects.filter(run=run).count() == 3


def test_a_transient_failure_requeues_with_a_delay_that_early_messages_respect(
    fake_judge, make_rubric, make_run
):
    run = make_run(rubric=make_rubric().slug, output="refund order number [[judge:500]]")
    evaluation = only_evaluation(run)

    outcome = evaluation_execute(evaluation_id=str(evaluation.id))

    assert outcome.status == "retrying" and outcome.retry_in >= 1
    evaluation.refresh_from_db()
    assert evaluation.status == Status.QUEUED and evaluation.not_before > timezone.now()
    assert "retrying" in evaluation.error
    assert evaluation_execute(evaluation_id=str(evaluation.id)).status == "skipped"
    assert AgentRun.objects.get(pk=run.pk).status == Status.QUEUED


def test_with_no_judge_configured_scoring_fails_saying_how_to_configure_one(
    fake_judge, settings, make_rubric, make_run
):
    settings.EVALSITE_JUDGE_MODEL = ""
    settings.EVALSITE_JUDGE_API_BASE = ""
    evaluation = only_evaluation(make_run(rubric=make_rubric().slug))

    assert evaluation_execute(evaluation_id=str(evaluation.id)).status == "failed"

    evaluation.refresh_from_db()
    assert "EVALSITE_JUDGE_MODEL" in evaluation.error
    assert fake_judge.stats()["requests"] == 0


def test_a_rescored_evaluation_becomes_current_and_the_old_verdicts_stop_being_current(
    fake_judge, make_rubric, make_run
):
    rubric = make_rubric()
    run = make_run(rubric=rubric.slug)
    first = only_evaluation(run)
    evaluation_execute(evaluation_id=str(first.id))
    second = queued_evaluation(
        run=run, kind="rubric", rubric=rubric, version=rubric.current_version, force=True
    )

    evaluation_execute(evaluation_id=str(second.id))

    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.is_current, second.is_current) == (False, True)
    assert set(
        CriterionVerdict.objects.filter(run=run, is_current=True).values_list(
            "evaluation", flat=True
        )
    ) == {second.id}
