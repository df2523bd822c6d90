"""Fair sharing of a bounded resource between tenants (teams): the rule, and judge call slots.

The rule (``FairShare``), used for a worker's judge requests in flight, its claimed
evaluations and its threads:

* Under the ``limit``, with nobody waiting, anyone enters: one tenant alone uses everything.
* At the limit, a tenant holding less than its fair share (limit ÷ tenants holding or waiting)
  still enters, up to the ``ceiling`` (a bounded overdraft: a tenant whose work hangs cannot
  keep another tenant out, and hung work costs no CPU).
* Everyone else waits; when room frees, the waiting tenant holding least goes first (ties in
  round-robin order), so a tenant's backlog never sits in front of another tenant's new work.

``FairSlots`` applies the rule to judge requests on one asyncio loop. The tenant of a request
is ``TENANT`` (a context variable the caller sets; "" when nobody did).

A share may be *shared* with other processes through a ``Ledger`` (judging/fair_ledger.py keeps
one in Redis): then ``grant`` first applies the local rule and asks the ledger for at most that,
and the ledger applies the same rule to every live process's holdings at once (limit = the sum
of their limits). The ledger can only lower a grant: a process never holds more than its own
rule allows. A ledger that fails is left alone (``mirrored`` False: the local
rule decides) until ``resync`` writes this process's holdings to it again.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from contextvars import ContextVar
from typing import Protocol

TENANT: ContextVar[str] = ContextVar("evalsite_judge_tenant", default="")


class Ledger(Protocol):
    """Holdings of every process, kept outside any one of them. Each method raises when the
    ledger cannot be reached; the share then decides alone (``FairShare.mirrored``)."""

    def grant(self, kind: str, tenant: str, wanted: int, first_in_line: bool) -> int:
        """Apply the rule to every live process's holdings; take and return what is granted."""

    def add(self, kind: str, what: str, tenant: str, delta: int) -> None:
        """This process holds (``what`` "h") or waits for (``what`` "w") ``delta`` more."""

    def resync(self, kind: str, limit: int, held: dict[str, int], waiting: dict[str, int]) -> None:
        """Replace what the ledger holds for this process and ``kind`` with these counts."""

    def failed(self, exc: Exception) -> None:
        """Told of an error (to log it once)."""


