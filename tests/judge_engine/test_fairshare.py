"""Fair sharing of judge slots between tenants (judge_engine/fairshare.py), no database."""

from __future__ import annotations

import asyncio

import pytest

from judge_engine.fairshare import TENANT, FairShare, FairSlots


async def _enter(slots: FairSlots, tenant: str) -> asyncio.Task[None]:
    """Start acquiring a slot for ``tenant``; the task is done once it holds one."""
    task = asyncio.create_task(slots.acquire(tenant))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    return task


def test_one_tenant_alone_gets_every_slot_and_no_more():
    async def scenario() -> None:
        slots = FairSlots(3)
        held = [await _enter(slots, "b") for _ in range(3)]
        fourth = await _enter(slots, "b")

        assert all(t.done() for t in held)
        assert not fourth.done()
        slots.release("b")
        await asyncio.sleep(0)
        assert fourth.done()

    asyncio.run(scenario())


def test_a_tenant_whose_calls_hang_does_not_keep_another_tenant_out():
    async def scenario() -> None:
        slots = FairSlots(2)
        for _ in range(2):
            await _enter(slots, "b")  # hung: never released
        b_waiting = await _enter(slots, "b")

        a_first = await _enter(slots, "a")
        a_second = await _enter(slots, "a")

        assert a_first.done(), "a tenant under its share overdraws the limit"
        assert not a_second.done(), "but only up to its share (2 slots / 2 tenants)"
        slots.release("a")
        await asyncio.sleep(0)
        assert a_second.done(), "the tenant holding least is served first"
        assert not b_waiting.done()
        assert slots.share.total == 3 and slots.share.held == {"a": 1, "b": 2}

    asyncio.run(scenario())


def test_the_overdraft_is_bounded_by_twice_the_limit():
    share = FairShare(4)
    assert share.arrive("b", 4) == 4
    assert share.arrive("a", 10) == 2  # its share of 4 between 2 tenants
    assert share.arrive("c", 10) == 2  # ceil(4 / 3) = 2, and the ceiling of 8 is reached
    assert share.arrive("d", 1) == 0
    assert share.total == 8


def test_waiting_tenants_take_turns_when_they_hold_the_same():
    share = FairShare(2)
    share.take("a", 1)
    share.take("b", 1)
    share.wait("a")
    share.wait("b")
    share.wait("a")

    first = share.next_tenant()
    second = share.next_tenant()

    assert {first, second} == {"a", "b"}


def test_a_cancelled_waiter_gives_up_its_place():
    async def scenario() -> None:
        slots = FairSlots(1)
        await _enter(slots, "b")
        waiter = await _enter(slots, "b")
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        late = await _enter(slots, "b")

        slots.release("b")
        await asyncio.sleep(0)

        assert late.done() and slots.share.held == {"b": 1}
        assert not slots.share.waiting and not slots.queues

    asyncio.run(scenario())


def test_the_slot_context_counts_calls_for_the_current_tenant():
    async def call(slots: FairSlots, tenant: str, seen: list[dict[str, int]]) -> None:
        TENANT.set(tenant)
        async with slots:
            seen.append(dict(slots.share.held))
            await asyncio.sleep(0.01)

    async def scenario() -> list[dict[str, int]]:
        slots = FairSlots(4)
        seen: list[dict[str, int]] = []
        await asyncio.gather(call(slots, "a", seen), call(slots, "b", seen))
        assert slots.share.total == 0
        return seen

    seen = asyncio.run(scenario())
    assert seen[-1] == {"a": 1, "b": 1}
