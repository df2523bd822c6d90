"""Inline judging: the web process judges a POST /api/score call's evaluations itself, through
the worker's own path (judging.services.execute: claimed, judged on the process's judge loop,
written guarded by the lease).

A new run's evaluations are stored already claimed by the call (``inline_reserve`` first, then
runs.services.ingest.run_store with a lease token, then ``InlineSlot.start``): no broker message,
no claim statement, nothing for a worker to race. If this process dies, the lease expires and
the sweeper queues them as it does for a dead worker. A run stored before (the same
external_id again) is claimed from the queue with compare-and-set (``score_inline``): its
evaluations were sent to the broker too, whoever claims one first judges it, the other skips
it, and the lease guards the write, so there are never two results. The judging runs
in a small pool of this process's threads, not in the request's: the request answers 202 when
its time runs out while the judging goes on and is stored as a worker's would be. The pool has
EVALSITE_SCORE_INLINE_MAX threads; a call that finds them all busy leaves its evaluations to
the workers. Each thread keeps its database connection between jobs, as gunicorn's threads do
(``inline_close`` closes them: tests, shutdown).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection

from runs.models import Evaluation
from teams.models import Team

from .execute import Outcome, evaluations_execute, evaluations_execute_claimed

logger = logging.getLogger(__name__)

FINAL_OUTCOMES = ("succeeded", "failed")
_Job = tuple[Future, Callable[[], list[Outcome]]]


class _Pool:
    def __init__(self, size: int) -> None:
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.free = threading.BoundedSemaphore(size)
        self.threads = [
            threading.Thread(target=self._serve, name=f"inline-judge-{i}", daemon=True)
            for i in range(size)
        ]
        for thread in self.threads:
            thread.start()

    def reserve(self) -> bool:
        """Take a thread for a job to come (False when every thread is busy)."""
        return self.free.acquire(blocking=False)

    def unreserve(self) -> None:
        self.free.release()

    def run(self, job: Callable[[], list[Outcome]]) -> Future[list[Outcome]]:
        """Run ``job`` on the reserved thread; the thread is free again when it ends."""
        future: Future[list[Outcome]] = Future()
        self.jobs.put((future, job))
        return future

    def _serve(self) -> None:
        while (item := self.jobs.get()) is not None:
            future, job = item
            close_old_connections()  # as at the start of a request: drop a broken connection
            try:
                future.set_result(job())
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting request
                # Logged here too: the request may have answered 202 and gone.
                logger.exception("inline judging failed")
                future.set_exception(exc)
            finally:
                close_old_connections()
                self.free.release()
        connection.close()

    def close(self) -> None:
        for _ in self.threads:
            self.jobs.put(None)
        for thread in self.threads:
            thread.join(timeout=30)


_pool: _Pool | None = None
_pool_lock = threading.Lock()


def _the_pool() -> _Pool:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = _Pool(max(1, settings.EVALSITE_SCORE_INLINE_MAX))
        return _pool


def inline_close() -> None:
    """Finish the queued jobs, close the threads' database connections and stop them (the pool
    starts again when next needed)."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.close()


class InlineSlot:
    """One of this process's inline threads, taken for a call about to store its run: use it
    with ``start`` or give it back with ``release``, once."""

    def __init__(self, pool: _Pool) -> None:
        self._pool: _Pool | None = pool

    def start(self, *, evaluations: list[Evaluation], token: uuid.UUID) -> Future[list[Outcome]]:
        """Judge, on this thread, evaluations stored claimed with ``token``."""
        pool, self._pool = self._pool, None
        assert pool is not None, "an inline slot is used once"
        return pool.run(lambda: evaluations_execute_claimed(evaluations=evaluations, token=token))

    def release(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.unreserve()


def inline_reserve() -> InlineSlot | None:
    """A thread for a call about to store its run, or None when all EVALSITE_SCORE_INLINE_MAX
    are busy (leave the run to the workers)."""
    pool = _the_pool()
    return InlineSlot(pool) if pool.reserve() else None


def score_inline(*, team: Team, evaluation_ids: list[Any], deadline: float) -> list[Outcome] | None:
    """Judge the evaluations in this process; their outcomes when all of them ended here
    before ``deadline`` (time.monotonic()). None when a worker claimed one first, a judge
    failure was transient, every inline thread is busy, or time ran out (the judging then goes
    on): the caller then waits for the evaluations' ends."""
    pool = _the_pool()
    if not pool.reserve():
        return None
    ids, team_id = [str(i) for i in evaluation_ids], str(team.pk)
    return inline_finished(
        pool.run(lambda: evaluations_execute(evaluation_ids=ids, team=team_id)), deadline
    )


def inline_finished(future: Future[list[Outcome]], deadline: float) -> list[Outcome] | None:
    """The job's outcomes when it ended every evaluation (succeeded or failed) before
    ``deadline``, else None."""
    try:
        outcomes = future.result(timeout=max(0.0, deadline - time.monotonic()))
    except FutureTimeout:
        return None
    except Exception:  # noqa: BLE001 - logged by the pool; the evaluations are a worker's
        return None
    return outcomes if all(o.status in FINAL_OUTCOMES for o in outcomes) else None
