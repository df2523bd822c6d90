"""A worker's threads and claims shared between teams (judging/fair_worker.py, judge_runtime's
claim room), in one process without a broker or database."""

from __future__ import annotations

import threading
from collections.abc import Callable

from judging import judge_runtime
from judging.fair_worker import FairThreads


class Blocking:
    """Work that records what ran and, for the teams named in ``hold``, blocks until released."""

    def __init__(self, hold: set[str]) -> None:
        self.hold = hold
        self.ran: list[tuple[str, list[str]]] = []
        self.release = threading.Event()
        self.started = threading.Semaphore(0)

    def __call__(self, tenant: str, ids: list[str]) -> list[str]:
        self.ran.append((tenant, ids))
        self.started.release()
        if tenant in self.hold:
            self.release.wait(10)
        return ids


def _in_thread(fn: Callable[[], object]) -> threading.Thread:
    thread = threading.Thread(target=fn)
    thread.start()
    return thread


def test_a_team_at_its_share_of_threads_is_parked_and_another_team_runs_at_once():
    threads = FairThreads(threads=4, reserve=1)  # one team may hold 3 threads
    work = Blocking(hold={"b"})
    busy = [_in_thread(lambda i=i: threads.run("b", [f"b{i}"], work)) for i in range(3)]
    for _ in busy:
        assert work.started.acquire(timeout=5)

    parked = threads.run("b", ["b3"], work)
    ran = threads.run("a", ["a0"], work)

    assert parked is None and threads.parked_count() == 1
    assert ran == ["a0"], "the reserve thread ran the other team's work without waiting"
    work.release.set()
    for thread in busy:
        thread.join(5)
    assert ("b", ["b3"]) in work.ran, "a thread that finished ran the parked unit"
    assert threads.parked_count() == 0 and threads.share.total == 0


def test_parked_work_goes_to_the_team_holding_fewest_threads():
    threads = FairThreads(threads=3, reserve=1)
    work = Blocking(hold={"b"})
    busy = [_in_thread(lambda i=i: threads.run("b", [f"b{i}"], work)) for i in range(2)]
    for _ in busy:
        assert work.started.acquire(timeout=5)
    threads.run("b", ["b-parked"], work)
    with threads.lock:  # a third team's unit parked while the reserve thread is busy
        threads._park("c", ["c-parked"])

    work.release.set()
    for thread in busy:
        thread.join(5)

    order = [ids[0] for _, ids in work.ran]
    assert order.index("c-parked") < order.index("b-parked")


def test_an_id_parked_twice_is_kept_once_and_handed_back_at_shutdown():
    threads = FairThreads(threads=2, reserve=1)
    work = Blocking(hold={"b"})
    busy = _in_thread(lambda: threads.run("b", ["b0"], work))
    assert work.started.acquire(timeout=5)

    threads.run("b", ["b1", "b2"], work)
    threads.run("b", ["b2", "b1"], work)  # a resend of the same evaluations

    assert threads.parked_count() == 2
    assert sorted(threads.close()) == ["b1", "b2"]
    work.release.set()
    busy.join(5)
    assert [ids for _, ids in work.ran] == [["b0"]], "nothing parked runs after close"


def test_a_team_under_its_share_claims_while_another_team_fills_the_claim_room():
    judge_runtime.limit_calls(2)  # claim room: 4
    try:
        entered = threading.Event()

        def same_team() -> None:
            with judge_runtime.claim_room(1, "b"):
                entered.set()

        with judge_runtime.claim_room(10, "b") as room:
            assert room == 4
            with judge_runtime.claim_room(3, "a") as other:
                assert other == 2, "its share of 4 between two teams, beyond the bound"
            waiting = _in_thread(same_team)
            assert not entered.wait(0.2), "the team at its share waits"
        assert entered.wait(5)
        waiting.join()
    finally:
        judge_runtime.limit_calls(None)


def test_a_stopping_worker_hands_its_parked_evaluations_back_to_the_broker(
    make_rubric, make_run, team
):
    from evalsite.celery import _hand_back_parked
    from judging import fair_worker
    from runs.models import Evaluation

    rubric = make_rubric()
    ids = [str(Evaluation.objects.get(run=make_run(rubric=rubric.slug)).id) for _ in range(2)]
    Evaluation.objects.filter(id__in=ids).update(enqueued_at=None)
    fair_worker.share_threads(2, reserve=1)  # one thread per team
    work = Blocking(hold={str(team.pk)})
    try:
        busy = _in_thread(lambda: fair_worker.run_fairly(str(team.pk), ["running"], work))
        assert work.started.acquire(timeout=5)
        assert fair_worker.run_fairly(str(team.pk), ids, work) is None  # parked

        _hand_back_parked()

        assert Evaluation.objects.filter(id__in=ids, enqueued_at__isnull=False).count() == 2
        assert fair_worker.close() == [], "nothing is left parked"
    finally:
        work.release.set()
        busy.join(5)
        fair_worker.share_threads(None)
    assert [unit for _, unit in work.ran] == [["running"]], "the parked ones did not run here"
