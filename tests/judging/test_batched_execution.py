"""Several evaluations per broker message, group commit, and the limit of judge calls in flight.

A message from bulk ingest carries up to EVALSITE_TASK_BATCH evaluations; each must still end
exactly as it would alone (tests/judging/test_execute.py), and the worker must never have more
judge calls in flight than its concurrency.
"""

from __future__ import annotations

import threading
import uuid

import pytest
from django.db import transaction

from judging.services.execute import evaluations_execute
from runs.models import AgentRun, CriterionVerdict, Evaluation, Status
from runs.payloads import RunPayload
from runs.services.groupcommit import GroupCommit
from runs.services.ingest_many import runs_ingest_many
from tests.conftest import queued_evaluation, wait_for

PASSING = "Your refund for order number 1234 is on its way. Thanks!"


def only_evaluation(run: AgentRun) -> Evaluation:
    return Evaluation.objects.get(run=run)


# --- In process: one message's evaluations ------------------------------------------------------


def test_each_evaluation_of_a_message_ends_as_it_would_alone(fake_judge, make_rubric, make_run):
    rubric = make_rubric()
    ok = only_evaluation(make_run(rubric=rubric.slug, output=PASSING))
    failing = only_evaluation(make_run(rubric=rubric.slug, output="Sorry. [[judge:400]]"))
    flaky = only_evaluation(make_run(rubric=rubric.slug, output="Thanks [[judge:500]]"))
    ids = [str(ok.id), str(failing.id), str(flaky.id), str(ok.id), str(uuid.uuid4()), "junk"]

    outcomes = [o.status for o in evaluations_execute(evaluation_ids=ids)]

    # The duplicate id, an unknown id and a malformed one claim nothing.
    assert outcomes == ["succeeded", "failed", "retrying", "skipped", "skipped", "skipped"]
    ok.refresh_from_db(), failing.refresh_from_db(), flaky.refresh_from_db()
    assert ok.status == Status.SUCCEEDED and ok.attempts == 1 and ok.is_current
    assert CriterionVerdict.objects.filter(evaluation=ok, is_current=True).count() == 3
    assert failing.status == Status.FAILED and "400" in failing.error
    assert flaky.status == Status.QUEUED and flaky.not_before is not None
    assert not CriterionVerdict.objects.filter(evaluation__in=[failing, flaky]).exists()
    # Run by run, the denormalised result follows its own evaluation.
    assert AgentRun.objects.get(pk=ok.run_id).passed is True
    assert AgentRun.objects.get(pk=failing.run_id).status == Status.FAILED
    assert AgentRun.objects.get(pk=flaky.run_id).status == Status.QUEUED


def test_a_message_delivered_twice_judges_nothing_twice(fake_judge, make_rubric, make_run):
    rubric = make_rubric()
    ids = [str(only_evaluation(make_run(rubric=rubric.slug, output=PASSING)).id) for _ in range(3)]

    first = evaluations_execute(evaluation_ids=ids)
    again = evaluations_execute(evaluation_ids=ids)

    assert [o.status for o in first] == ["succeeded"] * 3
    assert [o.status for o in again] == ["skipped"] * 3
    assert fake_judge.stats()["completions"] == 3
    assert CriterionVerdict.objects.filter(evaluation_id__in=ids).count() == 9


def test_two_evaluations_of_one_run_written_together_leave_the_newer_current(
    fake_judge, make_rubric, make_run
):
    from rubrics.services import rubric_set_criteria

    rubric = make_rubric()
    run = make_run(rubric=rubric.slug, output=PASSING)
    older = only_evaluation(run)
    v2, _ = rubric_set_criteria(rubric=rubric, criteria='- Mentions "refund"\n- Says "thanks"')
    newer = queued_evaluation(run=run, kind="rubric", rubric=rubric, version=v2)

    outcomes = evaluations_execute(evaluation_ids=[str(newer.id), str(older.id)])

    assert [o.status for o in outcomes] == ["succeeded", "succeeded"]
    older.refresh_from_db(), newer.refresh_from_db()
    assert newer.is_current and not older.is_current
    current = CriterionVerdict.objects.filter(run=run, is_current=True)
    assert {v.evaluation_id for v in current} == {newer.id} and current.count() == 2
    assert AgentRun.objects.get(pk=run.pk).current_version_id == v2.id


# --- Group commit ---------------------------------------------------------------------------------


