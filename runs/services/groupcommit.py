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
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

J = TypeVar("J")
R = TypeVar("R")


@dataclass(eq=False)
class _Entry(Generic[J]):
    job: J
    done: bool = False
    result: Any = None
    error: BaseException | None = None
    extra: dict = field(default_factory=dict)


class GroupCommit(Generic[J, R]):
    def __init__(self, write: Callable[[list[J]], Sequence[R]], max_batch: int = 64) -> None:
        self._write = write
        self._max_batch = max_batch
        self._cond = threading.Condition()
        self._pending: list[_Entry[J]] = []
        self._leading = False

    def submit(self, job: J) -> R:
        entry: _Entry[J] = _Entry(job)
        with self._cond:
            self._pending.append(entry)
            while not entry.done and self._leading:
                self._cond.wait()
            if not entry.done:
                self._leading = True
                batch = self._pending[: self._max_batch]
                del self._pending[: self._max_batch]
        if not entry.done:
            try:
                self._run(batch)
            finally:
                with self._cond:
                    self._leading = False
                    self._cond.notify_all()
        if entry.error is not None:
            raise entry.error
        return entry.result

    def _run(self, batch: list[_Entry[J]]) -> None:
        try:
            results = self._write([e.job for e in batch])
            for e, r in zip(batch, results, strict=True):
                e.result = r
        except BaseException:
            if len(batch) == 1:
                batch[0].error = _current_error()
            else:
                for e in batch:  # one bad job must not fail the others
                    try:
                        e.result = self._write([e.job])[0]
                    except BaseException as exc:  # noqa: BLE001 - handed to its caller
                        e.error = exc
        finally:
            for e in batch:
                e.done = True


def _current_error() -> BaseException:
    import sys

    error = sys.exc_info()[1]
    assert error is not None
    return error
