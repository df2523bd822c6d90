"""End to end with a real Celery worker process, a real broker and the fake judge over HTTP."""

from __future__ import annotations

import subprocess
import sys

import pytest

from judging.services.sweep import evaluations_sweep
from runs.models import AgentRun, AlignmentBreakdown, CriterionVerdict, Evaluation, Status
from tests.conftest import ROOT, run_payload, wait_for

pytestmark = pytest.mark.worker


def finished(run: AgentRun) -> list[Evaluation] | None:
    evaluations = list(Evaluation.objects.filter(run=run))
    if evaluations and all(e.status in (Status.SUCCEEDED, Status.FAILED) for e in evaluations):
        return evaluations
    return None


def test_a_run_naming_a_rubric_gets_verdicts_and_an_alignment_breakdown(
    worker, make_rubric, make_run
):
    rubric = make_rubric(alignment_mode="both")
    run = make_run(rubric=rubric.slug)

    evaluations = wait_for(lambda: finished(run), timeout=60, message="both evaluations")

    by_kind = {e.kind: e for e in evaluations}
    assert {e.status for e in evaluations} == {Status.SUCCEEDED}
    rubric_eval = by_kind["rubric"]
    assert rubric_eval.passed is True and rubric_eval.score == 1.0
    assert rubric_eval.rubric_version == rubric.current_version
    verdicts = CriterionVerdict.objects.filter(evaluation=rubric_eval).order_by("position")
    assert [v.criterion_key for v in verdicts] == ["c1", "c2", "c3"]
    assert all(v.satisfied and v.is_current for v in verdicts)
    assert rubric_eval.judge_calls == 1 and rubric_eval.calls[0]["raw_response"]
    perspectives = AlignmentBreakdown.objects.filter(evaluation=by_kind["alignment"])
    assert sorted(p.perspective for p in perspectives) == ["system", "user"]
    for p in perspectives:
        assert 0 <= p.intent_score <= 1 and 0 <= p.requirements_score <= 1
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED and run.passed is True
    assert run.alignment_score == by_kind["alignment"].score


def test_a_failed_required_criterion_fails_the_run_and_is_recorded_as_current(
    worker, make_rubric, make_run
):
    rubric = make_rubric()
    run = make_run(rubric=rubric.slug, output="We will look into it. Thanks!")

    [evaluation] = wait_for(lambda: finished(run), timeout=60, message="evaluation")

    assert evaluation.status == Status.SUCCEEDED and evaluation.passed is False
    failing = CriterionVerdict.objects.filter(run=run, is_current=True, satisfied=False)
    assert sorted(v.criterion_key for v in failing) == ["c1", "c2"]
    assert "2 of 2 required criteria" in evaluation.reason or "not met" in evaluation.reason
    run.refresh_from_db()
    assert run.passed is False and run.score == 0.0


FAULTS = {
    # marker in the agent output -> (final status, words the stored error must contain)
    "[[judge:429x1]]": (Status.SUCCEEDED, None),
    "[[judge:500x1]]": (Status.SUCCEEDED, None),
    "[[judge:malformedx1]]": (Status.SUCCEEDED, None),
    "[[judge:500]]": (Status.FAILED, "attempts"),
    "[[judge:timeout]]": (Status.FAILED, "attempts"),
    "[[judge:malformed]]": (Status.FAILED, "json"),
    "[[judge:missing]]": (Status.FAILED, "c3"),
    "[[judge:extra]]": (Status.FAILED, "not asked"),
    "[[judge:duplicate]]": (Status.FAILED, "c"),
    "[[judge:400]]": (Status.FAILED, "400"),
    "[[judge:401]]": (Status.FAILED, "key"),
}


