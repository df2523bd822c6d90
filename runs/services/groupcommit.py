"""Group commit: concurrent writers in one process share one transaction.

A worker process runs many evaluations at once (a thread each). Writing each result in its own
transaction costs a dozen statements and a commit per evaluation, all under the GIL; written
together, the statements are the same dozen for any number of results. The first caller to
arrive while no write is in progress becomes the leader: it takes every pending job (its own
included), writes them with one call, hands each caller its answer and steps down; a caller
that arrived meanwhile becomes the next leader. Nobody waits for a timer: alone, a caller writes
at once; under load, the jobs that queued during one write go together in the next.

A failing group write is retried job by job, so one bad job fails only its own caller.
Each caller returns only when its own job is committed, as if it had written alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from evalsite import dbpool

J = TypeVar("J")
R = TypeVar("R")


@dataclass(eq=False)
class _Entry(Generic[J]):
    job: J
    done: bool = False
    result: Any = None
    error: BaseException | None = None


class GroupCommit(Generic[J, R]):
    def __init__(self, write: Callable[[list[J]], Sequence[R]], max_batch: int = 64) -> None:
        self._write = write
        self._max_batch = max_batch
        self._cond = threading.Condition()
        self._pending: list[_Entry[J]] = []
        self._leading = False

    def submit(self, job: J) -> R:
        return self.submit_many([job])[0]

    def submit_many(self, jobs: list[J]) -> list[R]:
        """Each job's answer, in order; raises the first job's error if any failed."""
        if not jobs:
            return []
        entries: list[_Entry[J]] = [_Entry(job) for job in jobs]
        with self._cond:
            self._pending.extend(entries)
        while True:
            with self._cond:
                if not entries[-1].done and self._leading:
                    # The leader needs a connection: a follower waiting with a pooled one could
                    # hold the pool's last (evalsite.dbpool; no-op without a pool).
                    dbpool.release()
                while not entries[-1].done and self._leading:
                    self._cond.wait()
                if entries[-1].done:
                    break
                self._leading = True
                batch = self._pending[: max(self._max_batch, len(entries))]
                del self._pending[: len(batch)]
            try:
                self._run(batch)
            finally:
                with self._cond:
                    self._leading = False
                    self._cond.notify_all()
        for entry in entries:
            if entry.error is not None:
                raise entry.error
        return [entry.result for entry in entries]

    def _run(self, batch: list[_Entry[J]]) -> None:
        try:
            results = self._write([e.job for e in batch])
            for e, r in zip(batch, results, strict=True):
                e.result = r
        except BaseException as exc:
            if len(batch) == 1:
                batch[0].error = exc
            else:
                for e in batch:  # one bad job must not fail the others
                    try:
                        e.result = self._write([e.job])[0]
                    except BaseException as exc:  # noqa: BLE001 - handed to its caller
                        e.error = exc
        finally:
            for e in batch:
                e.done = True
