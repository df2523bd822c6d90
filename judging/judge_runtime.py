"""One asyncio loop per process, in a daemon thread, for every judge call.

Celery runs tasks in a thread pool; each thread hands its scoring coroutine to this loop and
blocks on the result. All judge calls of the process therefore share one loop and one pool of
HTTP connections, so many calls stay in flight at little CPU cost per call.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
from collections import deque
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

from evalsite import dbpool
from judge_engine import direct
from judge_engine.fairshare import FairShare, Ledger
from judge_engine.judge import limit_calls_in_flight

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _start() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    direct.enable(loop)  # process-long: its judge connections stay open until exit (_stop)
    thread = threading.Thread(target=loop.run_forever, name="judge-loop", daemon=True)
    thread.start()
    return loop


def _stop() -> None:
    """At exit: close the loop's HTTP connections before the interpreter tears down."""
    loop = _loop
    if loop is None or loop.is_closed() or not loop.is_running():
        return
    with contextlib.suppress(Exception):  # exiting anyway
        asyncio.run_coroutine_threadsafe(direct.close(), loop).result(5)
    loop.call_soon_threadsafe(loop.stop)


atexit.register(_stop)


_limit: int | None = None
_claims: _ClaimGate | None = None
POLL_SECONDS = 0.2  # how often a waiter looks at a shared ledger again


class _ClaimGate:
    """Claimed-but-unwritten evaluations of this process, shared fairly between teams
    (judge_engine.fairshare): up to ``limit`` for anyone, up to ``2 × limit`` while a team
    under its share claims. Waiting threads are served least-holding team first."""

    def __init__(self, limit: int, ledger: Ledger | None = None) -> None:
        self.share = FairShare(limit, ledger=ledger, kind="claims")
        if ledger is not None:
            self.share.resync()
        self.ready = threading.Condition()
        self.queues: dict[str, deque[list[int]]] = {}  # per team: [wanted, granted] tickets

    def enter(self, tenant: str, wanted: int) -> int:
        with self.ready:
            granted = self.share.arrive(tenant, wanted)
            if granted:
                return granted
            ticket = [wanted, 0]
            self.queues.setdefault(tenant, deque()).append(ticket)
            self.share.wait(tenant)
            dbpool.release()  # waiting for a turn holds no pooled connection
            while not ticket[1]:
                # With a ledger, room freed by another process notifies nobody here: look again.
                if not self.ready.wait(POLL_SECONDS if self.share.ledger else None):
                    self._wake()
            return ticket[1]

    def leave(self, tenant: str, amount: int) -> None:
        with self.ready:
            self.share.give_back(tenant, amount)
            self._wake()

    def _wake(self) -> None:
        """Hand freed room to waiting tickets (the caller holds ``ready``)."""
        woken = False
        while (team := self.share.next_tenant()) is not None:
            ticket = self.queues[team][0]
            room = self.share.grant(team, ticket[0], first_in_line=True)
            if not room:
                break
            self.queues[team].popleft()
            if not self.queues[team]:
                del self.queues[team]
            self.share.stop_waiting(team)
            ticket[1] = room
            woken = True
        if woken:
            self.ready.notify_all()


def limit_calls(limit: int | None, ledger: Ledger | None = None) -> None:
    """Keep at most ``limit`` judge calls of this process in flight (None: no limit), and at
    most twice that many evaluations claimed and not yet written; both shared fairly between
    teams, with a bounded overdraft for a team under its share (judge_engine.fairshare).

    A worker sets it to its concurrency: a broker message may carry several evaluations,
    so threads alone no longer bound the calls in flight. The claim bound keeps a claimed
    evaluation from waiting for a judge slot longer than about one judge call, well inside
    its lease.

    With a ``ledger`` (judging/fair_ledger.py: Redis) both are shared with every worker process
    of the deployment: a team's share is computed from its holdings in all of them."""
    global _limit, _claims
    _limit = limit if limit and limit > 0 else None
    _claims = _ClaimGate(2 * _limit, ledger) if _limit else None
    limit_calls_in_flight(_limit, ledger)


def shares() -> list[FairShare]:
    """This process's shares kept in a ledger (for its beat to resync)."""
    return [_claims.share] if _claims is not None else []


@contextlib.contextmanager
def claim_room(wanted: int, tenant: str = "") -> Iterator[int]:
    """Block until the process may claim more evaluations for ``tenant`` (a team id); yields
    how many it may claim (fewer than ``wanted`` when the bound or the team's share is
    smaller) and gives the room back on exit."""
    gate = _claims
    if gate is None or wanted <= 0:
        yield wanted
        return
    room = gate.enter(tenant, wanted)
    try:
        yield room
    finally:
        gate.leave(tenant, room)


def judge_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            _loop = _start()
        return _loop


def run_judged(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run ``coro`` on the shared loop and wait for its result (re-raising its exception)."""
    future = asyncio.run_coroutine_threadsafe(coro, judge_loop())
    try:
        return future.result(timeout)
    except TimeoutError:
        future.cancel()
        raise