def test_every_judge_fault_ends_as_specified_and_never_as_a_pass(
    start_worker, transactional_db, fake_judge, make_rubric, make_run, settings
):
    settings.EVALSITE_JUDGE_TIMEOUT = 1.0
    start_worker(EVALSITE_MAX_ATTEMPTS="2")
    rubric = make_rubric()
    good = "Your refund for order number 1234 is on its way, thanks."
    runs = {marker: make_run(rubric=rubric.slug, output=f"{good} {marker}") for marker in FAULTS}

    for marker, run in runs.items():
        [evaluation] = wait_for(lambda run=run: finished(run), timeout=90, message=marker)
        status, words = FAULTS[marker]
        assert evaluation.status == status, (marker, evaluation.error)
        if status == Status.FAILED:
            assert evaluation.passed is None and evaluation.score is None
            assert words.lower() in evaluation.error.lower(), (marker, evaluation.error)
            assert not CriterionVerdict.objects.filter(evaluation=evaluation).exists()
        else:
            assert evaluation.passed is True
            assert CriterionVerdict.objects.filter(evaluation=evaluation).count() == 3


def test_out_of_range_alignment_scores_fail_the_evaluation(worker, make_run):
    run = make_run(alignment="user", output="Refund sent. [[judge:out_of_range]]")

    [evaluation] = wait_for(lambda: finished(run), timeout=60, message="alignment evaluation")

    assert evaluation.status == Status.FAILED
    assert "range" in evaluation.error.lower() or "1" in evaluation.error
    assert not AlignmentBreakdown.objects.filter(evaluation=evaluation).exists()


def test_a_worker_killed_mid_evaluation_still_yields_exactly_one_result(
    start_worker, transactional_db, fake_judge, make_rubric, make_run
):
    first = start_worker(EVALSITE_LEASE_SECONDS="3")
    rubric = make_rubric()
    run = make_run(rubric=rubric.slug, output="Refund for order number 1234, thanks [[latency:4]]")
    evaluation = Evaluation.objects.get(run=run)
    wait_for(
        lambda: Evaluation.objects.filter(id=evaluation.id, status=Status.RUNNING).exists(),
        timeout=30, message="the first worker to claim the evaluation",
    )  # fmt: skip

    first.kill()
    wait_for(lambda: evaluations_sweep().expired, timeout=30, message="the lease to expire")
    start_worker(EVALSITE_LEASE_SECONDS="30")

    wait_for(lambda: finished(run), timeout=60, message="the second worker to finish")
    evaluation.refresh_from_db()
    assert evaluation.status == Status.SUCCEEDED and evaluation.attempts == 2
    assert Evaluation.objects.filter(run=run).count() == 1
    assert CriterionVerdict.objects.filter(evaluation=evaluation).count() == 3


def test_a_run_ingested_while_the_broker_is_down_is_stored_and_scored_once_it_is_back(
    worker, worker_env, make_rubric, team, fake_judge
):
    rubric = make_rubric()
    env = worker_env | {
        "CELERY_BROKER_URL": "redis://127.0.0.1:1/0",  # nothing listens there
        "EVALSITE_JUDGE_MODEL": "openai/fake-judge",
        "EVALSITE_JUDGE_API_BASE": fake_judge.url,
    }
    script = (
        "import django; django.setup();"
        "from teams.models import Team; from runs.payloads import RunPayload;"
        "from runs.services import run_ingest;"
        f"p = RunPayload.model_validate({run_payload(rubric=rubric.slug, external_id='offline-1')!r});"
        f"run, created = run_ingest(team=Team.objects.get(slug='{team.slug}'), payload=p);"
        "print('stored', run.id, created)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    run = AgentRun.objects.get(team=team, external_id="offline-1")
    evaluation = Evaluation.objects.get(run=run)
    assert evaluation.status == Status.QUEUED and evaluation.enqueued_at is None

    wait_for(lambda: evaluations_sweep().resent, timeout=30, message="a sweep to resend it")
    [evaluation] = wait_for(lambda: finished(run), timeout=60, message="the resent evaluation")
    assert evaluation.status == Status.SUCCEEDED, evaluation.error
    assert CriterionVerdict.objects.filter(run=run).count() == 3
