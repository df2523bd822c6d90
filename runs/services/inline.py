"""Inline judging: the web process judges a POST /api/score call's evaluations itself, through
the worker's own path (runs.services.execute: claim with compare-and-set, judge on the
process's judge loop, write guarded by the lease).

The evaluations were also sent to the broker as usual: whoever claims one first judges it, the
other skips it, and the lease guards the write, so there are never two results. The judging runs
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
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection

from teams.models import Team

from .execute import Outcome, evaluations_execute

logger = logging.getLogger(__name__)

FINAL_OUTCOMES = ("succeeded", "failed")
_Job = tuple[Future, list[str], str]


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

    def submit(self, ids: list[str], team_id: str) -> Future[list[Outcome]] | None:
        """The job's future, or None when every thread is busy."""
        if not self.free.acquire(blocking=False):
            return None
        future: Future[list[Outcome]] = Future()
        self.jobs.put((future, ids, team_id))
        return future

    def _serve(self) -> None:
        while (job := self.jobs.get()) is not None:
            future, ids, team_id = job
            close_old_connections()  # as at the start of a request: drop a broken connection
            try:
                future.set_result(evaluations_execute(evaluation_ids=ids, team=team_id))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting request
                # Logged here too: the request may have answered 202 and gone.
                logger.exception("inline judging of %s failed", ids)
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


def score_inline(*, team: Team, evaluation_ids: list[Any], deadline: float) -> bool:
    """Judge the evaluations in this process; True when all of them ended here before
    ``deadline`` (time.monotonic()). False when a worker claimed one first, a judge failure was
    transient, every inline thread is busy, or time ran out (the judging then goes on): the
    caller then waits for the evaluations' ends."""
    future = _the_pool().submit([str(i) for i in evaluation_ids], str(team.pk))
    if future is None:
        return False
    try:
        outcomes = future.result(timeout=max(0.0, deadline - time.monotonic()))
    except FutureTimeout:
        return False
    except Exception:  # noqa: BLE001 - logged by the pool; the evaluations are a worker's
        return False
    return all(o.status in FINAL_OUTCOMES for o in outcomes)
