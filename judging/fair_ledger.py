"""The fair-share ledger: what every worker process of the deployment holds, per team, in Redis.

With a Redis broker each worker process keeps its judge requests in flight ("calls") and its
claimed evaluations ("claims") in one Redis hash of its own, ``evalsite:fair:<queue>:p:<id>``:
``cap:<kind>`` (its limit), ``h:<kind>:<team>`` (held), ``w:<kind>:<team>`` (waiting). The hash
lives ``ttl`` seconds and the worker's beat (judging/worker_watch.py, every
EVALSITE_WORKER_BEAT_SECONDS) renews it, so the holdings of a killed process expire with it and
are never counted for ever. A set lists the processes; a script drops the ones whose hash is gone.

Every decision is one Lua script (atomic in Redis): it sums the live processes' limits and
holdings and applies the rule of judge_engine.fairshare to the sum, a team's share being the
deployment's capacity divided by the teams holding or waiting anywhere, then takes what it
grants. Every take has its give-back (``add`` with a negative count) in a ``finally`` of the
caller (judge_engine.fairshare, judging.judge_runtime).

A Redis that does not answer stops nothing: the shares decide per process (logged once) and the
next beat that reaches Redis writes this process's holdings to it again (``resync``).
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Iterable

import redis
from django.conf import settings

from judge_engine.fairshare import FairShare

logger = logging.getLogger(__name__)

_GRANT = """
local procs = redis.call('SMEMBERS', KEYS[1])
local prefix, kind, team = ARGV[1], ARGV[2], ARGV[3]
local wanted, first, ttl = tonumber(ARGV[4]), ARGV[5] == '1', tonumber(ARGV[6])
if redis.call('EXISTS', KEYS[2]) == 0 then return redis.error_reply('EVALSITE_LEDGER_GONE') end
local cap_f, hp, wp = 'cap:' .. kind, 'h:' .. kind .. ':', 'w:' .. kind .. ':'
local limit, total, held, waits = 0, 0, {}, {}
for _, p in ipairs(procs) do
  local f = redis.call('HGETALL', prefix .. p)
  if #f == 0 then redis.call('SREM', KEYS[1], p) end
  for i = 1, #f, 2 do
    local name, v = f[i], tonumber(f[i + 1])
    if name == cap_f then
      limit = limit + v
    elseif v > 0 and string.sub(name, 1, #hp) == hp then
      local t = string.sub(name, #hp + 1)
      held[t] = (held[t] or 0) + v
      total = total + v
    elseif v > 0 and string.sub(name, 1, #wp) == wp then
      local t = string.sub(name, #wp + 1)
      waits[t] = (waits[t] or 0) + v
    end
  end
end
limit = math.max(1, limit)
local mine = held[team] or 0
local least = true
for t, _ in pairs(waits) do
  if t ~= team and (held[t] or 0) < mine then least = false end
end
local granted = 0
if limit - total > 0 and first and least then
  granted = math.min(wanted, limit - total)
else
  local tenants, n = {[team] = true}, 0
  for t, _ in pairs(held) do tenants[t] = true end
  for t, _ in pairs(waits) do tenants[t] = true end
  for _ in pairs(tenants) do n = n + 1 end
  local share = math.floor((limit + n - 1) / n)
  granted = math.max(0, math.min(wanted, share - mine, 2 * limit - total))
end
if granted > 0 then redis.call('HINCRBY', KEYS[2], hp .. team, granted) end
redis.call('PEXPIRE', KEYS[2], ttl)
return granted
"""

_ADD = """
if redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('EVALSITE_LEDGER_GONE') end
if redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2]) <= 0 then redis.call('HDEL', KEYS[1], ARGV[1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""

_RESYNC = """
local kind, ttl = ARGV[2], tonumber(ARGV[4])
for _, name in ipairs(redis.call('HKEYS', KEYS[2])) do
  if name == 'cap:' .. kind or string.sub(name, 1, #kind + 3) == 'h:' .. kind .. ':'
      or string.sub(name, 1, #kind + 3) == 'w:' .. kind .. ':' then
    redis.call('HDEL', KEYS[2], name)
  end
end
redis.call('HSET', KEYS[2], 'cap:' .. kind, ARGV[3])
for i = 5, #ARGV, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
redis.call('PEXPIRE', KEYS[2], ttl)
redis.call('SADD', KEYS[1], ARGV[1])
return 1
"""

_BEAT = """
if redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('SADD', KEYS[1], ARGV[2])
local live = 0
for _, p in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', ARGV[1] .. p) == 1 then live = live + 1 else redis.call('SREM', KEYS[1], p) end
end
return live
"""


class RedisLedger:
    """One worker process's entry in the ledger (judge_engine.fairshare.Ledger)."""

    def __init__(self, client: redis.Redis, namespace: str, ttl: float) -> None:
        self.client = client
        self.proc = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.prefix = f"{namespace}:p:"
        self.procs_key = f"{namespace}:procs"
        self.own_key = self.prefix + self.proc
        self.ttl_ms = max(1, int(ttl * 1000))
        self.down = False  # a failure was logged; "answers again" is logged once it is repaired
        self.peers = 0  # live processes at the last beat, this one included
        self.bind(client)

    def bind(self, client: redis.Redis) -> None:
        """Talk to Redis through ``client`` (its scripts registered with it)."""
        self.client = client
        self._grant = client.register_script(_GRANT)
        self._add = client.register_script(_ADD)
        self._resync = client.register_script(_RESYNC)
        self._beat = client.register_script(_BEAT)

    def grant(self, kind: str, tenant: str, wanted: int, first_in_line: bool) -> int:
        if wanted <= 0:
            return 0
        args: list[str | int] = [self.prefix, kind, tenant, wanted, int(first_in_line), self.ttl_ms]
        return int(self._grant(keys=[self.procs_key, self.own_key], args=args))

    def add(self, kind: str, what: str, tenant: str, delta: int) -> None:
        self._add(keys=[self.own_key], args=[f"{what}:{kind}:{tenant}", delta, self.ttl_ms])

    def resync(self, kind: str, limit: int, held: dict[str, int], waiting: dict[str, int]) -> None:
        fields: list[str | int] = []
        for what, counts in (("h", held), ("w", waiting)):
            for tenant, count in counts.items():
                if count > 0:
                    fields += [f"{what}:{kind}:{tenant}", count]
        args = [self.proc, kind, limit, self.ttl_ms, *fields]
        self._resync(keys=[self.procs_key, self.own_key], args=args)

    def failed(self, exc: Exception) -> None:
        if not self.down:
            self.down = True
            logger.warning(
                "the fair-share ledger in Redis does not answer (%s): teams share each worker "
                "process on its own until it does",
                exc,
            )

    def beat(self, shares: Iterable[FairShare]) -> None:
        """Renew this process's entry; write its holdings again where the ledger lost them
        (an outage, an expiry). Called every few seconds by the worker's watch thread."""
        shares = list(shares)
        try:
            live = int(self._beat(keys=[self.procs_key, self.own_key], args=self._beat_args()))
        except redis.RedisError as exc:
            self.failed(exc)
            for share in shares:
                share.mirrored = False
            return
        self.peers = max(live, 1)
        alone = live == 1
        for share in shares:
            # Alone, the global rule is the local one: the shares decide without asking Redis
            # (two round trips less per judge call, about 1 ms of CPU per evaluation:
            # docs/benchmarks.md), and each beat writes their holdings whole (resync below),
            # so a newcomer reads them as of the last beat at worst. Leaving or entering that
            # mode goes through a resync, which sees every count taken meanwhile.
            if alone or share.solo:
                share.unmirror(solo=alone)
        if live < 0:  # expired (a long pause, a flushed Redis): every count must be written again
            for share in shares:
                share.mirrored = False
        repaired = all(share.mirrored or share.resync() for share in shares)
        if repaired and self.down:
            self.down = False
            logger.warning("the fair-share ledger in Redis answers again: teams share all workers")

    def _beat_args(self) -> list[str | int]:
        return [self.prefix, self.proc, self.ttl_ms]

    def holdings(self) -> dict[str, dict[str, int]]:
        """Every live process's fields (for tests and operators): process id -> field -> count."""
        out: dict[str, dict[str, int]] = {}
        for raw in self.client.smembers(self.procs_key):
            proc = _text(raw)
            fields = self.client.hgetall(self.prefix + proc)
            if fields:
                out[proc] = {_text(k): int(v) for k, v in fields.items()}
        return out


def _text(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


def namespace() -> str:
    return f"evalsite:fair:{settings.CELERY_TASK_DEFAULT_QUEUE}"


def ttl_seconds() -> float:
    """How long a silent process's holdings count: three beats, at least 10 s."""
    return max(10.0, 3 * settings.EVALSITE_WORKER_BEAT_SECONDS)


_ledger: RedisLedger | None = None


def start() -> RedisLedger | None:
    """This worker process's ledger entry: with a Redis broker (or rate-limit store), else None
    (the embedded stack is one machine with one worker: shares stay per process)."""
    global _ledger
    from .liveness import _redis_url

    url = _redis_url()
    if not url:
        _ledger = None
        return None
    client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
    _ledger = RedisLedger(client, namespace(), ttl_seconds())
    return _ledger


def tick(*, consuming: bool) -> None:
    """The worker's beat: renew the ledger entry; while consuming and other worker processes
    are alive, send evaluations parked longer than EVALSITE_FAIR_PARK_SECONDS back to the
    broker (bulk lane), where any process with room takes them."""
    ledger = _ledger
    if ledger is None:
        return
    from judge_engine.calls import call_shares

    from . import fair_worker, judge_runtime

    ledger.beat([*call_shares(), *judge_runtime.shares()])
    if not consuming or ledger.peers < 2:
        return
    ids = fair_worker.hand_back(settings.EVALSITE_FAIR_PARK_SECONDS)
    if ids:
        from runs.services.evaluations import evaluations_publish

        sent = evaluations_publish(ids)
        logger.info("handed %d parked evaluation(s) back to the broker", sent)
        if sent < len(ids):
            logger.warning("%d parked evaluation(s) wait for the sweeper", len(ids) - sent)
