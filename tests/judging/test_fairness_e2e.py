"""Fair sharing between teams with a real worker, broker and the fake judge over HTTP."""

from __future__ import annotations

import time

import pytest
from django.db import transaction

from runs.models import CriterionVerdict, Evaluation, Status
from runs.payloads import RunPayload
from runs.services.ingest_many import runs_ingest_many
from tests.conftest import FAKE_MODEL, run_payload, wait_for

pytestmark = pytest.mark.worker

HANG = [{"description": 'Mentions "refund" [[judge:timeout]]', "required": True}]


def _bulk(team, rubric, count: int, tag: str) -> None:
    payloads = [
        RunPayload.model_validate(
            run_payload(
                rubric=rubric.slug,
                external_id=f"{tag}-{i}",
                output=f"Your refund for order number {i} was sent ({tag}), thanks.",
            )
        )
        for i in range(count)  # distinct outputs: no verdict is reused from another run
    ]
    for start in range(0, count, 500):  # as POST /api/runs/bulk does, at most 1,000 a call
        with transaction.atomic():
            runs_ingest_many(team=team, payloads=payloads[start : start + 500])


def _judge_env(fake_judge) -> dict[str, str]:
    return {
        "EVALSITE_JUDGE_MODEL": FAKE_MODEL,
        "EVALSITE_JUDGE_API_BASE": fake_judge.url,
        "EVALSITE_JUDGE_API_KEY": "fake-key",
    }


def test_a_teams_backlog_and_hanging_judge_do_not_delay_another_teams_new_run(
    start_worker, transactional_db, fake_judge, make_rubric, make_run, other_team, settings
):
    """Team B has 1,000 queued runs (125 bulk messages ahead of A's in the broker) and a judge
    that never answers, so every one of B's calls hangs for the whole judge timeout (120 s).
    Team A's new run must still be judged while B's calls hang and before B's backlog drains:
    B holds at most 7 of the worker's 8 threads and its share of claims and judge slots, the
    rest of its messages are parked, and A's run goes in on the live lane with a slot of its
    own. Measured on this machine: about 0.1–1 s from A's ingest to its verdict (printed).
    Without fair sharing it waited for B's calls to time out (issue 10: over 150 s)."""
    settings.EVALSITE_JUDGE_TIMEOUT = 120.0
    worker = start_worker(concurrency=8, **_judge_env(fake_judge))
    hanging = make_rubric(name="Hangs", criteria=HANG, team=other_team)
    _bulk(other_team, hanging, 1000, "b")
    wait_for(
        lambda: fake_judge.state.in_flight >= 8, timeout=60,
        message="team B's calls to fill the worker's judge slots and hang",
    )  # fmt: skip

    started = time.monotonic()
    a_run = make_run(rubric=make_rubric().slug)  # team A's, one run: the live lane
    wait_for(
        lambda: Evaluation.objects.filter(run=a_run, status=Status.SUCCEEDED).exists(),
        timeout=60, message="team A's run to be judged",
    )  # fmt: skip
    waited = time.monotonic() - started

    b = Evaluation.objects.filter(team=other_team)
    b_done = b.filter(status__in=[Status.SUCCEEDED, Status.FAILED]).count()
    b_queued = b.filter(status=Status.QUEUED).count()
    b_hanging = fake_judge.state.in_flight
    print(f"\nteam A's run judged {waited:.2f} s after ingest; team B: {b_hanging} calls hanging, "
          f"{b_done} of 1,000 ended, {b_queued} still queued")  # fmt: skip
    worker.kill()  # B's calls would hang for two minutes more; nothing here needs them
    assert b_done == 0 and b_hanging >= 8, "A finished while B's hanging calls were in flight"
    assert b_queued > 900, "and before B's backlog drained"


def test_parked_evaluations_are_each_judged_once(
    start_worker, transactional_db, fake_judge, make_rubric, team, other_team
):
    """Two teams' bulk work through a worker of 2 threads, where a team may hold only one:
    most messages are parked and run later by whichever thread frees up. Every evaluation
    ends succeeded on its first attempt with exactly its verdicts: nothing lost or doubled."""
    fake_judge.set_latency(0.05)
    start_worker(concurrency=2, **_judge_env(fake_judge))
    _bulk(team, make_rubric(), 120, "a")
    _bulk(other_team, make_rubric(team=other_team), 120, "b")

    pending = Evaluation.objects.exclude(status__in=[Status.SUCCEEDED, Status.FAILED])
    wait_for(lambda: not pending.exists(), timeout=120, message="240 evaluations to end")

    assert Evaluation.objects.filter(status=Status.SUCCEEDED).count() == 240
    assert set(Evaluation.objects.values_list("attempts", flat=True)) == {1}
    assert CriterionVerdict.objects.count() == 240 * 3
    assert fake_judge.stats()["completions"] == 240


def test_a_new_run_is_taken_between_bulk_messages_not_after_them(
    start_worker, transactional_db, fake_judge, make_rubric, make_run, other_team
):
    """The broker lanes alone (a worker of one thread, so no fair sharing of threads): team
    B's 160 bulk runs (20 messages) are queued before team A's single run, yet the worker
    takes turns between the lanes and judges A's run before most of B's."""
    fake_judge.set_latency(0.05)
    _bulk(other_team, make_rubric(team=other_team), 160, "b")
    a_run = make_run(rubric=make_rubric().slug)

    start_worker(concurrency=1, **_judge_env(fake_judge))
    wait_for(
        lambda: Evaluation.objects.filter(run=a_run, status=Status.SUCCEEDED).exists(),
        timeout=60, message="team A's run to be judged",
    )  # fmt: skip

    b_done = Evaluation.objects.filter(team=other_team, status=Status.SUCCEEDED).count()
    print(f"\nteam A's run judged after {b_done} of team B's 160 bulk evaluations")
    assert b_done <= 32, "A's message was taken within the first few bulk messages"
