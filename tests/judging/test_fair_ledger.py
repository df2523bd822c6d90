"""The fair-share ledger against a real Redis: shares computed from every process's holdings,
a dead process's holdings expiring, and a Redis that goes away stopping nothing.

Each ``RedisLedger`` here stands for one worker process (its own hash in Redis), as
``judging.fair_ledger.start`` makes one per worker."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterator

import pytest
import redis
from django.conf import settings as django_settings

from judge_engine.fairshare import FairShare, FairSlots
from judging.fair_ledger import RedisLedger
from tests.waiting import wait_for

ON_REDIS = django_settings.CELERY_BROKER_URL.startswith("redis")
pytestmark = pytest.mark.skipif(not ON_REDIS, reason="needs the Redis broker")


@pytest.fixture
def client() -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    yield c
    c.close()


@pytest.fixture
def namespace(client) -> Iterator[str]:
    ns = f"evalsite:fair:test-{uuid.uuid4().hex[:8]}"
    yield ns
    for key in client.scan_iter(f"{ns}:*"):
        client.delete(key)


def process(client, namespace, limit: int, ttl: float = 30.0) -> tuple[RedisLedger, FairShare]:
    """One worker process's claim share, kept in the ledger."""
    ledger = RedisLedger(client, namespace, ttl)
    share = FairShare(limit, ledger=ledger, kind="claims")
    assert share.resync()
    return ledger, share


def test_a_teams_share_counts_its_holdings_in_every_process(client, namespace):
    """Two processes of limit 4: capacity 8. B asks for 6 in one and is granted 4 (a process
    never holds more than its own rule allows), then 3 in the other; A enters the first under
    its share (the bounded overdraft): the deployment is full. B is then refused in the second
    process although that process has room and its local rule alone would let B in: B holds 7
    of the deployment's 8, more than its share of 4."""
    _, p1 = process(client, namespace, 4)
    _, p2 = process(client, namespace, 4)
    assert p1.arrive("B", 6) == 4
    assert p2.arrive("B", 3) == 3
    assert p1.arrive("A", 1) == 1
    assert p2.room("B", 1, first_in_line=True) == 1  # what the local rule alone would say
    assert p2.arrive("B", 1) == 0

    p1.give_back("B", 4)  # B now holds 3 of 8, A 1: room again
    assert p2.arrive("B", 1) == 1


def test_a_process_never_takes_more_than_its_own_rule_allows(client, namespace):
    """Capacity 6 (two processes of 3) and nothing held anywhere: the ledger alone would give B
    all 6, but one process takes at most its limit, and past it only the overdraft of a team
    under its share."""
    _, p1 = process(client, namespace, 3)
    process(client, namespace, 3)
    assert p1.arrive("B", 6) == 3
    assert p1.arrive("B", 1) == 0  # alone in this process and at its limit
    assert p1.arrive("A", 5) == 2  # A's local share of 2: overdraft up to twice the limit
    assert p1.total == 5 <= p1.ceiling


def test_a_waiting_team_anywhere_counts_as_a_team_with_work(client, namespace):
    """Capacity 6 (two processes of 3): C holds 3 in one, B 2 in the other. With one free slot
    and nobody waiting, B takes it; while A waits in the other process, three teams have work,
    B's share is 2 and it gets nothing, though its own process has room."""
    _, p1 = process(client, namespace, 3)
    _, p2 = process(client, namespace, 3)
    assert p1.arrive("C", 4) == 3
    assert p2.arrive("B", 2) == 2
    p1.wait("A")
    assert p2.room("B", 1, first_in_line=True) == 1
    assert p2.arrive("B", 1) == 0
    p1.stop_waiting("A")
    assert p2.arrive("B", 1) == 1


def test_a_dead_processs_holdings_expire(client, namespace):
    """A process killed while holding (its hash is never renewed) stops counting once its
    TTL runs out, and is dropped from the process list."""
    dead, gone = process(client, namespace, 2, ttl=0.5)
    live, p = process(client, namespace, 2)
    assert gone.arrive("B", 8) == 2
    assert gone.arrive("A", 1) == 1  # A under its share: the process holds 3 of capacity 4
    assert p.arrive("B", 2) == 1  # one slot left in the deployment
    p.give_back("B", 1)
    wait_for(
        lambda: not client.exists(dead.own_key), timeout=10, message="the dead process's hash to expire"
    )  # fmt: skip
    assert p.arrive("B", 2) == 2  # only the live process counts now: capacity 2, all free
    live.beat([p])
    assert live.peers == 1
    assert list(live.holdings()) == [live.proc]


