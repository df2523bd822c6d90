"""A worker's threads shared fairly between teams: a team's surplus messages are parked in
memory, never left to block a thread.

A Celery thread that receives evaluations of a team runs them at once while the team holds
fewer than ``threads - reserve`` of the worker's threads, or fewer than its fair share when
others are busy too (judge_engine.fairshare). Otherwise the evaluations are *parked*: the
message is acknowledged and their ids wait here. Whenever a thread finishes a unit of work it
takes the next parked unit of the team holding fewest threads. So a team whose judge hangs
holds at most ``threads - reserve`` threads, the reserve keeps fetching messages, and the
worker reaches another team's new run however long the first team's backlog is.

Nothing is lost: parked evaluations are still ``queued`` in the database with ``enqueued_at``
set, so if this process dies the sweeper sends them again after EVALSITE_REQUEUE_AFTER; a
worker shutting down hands them back to the broker at once (``close``). With other worker
processes alive (the shared ledger, judging/fair_ledger.py, lists them) a unit parked longer
than EVALSITE_FAIR_PARK_SECONDS goes back to the broker too (``hand_back``), so a team's backlog
is never held by one process while another has room. A copy of a parked id
arriving again (a resend) is dropped here, and the claim's compare-and-set makes any other
duplicate a no-op.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TypeVar

from judge_engine.fairshare import FairShare

logger = logging.getLogger(__name__)
T = TypeVar("T")
Work = Callable[[str, list[str]], T]


class FairThreads:
    def __init__(self, threads: int, reserve: int) -> None:
        self.share = FairShare(max(1, threads - reserve), max(1, threads))
        self.lock = threading.Lock()
        self.parked: dict[str, deque[tuple[list[str], float]]] = {}  # (ids, when parked)
        self.parked_ids: set[str] = set()
        self.closing = False

    def run(self, tenant: str, ids: list[str], work: Work[T]) -> T | None:
        """``work(tenant, ids)`` in this thread now, or park it (None). Afterwards, this
        thread runs parked units while there are any the fair share admits."""
        with self.lock:
            ids = [i for i in ids if i not in self.parked_ids]
            if not ids:
                return None  # all already parked here: that copy will run
            if not self.closing and not self.share.arrive(tenant):
                self._park(tenant, ids)
                return None
            if self.closing:
                self.share.take(tenant, 1)
        try:
            return work(tenant, ids)
        finally:
            self._done_then_drain(tenant, work)

    def _done_then_drain(self, tenant: str, work: Work[T]) -> None:
        while True:
            with self.lock:
                self.share.give_back(tenant, 1)
                unit = self._next()
            if unit is None:
                return
            tenant, ids = unit
            try:
                work(tenant, ids)
            except Exception:  # noqa: BLE001 - one unit's crash must not strand the others
                logger.exception("parked evaluations of team %s crashed", tenant)

    def _park(self, tenant: str, ids: list[str]) -> None:
        self.parked.setdefault(tenant, deque()).append((ids, time.monotonic()))
        self.parked_ids.update(ids)
        self.share.wait(tenant)

    def _next(self) -> tuple[str, list[str]] | None:
        """The parked unit to run next (its thread taken), or None."""
        if self.closing:
            return None
        tenant = self.share.next_tenant()
        if tenant is None or not self.share.grant(tenant, 1, first_in_line=True):
            return None
        ids = self._unpark(tenant)
        return tenant, ids

    def _unpark(self, tenant: str) -> list[str]:
        queue = self.parked[tenant]
        ids, _ = queue.popleft()
        if not queue:
            del self.parked[tenant]
        self.parked_ids.difference_update(ids)
        self.share.stop_waiting(tenant)
        return ids

    def close(self) -> list[str]:
        """Stop running parked work; the ids still parked, for the caller to send back."""
        with self.lock:
            self.closing = True
            ids = [i for queue in self.parked.values() for unit, _ in queue for i in unit]
            for tenant, queue in self.parked.items():
                for _ in queue:
                    self.share.stop_waiting(tenant)
            self.parked.clear()
            self.parked_ids.clear()
        return ids

    def hand_back(self, older_than: float) -> list[str]:
        """Unpark the units parked longer than ``older_than`` seconds: their ids, for the caller
        to send back to the broker, where any worker process with room takes them."""
        limit = time.monotonic() - older_than
        out: list[str] = []
        with self.lock:
            for tenant in list(self.parked):
                while tenant in self.parked and self.parked[tenant][0][1] <= limit:
                    out += self._unpark(tenant)
        return out

    def parked_count(self) -> int:
        with self.lock:
            return len(self.parked_ids)


_threads: FairThreads | None = None


def share_threads(threads: int | None, reserve: int = 0) -> None:
    """Share ``threads`` (the worker's concurrency; None: no sharing) between teams, keeping
    ``reserve`` of them (0: an eighth, at least one) out of any one team's reach."""
    global _threads
    if not threads or threads <= 1:
        _threads = None
        return
    reserve = reserve if reserve > 0 else max(1, threads // 8)
    _threads = FairThreads(threads, min(reserve, threads - 1))


def run_fairly(tenant: str, ids: list[str], work: Work[T]) -> T | None:
    """Run ``work(tenant, ids)`` now (its result) or park it for later (None)."""
    threads = _threads
    if threads is None:
        return work(tenant, ids)
    return threads.run(tenant, ids, work)


def hand_back(older_than: float) -> list[str]:
    """The ids parked longer than ``older_than`` seconds, unparked (see FairThreads.hand_back)."""
    threads = _threads
    return threads.hand_back(older_than) if threads is not None else []


def close() -> list[str]:
    """At worker shutdown: the parked evaluation ids, which nobody here will run now."""
    threads = _threads
    return threads.close() if threads is not None else []
