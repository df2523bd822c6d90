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
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from contextvars import ContextVar

TENANT: ContextVar[str] = ContextVar("evalsite_judge_tenant", default="")


class FairShare:
    """Bookkeeping and decisions only; callers hold their own lock and do the waiting."""

    def __init__(self, limit: int, ceiling: int | None = None) -> None:
        self.limit = max(1, limit)
        self.ceiling = max(self.limit, ceiling if ceiling is not None else 2 * self.limit)
        self.total = 0
        self.held: dict[str, int] = {}
        # Tenants with waiters, in round-robin order, each with how many wait.
        self.waiting: OrderedDict[str, int] = OrderedDict()

    def room(self, tenant: str, wanted: int, *, first_in_line: bool) -> int:
        """How much of ``wanted`` the tenant may take now (0: it waits)."""
        free = self.limit - self.total
        if free > 0 and first_in_line:
            return min(wanted, free)
        tenants = len(self.held.keys() | self.waiting.keys() | {tenant})
        share = -(-self.limit // tenants)  # ceiling division: every tenant gets at least one
        return max(0, min(wanted, share - self.held.get(tenant, 0), self.ceiling - self.total))

    def arrive(self, tenant: str, wanted: int = 1) -> int:
        """A newcomer: how much it may take at once, taken (0: it must wait)."""
        granted = self.room(tenant, wanted, first_in_line=not self.waiting)
        self.take(tenant, granted)
        return granted

    def take(self, tenant: str, amount: int) -> None:
        if amount > 0:
            self.held[tenant] = self.held.get(tenant, 0) + amount
            self.total += amount

    def give_back(self, tenant: str, amount: int) -> None:
        if amount <= 0:
            return
        left = self.held.get(tenant, 0) - amount
        if left > 0:
            self.held[tenant] = left
        else:
            self.held.pop(tenant, None)
        self.total -= amount

    def wait(self, tenant: str) -> None:
        self.waiting[tenant] = self.waiting.get(tenant, 0) + 1

    def stop_waiting(self, tenant: str) -> None:
        count = self.waiting.get(tenant, 0) - 1
        if count > 0:
            self.waiting[tenant] = count
        else:
            self.waiting.pop(tenant, None)

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

    def __init__(self, limit: int) -> None:
        self.share = FairShare(limit)
        self.queues: dict[str, list[asyncio.Future[None]]] = {}

    async def __aenter__(self) -> None:
        await self.acquire(TENANT.get())

    async def __aexit__(self, *exc: object) -> None:
        self.release(TENANT.get())

    async def acquire(self, tenant: str) -> None:
        if self.share.arrive(tenant):
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.queues.setdefault(tenant, []).append(future)
        self.share.wait(tenant)
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

    def _wake(self) -> None:
        while (tenant := self.share.next_tenant()) is not None:
            if not self.share.room(tenant, 1, first_in_line=True):
                return
            future = self.queues[tenant].pop(0)
            if not self.queues[tenant]:
                self.queues.pop(tenant)
            self.share.stop_waiting(tenant)
            if future.done():
                continue  # cancelled while waiting; its task is unwinding
            self.share.take(tenant, 1)
            future.set_result(None)