def test_beats_keep_a_live_process_listed_and_repair_an_expired_entry(client, namespace):
    ledger, share = process(client, namespace, 4)
    assert share.arrive("B", 3) == 3
    client.delete(ledger.own_key)  # as if it had expired (a long pause)
    assert share.arrive("B", 1) == 1  # refused by the ledger: decided locally, not lost
    assert not share.mirrored
    ledger.beat([share])
    assert share.mirrored
    assert ledger.holdings()[ledger.proc] == {"cap:claims": 4, "h:claims:B": 4}


def test_redis_away_falls_back_to_the_local_share_and_recovers(client, namespace, caplog):
    """Redis does not answer: decisions are per process (warned once), nothing raises;
    once it answers, the next beat writes the holdings taken meanwhile and sharing resumes."""
    ledger, share = process(client, namespace, 2)
    away = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    ledger.bind(away)
    with caplog.at_level(logging.WARNING, logger="judging.fair_ledger"):
        assert share.arrive("B", 2) == 2  # the local rule: alone, everything
        share.give_back("B", 1)
        assert share.arrive("A", 1) == 1
        ledger.beat([share])  # still away
    assert not share.mirrored
    warned = [r for r in caplog.records if "does not answer" in r.getMessage()]
    assert len(warned) == 1

    process(client, namespace, 2)  # another worker: the shares ask the ledger again
    ledger.bind(client)  # Redis is back
    with caplog.at_level(logging.WARNING, logger="judging.fair_ledger"):
        ledger.beat([share])
    assert share.mirrored and not share.solo
    assert any("answers again" in r.getMessage() for r in caplog.records)
    assert ledger.holdings()[ledger.proc] == {"cap:claims": 2, "h:claims:A": 1, "h:claims:B": 1}
    share.give_back("A", 1)
    share.give_back("B", 1)
    assert ledger.holdings()[ledger.proc] == {"cap:claims": 2}


def test_judge_slots_freed_in_another_process_wake_a_waiter_here(client, namespace):
    """FairSlots of two processes (two slots each, capacity 4): B fills the second's two and A
    enters there as well (under its share) and here: the deployment is full. B then waits
    here, though this process has a free slot. Only the second process frees B's slots, which
    notifies nobody here: the waiter finds the room by looking again."""

    async def scenario() -> None:
        here = FairSlots(2, RedisLedger(client, namespace, 30.0), poll=0.05)
        there = FairSlots(2, RedisLedger(client, namespace, 30.0), poll=0.05)
        await there.acquire("B")
        await there.acquire("B")
        await there.acquire("A")  # A holds nothing: the overdraft
        await here.acquire("A")
        waiter = asyncio.ensure_future(here.acquire("B"))
        await asyncio.sleep(0.2)
        assert not waiter.done(), "the deployment's 4 slots are held, B holds its share of 2"
        there.release("B")
        there.release("B")
        await asyncio.wait_for(waiter, timeout=10)
        here.release("B")
        here.release("A")
        there.release("A")

    asyncio.run(scenario())


def test_a_process_alone_decides_locally_and_its_beat_writes_its_holdings(client, namespace):
    """The only live process asks Redis nothing per decision (the rule is the same); each beat
    writes its holdings whole, and once a second process registers, the next beat makes both
    decide from the ledger again."""
    ledger, share = process(client, namespace, 4)
    ledger.beat([share])
    assert share.solo
    assert share.arrive("B", 3) == 3
    assert ledger.holdings()[ledger.proc] == {"cap:claims": 4}  # not told per call
    ledger.beat([share])
    assert ledger.holdings()[ledger.proc] == {"cap:claims": 4, "h:claims:B": 3}

    other, there = process(client, namespace, 4)
    ledger.beat([share])
    assert share.mirrored and not share.solo
    share.wait("A")
    # Capacity 8, A waiting here: B's share is 4 and the 3 it holds here count there.
    assert there.room("B", 8, first_in_line=True) == 4
    assert there.arrive("B", 8) == 1
