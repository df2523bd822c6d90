"""Judge budgets with real worker processes, a real broker and the fake judge over HTTP:
evaluations over the budget wait (none fail, none are lost) and resume when it is raised;
concurrent workers overrun it by at most the calls they have in flight."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from judging.services.budget import budget_holds_expire, budget_update
from judging.services.sweep import evaluations_sweep
from runs.models import BudgetCounter, BudgetHold, Evaluation, Status
from runs.payloads import RunPayload
from runs.services.ingest_many import runs_ingest_many
from tests.conftest import FAKE_MODEL, run_payload, wait_for

pytestmark = pytest.mark.worker


def _bulk(team, rubric, count: int) -> None:
    payloads = [
        RunPayload.model_validate(
            run_payload(
                rubric=rubric.slug,
                external_id=f"budget-{i}",
                # Distinct outputs of one length: no verdict is reused, every call costs alike.
                output=f"Your refund for order number {i:05d} was sent, thanks.",
            )
        )
        for i in range(count)
    ]
    for start in range(0, count, 500):
        with transaction.atomic():
            runs_ingest_many(team=team, payloads=payloads[start : start + 500])


def _judge_env(fake_judge, **extra: str) -> dict[str, str]:
    return {
        "EVALSITE_JUDGE_MODEL": FAKE_MODEL,
        "EVALSITE_JUDGE_API_BASE": fake_judge.url,
        "EVALSITE_JUDGE_API_KEY": "fake-key",
        **extra,
    }


def _settled(team) -> dict[str, int] | None:
    """Counts by status once nothing is queued, running or reserved any more."""
    rows = Evaluation.objects.filter(team=team).values_list("status", flat=True)
    counts: dict[str, int] = {}
    for status in rows:
        counts[status] = counts.get(status, 0) + 1
    busy = counts.get(Status.QUEUED, 0) + counts.get(Status.RUNNING, 0)
    return None if busy or BudgetHold.objects.filter(team=team).exists() else counts


def _used(team) -> int:
    row = Evaluation.objects.filter(team=team).aggregate(
        p=Sum("prompt_tokens"), c=Sum("completion_tokens")
    )
    return (row["p"] or 0) + (row["c"] or 0)


def _tokens_per_evaluation(team) -> int:
    """The most one of these evaluations took (they are all alike, to a token or two)."""
    judged = Evaluation.objects.filter(team=team, status=Status.SUCCEEDED)
    return max(e.prompt_tokens + e.completion_tokens for e in judged)


def test_evaluations_over_the_budget_wait_and_all_are_judged_once_it_is_raised(
    start_worker, transactional_db, fake_judge, team, make_rubric
):
    start_worker(concurrency=2, **_judge_env(fake_judge, EVALSITE_TASK_BATCH="2"))
    rubric = make_rubric()
    budget_update(team=team, daily_tokens=1_500)
    _bulk(team, rubric, 30)

    held = wait_for(lambda: _settled(team), timeout=120, message="the budget to stop judging")

    assert held.get(Status.FAILED, 0) == 0
    assert held[Status.OVER_BUDGET] > 0 and held[Status.SUCCEEDED] > 0
    assert held[Status.SUCCEEDED] + held[Status.OVER_BUDGET] == 30
    day = BudgetCounter.objects.get(team=team, period="day")
    assert day.tokens == _used(team) >= 1_500 and day.reserved_tokens == 0

    budget_update(team=team, daily_tokens=10_000_000)  # queues the waiting ones at commit

    done = wait_for(
        lambda: (c := _settled(team)) and c.get(Status.SUCCEEDED) == 30 and c,
        timeout=120,
        message="every evaluation judged after the raise",
    )
    assert done == {Status.SUCCEEDED: 30}
    assert Evaluation.objects.filter(team=team).aggregate(a=Sum("attempts"))["a"] == 30


def test_concurrent_workers_overrun_the_budget_by_at_most_the_calls_in_flight(
    start_worker, transactional_db, fake_judge, team, make_rubric
):
    fake_judge.set_latency(0.2)  # calls overlap across the workers' threads
    concurrency, batch = 4, 2
    for _ in range(2):
        start_worker(
            concurrency=concurrency, **_judge_env(fake_judge, EVALSITE_TASK_BATCH=str(batch))
        )
    rubric = make_rubric()
    limit = 4_000
    budget_update(team=team, daily_tokens=limit)
    _bulk(team, rubric, 120)

    counts = wait_for(lambda: _settled(team), timeout=180, message="the budget to stop judging")

    in_flight = 2 * concurrency * batch  # evaluations the two workers can judge at once
    per_evaluation = _tokens_per_evaluation(team)
    used = _used(team)
    print(f"\nlimit {limit}, used {used} ({counts}); at most {in_flight} in flight "
          f"× {per_evaluation} tokens")  # fmt: skip
    assert counts.get(Status.FAILED, 0) == 0 and counts[Status.OVER_BUDGET] > 0
    assert counts[Status.SUCCEEDED] + counts[Status.OVER_BUDGET] == 120
    assert limit <= used < limit + in_flight * per_evaluation
    assert BudgetCounter.objects.get(team=team, period="day").tokens == used


def test_a_50000_token_daily_budget_stops_the_worker_within_one_batch_and_a_raise_resumes_it(
    start_worker, transactional_db, fake_judge, team, make_rubric
):
    """One worker thread, messages of EVALSITE_TASK_BATCH=8: the limit is overrun by less
    than one message's evaluations."""
    start_worker(concurrency=1, **_judge_env(fake_judge, EVALSITE_TASK_BATCH="8"))
    rubric = make_rubric()
    limit = 50_000
    budget_update(team=team, daily_tokens=limit)
    count = 400
    _bulk(team, rubric, count)

    held = wait_for(lambda: _settled(team), timeout=300, message="the budget to stop judging")

    used, per_evaluation = _used(team), _tokens_per_evaluation(team)
    print(f"\nlimit {limit}: used {used} ({held}), {per_evaluation} tokens per evaluation")
    assert held.get(Status.FAILED, 0) == 0 and held[Status.OVER_BUDGET] > 0
    assert limit <= used < limit + 8 * per_evaluation

    budget_update(team=team, daily_tokens=limit * 10)

    done = wait_for(
        lambda: (c := _settled(team)) and c.get(Status.SUCCEEDED) == count and c,
        timeout=300,
        message="every evaluation judged after the raise",
    )
    assert done == {Status.SUCCEEDED: count}