def test_group_commit_writes_concurrent_jobs_together_and_answers_each_caller():
    seen: list[list[int]] = []
    first_write = threading.Event()
    others_queued = threading.Event()

    def write(jobs: list[int]) -> list[int]:
        seen.append(list(jobs))
        if len(seen) == 1:  # hold the first write until the others have queued behind it
            first_write.set()
            assert others_queued.wait(30), "the other jobs never queued"
        return [job * 10 for job in jobs]

    commits: GroupCommit[int, int] = GroupCommit(write)
    answers: dict[int, int] = {}
    threads = [
        threading.Thread(target=lambda n=n: answers.__setitem__(n, commits.submit(n)))
        for n in range(12)
    ]
    threads[0].start()
    assert first_write.wait(30)
    for t in threads[1:]:
        t.start()
    wait_for(lambda: len(commits._pending) == 11, timeout=30, message="11 jobs to queue")
    others_queued.set()
    for t in threads:
        t.join()

    assert answers == {n: n * 10 for n in range(12)}
    assert seen[0] == [0]
    assert len(seen) == 2 and sorted(seen[1]) == list(range(1, 12))  # they did share a write


def test_a_job_that_fails_a_group_write_fails_only_its_own_caller():
    def write(jobs: list[int]) -> list[int]:
        if 13 in jobs:
            raise ValueError("unlucky")
        return jobs

    commits: GroupCommit[int, int] = GroupCommit(write)
    assert commits.submit_many([1, 2, 3]) == [1, 2, 3]
    with pytest.raises(ValueError, match="unlucky"):
        commits.submit_many([12, 13, 14])
    assert commits.submit(12) == 12  # the others of that group were written one by one


# --- With a real worker ---------------------------------------------------------------------------


@pytest.mark.worker
def test_a_bulk_ingest_is_judged_in_batched_messages_within_the_workers_concurrency(
    start_worker, transactional_db, fake_judge, make_rubric, team
):
    start_worker(concurrency=3)
    rubric = make_rubric()
    payloads = [
        RunPayload.model_validate(
            {
                "rubric": rubric.slug,
                "input": {"messages": [{"role": "user", "content": f"Where is order {i}?"}]},
                "output": f"{PASSING} [[latency:0.3]] ({i})",
            }
        )
        for i in range(20)
    ]
    with transaction.atomic():  # 20 evaluations, sent on commit as messages of 8, 8 and 4
        runs_ingest_many(team=team, payloads=payloads)

    pending = Evaluation.objects.filter(team=team).exclude(status=Status.SUCCEEDED)
    wait_for(lambda: not pending.exists(), timeout=90, message="20 evaluations to succeed")

    stats = fake_judge.stats()
    assert stats["completions"] == 20
    assert 1 < stats["max_in_flight"] <= 3
    assert CriterionVerdict.objects.filter(run__team=team, is_current=True).count() == 60
    assert set(Evaluation.objects.filter(team=team).values_list("attempts", flat=True)) == {1}


def test_a_process_claims_at_most_twice_its_limit_of_calls_in_flight():
    from judging import judge_runtime

    judge_runtime.limit_calls(2)
    try:
        entered = threading.Event()

        def another() -> None:
            with judge_runtime.claim_room(1):
                entered.set()

        with judge_runtime.claim_room(10) as room:
            assert room == 4
            waiting = threading.Thread(target=another)
            waiting.start()
            gate = judge_runtime._claims
            wait_for(lambda: gate.queues, timeout=30, message="the second claim to queue")
            assert not entered.is_set()  # no room until the first claim is written
        assert entered.wait(5)
        waiting.join()
    finally:
        judge_runtime.limit_calls(None)


def test_the_limit_counts_every_judge_request_not_evaluations(fake_judge):
    """One evaluation may send several requests at once (independent criteria, both
    alignment perspectives); each takes a slot."""
    from judge_engine import JudgeConfig, RubricScorer
    from judging import judge_runtime

    fake_judge.set_latency(0.2)
    scorer = RubricScorer(
        JudgeConfig(model="openai/fake-judge", api_base=fake_judge.url, api_key="k"),
        criteria="- one\n- two\n- three\n- four\n- five",
        strategy="independent",
    )
    judge_runtime.limit_calls(2)
    try:
        result = judge_runtime.run_judged(scorer.ascore(task="t", output="o"))
    finally:
        judge_runtime.limit_calls(None)

    assert len(result.calls) == 5
    assert fake_judge.stats()["requests"] == 5 and fake_judge.stats()["max_in_flight"] == 2


def test_a_claim_that_fails_half_way_claims_nothing(fake_judge, make_rubric, make_run, monkeypatch):
    from judging.services import execute
    from judging.services.execute import evaluation_execute

    evaluation = only_evaluation(make_run(rubric=make_rubric().slug, output=PASSING))
    real_plans = execute.plans_read

    def broken(rows):
        raise RuntimeError("database went away")

    monkeypatch.setattr(execute, "plans_read", broken)
    with pytest.raises(RuntimeError):
        evaluation_execute(evaluation_id=str(evaluation.id))
    evaluation.refresh_from_db()
    assert evaluation.status == Status.QUEUED and evaluation.attempts == 0  # not stranded

    monkeypatch.setattr(execute, "plans_read", real_plans)
    assert evaluation_execute(evaluation_id=str(evaluation.id)).status == "succeeded"