class FairShare:
    """Bookkeeping and decisions only; callers hold their own lock and do the waiting."""

    def __init__(
        self,
        limit: int,
        ceiling: int | None = None,
        *,
        ledger: Ledger | None = None,
        kind: str = "",
    ) -> None:
        self.limit = max(1, limit)
        self.ceiling = max(self.limit, ceiling if ceiling is not None else 2 * self.limit)
        self.total = 0
        self.held: dict[str, int] = {}
        # Tenants with waiters, in round-robin order, each with how many wait.
        self.waiting: OrderedDict[str, int] = OrderedDict()
        self.ledger, self.kind = ledger, kind
        self.mirrored = False  # the ledger holds what this share holds (resync sets it)
        # The only live process (the ledger's beat says): decide locally, tell the ledger
        # nothing per call; the beat writes the holdings whole.
        self.solo = False
        self.mirror_lock = threading.Lock()  # a resync never interleaves with an update

    def room(self, tenant: str, wanted: int, *, first_in_line: bool) -> int:
        """How much of ``wanted`` the tenant may take now (0: it waits)."""
        free = self.limit - self.total
        if free > 0 and first_in_line:
            return min(wanted, free)
        tenants = len(self.held.keys() | self.waiting.keys() | {tenant})
        share = -(-self.limit // tenants)  # ceiling division: every tenant gets at least one
        return max(0, min(wanted, share - self.held.get(tenant, 0), self.ceiling - self.total))

    def grant(self, tenant: str, wanted: int, *, first_in_line: bool) -> int:
        """``room``, taken; while the ledger answers, at most what its global rule allows too."""
        with self.mirror_lock:
            # The local rule bounds every grant: the ledger may only lower it (what other
            # processes hold for the tenant), never raise a process past its own limit.
            granted = self.room(tenant, wanted, first_in_line=first_in_line)
            if granted > 0 and self.ledger is not None and self.mirrored and not self.solo:
                try:
                    granted = self.ledger.grant(self.kind, tenant, granted, first_in_line)
                except Exception as exc:  # noqa: BLE001 - any ledger failure: decide alone
                    self._lost(exc)
            self._count(self.held, tenant, granted)
            self.total += max(0, granted)
            return granted

    def arrive(self, tenant: str, wanted: int = 1) -> int:
        """A newcomer: how much it may take at once, taken (0: it must wait)."""
        return self.grant(tenant, wanted, first_in_line=not self.waiting)

    def take(self, tenant: str, amount: int) -> None:
        """Take without asking (a worker shutting down runs what it has)."""
        if amount > 0:
            with self.mirror_lock:
                self._count(self.held, tenant, amount)
                self.total += amount
                self._tell("h", tenant, amount)

    def give_back(self, tenant: str, amount: int) -> None:
        if amount <= 0:
            return
        with self.mirror_lock:
            self._count(self.held, tenant, -amount)
            self.total -= amount
            self._tell("h", tenant, -amount)

    def wait(self, tenant: str) -> None:
        with self.mirror_lock:
            self._count(self.waiting, tenant, 1)
            self._tell("w", tenant, 1)

    def stop_waiting(self, tenant: str) -> None:
        with self.mirror_lock:
            self._count(self.waiting, tenant, -1)
            self._tell("w", tenant, -1)

    @staticmethod
    def _count(counts: dict[str, int], tenant: str, delta: int) -> None:
        if delta == 0:
            return
        left = counts.get(tenant, 0) + delta
        if left > 0:
            counts[tenant] = left
        else:
            counts.pop(tenant, None)

    def unmirror(self, *, solo: bool) -> None:
        """Stop telling the ledger (until the next ``resync``), deciding alone if ``solo``."""
        with self.mirror_lock:
            self.mirrored, self.solo = False, solo

    def _tell(self, what: str, tenant: str, delta: int) -> None:
        if self.ledger is not None and self.mirrored and not self.solo:
            try:
                self.ledger.add(self.kind, what, tenant, delta)
            except Exception as exc:  # noqa: BLE001 - resync repairs the ledger later
                self._lost(exc)

    def _lost(self, exc: Exception) -> None:
        self.mirrored = False
        if self.ledger is not None:
            self.ledger.failed(exc)

    def resync(self) -> bool:
        """Write this share's holdings to its ledger; True when the ledger has them now."""
        if self.ledger is None:
            return False
        with self.mirror_lock:
            try:
                self.ledger.resync(self.kind, self.limit, dict(self.held), dict(self.waiting))
            except Exception as exc:  # noqa: BLE001 - tried again at the next beat
                self._lost(exc)
                return False
            self.mirrored = True
            return True

    def next_tenant(self) -> str | None:
        """The waiting tenant to serve next: the one holding least, earliest in the rotation.
        It moves to the end of the rotation, so equal tenants take turns."""
        if not self.waiting:
            return None
        best = min(self.waiting, key=lambda t: self.held.get(t, 0))
        self.waiting.move_to_end(best)
        return best


class FairSlots:
    """At most ``limit`` judge requests in flight on one event loop, shared fairly between
    tenants (``FairShare``; up to ``2 × limit`` while a tenant under its share enters).

    ``async with slots:`` takes a slot for the current ``TENANT``."""

    def __init__(self, limit: int, ledger: Ledger | None = None, poll: float = 0.2) -> None:
        self.share = FairShare(limit, ledger=ledger, kind="calls")
        if ledger is not None:
            self.share.resync()
        self.queues: dict[str, list[asyncio.Future[None]]] = {}
        # With a ledger, room freed by another process wakes nobody here: waiters look again.
        self.poll = poll
        self.polling: asyncio.TimerHandle | None = None

    async def __aenter__(self) -> None:
        await self.acquire(TENANT.get())

    async def __aexit__(self, *exc: object) -> None:
        self.release(TENANT.get())

    async def acquire(self, tenant: str) -> None:
        if self.share.arrive(tenant):
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self.queues.setdefault(tenant, []).append(future)
        self.share.wait(tenant)
        if self.share.ledger is not None and self.polling is None:
            self.polling = loop.call_later(self.poll, self._look_again)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release(tenant)  # granted just as it was cancelled: hand the slot on
            else:
                self._forget(tenant, future)
            raise

    def release(self, tenant: str) -> None:
        self.share.give_back(tenant, 1)
        self._wake()

    def _forget(self, tenant: str, future: asyncio.Future[None]) -> None:
        queue = self.queues.get(tenant, [])
        if future in queue:
            queue.remove(future)
            self.share.stop_waiting(tenant)
            if not queue:
                self.queues.pop(tenant, None)

    def _look_again(self) -> None:
        self.polling = None
        self._wake()
        if self.queues:
            self.polling = asyncio.get_running_loop().call_later(self.poll, self._look_again)

    def _wake(self) -> None:
        while (tenant := self.share.next_tenant()) is not None:
            future = self.queues[tenant][0]
            if not future.done() and not self.share.grant(tenant, 1, first_in_line=True):
                return
            self.queues[tenant].pop(0)
            if not self.queues[tenant]:
                self.queues.pop(tenant)
            self.share.stop_waiting(tenant)
            if future.done():  # cancelled while waiting; its task is unwinding
                continue
            future.set_result(None)
