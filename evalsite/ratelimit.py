"""Per-judge-model rate limits (requests and tokens per minute) shared by every worker.

Each limited model has two token buckets, one counting requests and one counting tokens, each
holding at most one minute's allowance and refilled continuously. A judge call is admitted only
when both buckets hold enough; otherwise nothing is taken and the caller learns how long to wait.

Where the buckets live decides who shares them: in Redis when the broker is Redis (every worker
on every machine), else in a small SQLite file under ``DATA_DIR`` (every process of the machine,
which is the whole embedded stack). Both backends apply the same arithmetic (``_take``) in one
atomic step: a Lua script in Redis, an IMMEDIATE transaction in SQLite.

Limits come from settings: ``EVALSITE_JUDGE_RATE_LIMITS`` (JSON, per model), else
``EVALSITE_JUDGE_RPM`` / ``EVALSITE_JUDGE_TPM`` for every model; 0 means unlimited.

The same backends serve the API's per-key request limit (``api_take``: one bucket per API key
or signed-in user, EVALSITE_API_RATE / EVALSITE_API_BURST) and counted holds (``hold`` /
``release``: at most N holders of a key at once, each hold expiring after its ttl so a process
that dies cannot keep one), which cap a team's waiting ``POST /api/score`` calls.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import redis
from django.conf import settings


@dataclass(frozen=True)
class Limit:
    rpm: int = 0  # requests per minute; 0 = unlimited
    tpm: int = 0  # tokens per minute; 0 = unlimited

    @property
    def unlimited(self) -> bool:
        return self.rpm <= 0 and self.tpm <= 0


@dataclass(frozen=True)
class Draw:
    """Take ``cost`` from the bucket ``key`` that holds ``capacity`` and refills at ``rate``/s."""

    key: str
    capacity: float
    rate: float
    cost: float


def _configured_limits() -> dict[str, Any]:
    raw = getattr(settings, "EVALSITE_JUDGE_RATE_LIMITS", "") or {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise ValueError(f"EVALSITE_JUDGE_RATE_LIMITS is not valid JSON: {exc}") from exc
    return raw if isinstance(raw, dict) else {}


def limit_for(model: str) -> Limit:
    """The limit that applies to a judge model string."""
    specific = _configured_limits().get(model)
    if isinstance(specific, dict):
        return Limit(rpm=int(specific.get("rpm") or 0), tpm=int(specific.get("tpm") or 0))
    return Limit(
        rpm=int(getattr(settings, "EVALSITE_JUDGE_RPM", 0) or 0),
        tpm=int(getattr(settings, "EVALSITE_JUDGE_TPM", 0) or 0),
    )


def _draws(model: str, limit: Limit, requests: int, tokens: int) -> list[Draw]:
    draws = []
    for name, per_minute, cost in (
        ("requests", limit.rpm, requests),
        ("tokens", limit.tpm, tokens),
    ):
        if per_minute > 0:
            # A call bigger than a whole minute's allowance would never fit: let it take all.
            draws.append(
                Draw(
                    key=f"evalsite:ratelimit:{model}:{name}",
                    capacity=float(per_minute),
                    rate=per_minute / 60.0,
                    cost=float(min(cost, per_minute)),
                )
            )
    return draws


def _take(levels: Sequence[tuple[float, float] | None], draws: Sequence[Draw], now: float):
    """Pure bucket arithmetic. ``levels`` holds each bucket's stored (level, timestamp) or None
    (a bucket never used is full). Returns (wait, new_levels): wait 0 means admitted and
    new_levels are to be stored; otherwise nothing may be stored."""
    wait, refilled = 0.0, []
    for state, draw in zip(levels, draws, strict=True):
        level, ts = state if state is not None else (draw.capacity, now)
        level = min(draw.capacity, level + max(0.0, now - ts) * draw.rate)
        refilled.append(level)
        if level < draw.cost:
            wait = max(wait, (draw.cost - level) / draw.rate)
    if wait > 0:
        return wait, []
    return 0.0, [(level - draw.cost, now) for level, draw in zip(refilled, draws, strict=True)]


class Backend(Protocol):
    def take(self, draws: Sequence[Draw]) -> float: ...

    def hold(self, key: str, capacity: int, ttl: float) -> str | None: ...

    def release(self, key: str, token: str) -> None: ...


def _token() -> str:
    return uuid.uuid4().hex


class SQLiteBackend:
    """Buckets in a SQLite file: shared by every process on this machine."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.clock = clock
        self._local = threading.local()

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS bucket (key TEXT PRIMARY KEY, level REAL, ts REAL)"
            )
            conn.execute(
                "CREATE TABLE IF NOT EXISTS holder "
                "(key TEXT, token TEXT, expires REAL, PRIMARY KEY (key, token))"
            )
            self._local.conn = conn
        return conn

    def take(self, draws: Sequence[Draw]) -> float:
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            levels = []
            for draw in draws:
                row = conn.execute(
                    "SELECT level, ts FROM bucket WHERE key = ?", (draw.key,)
                ).fetchone()
                levels.append(tuple(row) if row else None)
            wait, new = _take(levels, draws, self.clock())
            for draw, (level, ts) in zip(draws, new, strict=False):
                conn.execute(
                    "INSERT OR REPLACE INTO bucket (key, level, ts) VALUES (?, ?, ?)",
                    (draw.key, level, ts),
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return wait

    def hold(self, key: str, capacity: int, ttl: float) -> str | None:
        conn = self._connection()
        now = self.clock()
        token = _token()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("DELETE FROM holder WHERE key = ? AND expires <= ?", (key, now))
            (held,) = conn.execute("SELECT COUNT(*) FROM holder WHERE key = ?", (key,)).fetchone()
            if held < capacity:
                conn.execute("INSERT INTO holder VALUES (?, ?, ?)", (key, token, now + ttl))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return token if held < capacity else None

    def release(self, key: str, token: str) -> None:
        self._connection().execute("DELETE FROM holder WHERE key = ? AND token = ?", (key, token))


# The same arithmetic as _take, run atomically inside Redis on Redis's own clock (so workers on
# machines with skewed clocks still agree). Numbers go back as a string: Lua numbers returned
# to Redis are truncated to integers.
_REDIS_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local wait, levels = 0, {}
for i, key in ipairs(KEYS) do
  local cap = tonumber(ARGV[3 * i - 2])
  local rate = tonumber(ARGV[3 * i - 1])
  local cost = tonumber(ARGV[3 * i])
  local state = redis.call('HMGET', key, 'level', 'ts')
  local level = tonumber(state[1]) or cap
  local ts = tonumber(state[2]) or now
  level = math.min(cap, level + math.max(0, now - ts) * rate)
  levels[i] = level
  if level < cost then wait = math.max(wait, (cost - level) / rate) end
end
if wait > 0 then return tostring(wait) end
for i, key in ipairs(KEYS) do
  local cap = tonumber(ARGV[3 * i - 2])
  local rate = tonumber(ARGV[3 * i - 1])
  redis.call('HSET', key, 'level', tostring(levels[i] - tonumber(ARGV[3 * i])), 'ts', tostring(now))
  redis.call('EXPIRE', key, math.ceil(cap / rate) + 60)
end
return '0'
"""


# A counted hold: a sorted set of tokens scored by their expiry (Redis's clock).
_REDIS_HOLD = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2])) + 60)
return 1
"""


class RedisBackend:
    """Buckets in Redis: shared by every worker that reaches it."""

    def __init__(self, url: str) -> None:
        self.client = redis.Redis.from_url(url)
        self.script = self.client.register_script(_REDIS_TAKE)
        self.hold_script = self.client.register_script(_REDIS_HOLD)

    def take(self, draws: Sequence[Draw]) -> float:
        args: list[float] = []
        for d in draws:
            args += [d.capacity, d.rate, d.cost]
        return float(self.script(keys=[d.key for d in draws], args=args))

    def hold(self, key: str, capacity: int, ttl: float) -> str | None:
        token = _token()
        return token if self.hold_script(keys=[key], args=[capacity, ttl, token]) else None

    def release(self, key: str, token: str) -> None:
        self.client.zrem(key, token)


_backend_lock = threading.Lock()
_backends: dict[str, Backend] = {}


def backend() -> Backend:
    """The shared bucket store for this deployment (one client per process)."""
    url = getattr(settings, "EVALSITE_RATELIMIT_URL", "") or ""
    if not url:
        broker = settings.CELERY_BROKER_URL
        url = broker if broker.startswith(("redis://", "rediss://")) else ""
    location = url or str(Path(settings.DATA_DIR) / "ratelimit.sqlite3")
    with _backend_lock:
        if location not in _backends:
            _backends[location] = RedisBackend(url) if url else SQLiteBackend(Path(location))
        return _backends[location]


def judge_acquire(*, model: str, tokens: int, requests: int = 1) -> float:
    """Take one call's allowance: 0 when admitted, else the seconds to wait (nothing taken)."""
    limit = limit_for(model)
    if limit.unlimited or requests <= 0:
        return 0.0
    return backend().take(_draws(model, limit, requests, tokens))


def judge_admit(
    *, model: str, tokens: int, requests: int = 1, max_wait: float | None = None
) -> float:
    """Wait for the limiter up to ``max_wait`` seconds in all (default
    EVALSITE_RATE_MAX_WAIT). Returns 0 once admitted, else how much longer the caller would
    have to wait: the caller then defers the work instead of holding a worker thread."""
    budget = settings.EVALSITE_RATE_MAX_WAIT if max_wait is None else max_wait
    while True:
        wait = judge_acquire(model=model, tokens=tokens, requests=requests)
        if wait <= 0:
            return 0.0
        if wait > budget:
            return wait
        budget -= wait
        time.sleep(wait)


# --- The API's request limits --------------------------------------------------------------------


def api_take(*, who: str) -> float:
    """One request of ``who`` (an API key or a signed-in user and team): 0 when admitted, else
    the seconds until the next one would be (nothing taken). EVALSITE_API_RATE requests per
    minute with bursts of EVALSITE_API_BURST; a rate of 0 turns the limit off."""
    rate = float(settings.EVALSITE_API_RATE)
    if rate <= 0:
        return 0.0
    burst = max(1.0, float(settings.EVALSITE_API_BURST))
    return backend().take([Draw(key=f"evalsite:api:{who}", capacity=burst, rate=rate / 60, cost=1)])