def test_a_killed_workers_reservation_is_given_back_and_its_evaluations_are_judged_later(
    start_worker, transactional_db, fake_judge, team, make_rubric
):
    fake_judge.set_latency(30.0)  # the worker is killed mid-call
    worker = start_worker(concurrency=1, **_judge_env(fake_judge, EVALSITE_TASK_BATCH="4"))
    rubric = make_rubric()
    budget_update(team=team, daily_tokens=1_000_000)
    _bulk(team, rubric, 4)
    wait_for(lambda: BudgetHold.objects.filter(team=team).exists(), timeout=60,
             message="the worker's reservation")  # fmt: skip
    worker.kill()
    day = BudgetCounter.objects.get(team=team, period="day")
    assert day.reserved_tokens > 0

    later = timezone.now() + timedelta(seconds=settings.EVALSITE_LEASE_SECONDS + 1)
    claimed = Evaluation.objects.filter(team=team, status=Status.RUNNING).count()
    assert budget_holds_expire(now=later) == 1
    assert claimed and evaluations_sweep(now=later).expired == claimed  # re-queued

    day.refresh_from_db()
    assert day.reserved_tokens == 0 and day.tokens == 0
    fake_judge.set_latency(0.0)
    start_worker(concurrency=2, **_judge_env(fake_judge))
    done = wait_for(
        lambda: (c := _settled(team)) and c.get(Status.SUCCEEDED) == 4 and c,
        timeout=120, message="the evaluations judged by a new worker",
    )  # fmt: skip
    assert done == {Status.SUCCEEDED: 4}
    day.refresh_from_db()
    assert day.tokens == _used(team) > 0 and day.reserved_tokens == 0
