"""Being told when evaluations end, instead of polling for it.

Writers call ``evaluations_ended(ids)`` in the transaction that makes evaluations final
(succeeded, failed, cancelled). Waiters call ``wait_for_ends(ids, timeout, pending)``. The channel
(EVALSITE_NOTIFY):

- ``postgres``: ``pg_notify`` on one channel per evaluation, issued inside the writer's
  transaction, so PostgreSQL delivers it at commit, never before the row is visible. A waiter
  LISTENs on its own autocommit connection (EVALSITE_NOTIFY_URL, default Django's database).
- ``redis``: a PUBLISH per evaluation once the writer's transaction has committed
  (``transaction.on_commit``); a waiter SUBSCRIBEs (EVALSITE_NOTIFY_URL, default the rate
  limiter's Redis, i.e. the broker's).
- ``poll``: nothing is sent; waiters poll the database (50 ms, backing off to 500 ms).
- ``auto`` (the default): ``postgres`` on PostgreSQL, else ``redis`` with a Redis broker, else
  ``poll`` (the embedded SQLite stack).

A waiter subscribes FIRST, then checks the database, so an end that committed before it
subscribed is not missed; then it re-checks on every notification and every SAFETY_INTERVAL
seconds (a safety net, never what makes it fast). A channel that cannot be reached turns the
wait into polling (logged once per outage), never into an error. Each waiter holds one
connection for the length of its wait; a PostgreSQL one is then handed to the next waiter of the
process (UNLISTEN first; at most MAX_IDLE kept), a Redis one goes back to its pool.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import psycopg
import redis
from django.conf import settings
from django.db import connection, transaction

from evalsite import dbpool, rawsql

logger = logging.getLogger(__name__)

PG_PREFIX = "evalsite_ended_"  # + the evaluation id's 32 hex digits: 47 of PostgreSQL's 63
REDIS_PREFIX = "evalsite:ended:"
SAFETY_INTERVAL = 1.0
CONNECT_TIMEOUT = 2  # seconds; a channel slower than that to reach is treated as down
# Polling (the embedded stack, or a channel that is down): first poll soon, then less often.
FIRST_POLL = 0.05
MAX_POLL = 0.5
# libpq parameters of Django's OPTIONS that a LISTEN connection keeps (TLS and the like).
_LIBPQ_OPTIONS = {"sslmode", "sslrootcert", "sslcert", "sslkey", "options", "target_session_attrs"}


def notify_mode() -> str:
    """The channel in use: "postgres", "redis" or "poll" (EVALSITE_NOTIFY resolved)."""
    configured = settings.EVALSITE_NOTIFY
    on_postgres = connection.vendor == "postgresql"
    if configured == "auto":
        if on_postgres:
            return "postgres"
        return "redis" if _redis_url() else "poll"
    if configured == "postgres" and not on_postgres:
        return "poll"  # NOTIFY must travel with the writer's transaction: only on PostgreSQL
    if configured == "redis" and not _redis_url():
        return "poll"
    return configured


def _redis_url() -> str:
    for url in (
        settings.EVALSITE_NOTIFY_URL,
        settings.EVALSITE_RATELIMIT_URL,
        settings.CELERY_BROKER_URL,
    ):
        if url and url.startswith(("redis://", "rediss://")):
            return url
    return ""


# --- Sending -----------------------------------------------------------------------------------


def evaluations_ended(ids: Iterable[Any]) -> None:
    """Tell waiters these evaluations are final (or parked over budget: no longer coming).
    Call inside the transaction that made them
    so (outside one, right after the write): nothing is delivered unless it commits."""
    ids = [str(i) for i in ids]
    if not ids:
        return
    mode = notify_mode()
    if mode == "postgres":
        channels = [PG_PREFIX + uuid.UUID(i).hex for i in ids]
        rawsql.notify(connection, channels, ids)
    elif mode == "redis":
        transaction.on_commit(lambda: _publish(ids), robust=True)


def _publish(ids: list[str]) -> None:
    try:
        pipe = _redis_client().pipeline(transaction=False)
        for i in ids:
            pipe.publish(REDIS_PREFIX + i, i)
        pipe.execute()
    except redis.RedisError:
        # Waiters still see the end at their next safety check.
        logger.warning("could not publish the end of %d evaluation(s)", len(ids), exc_info=True)


_clients: dict[str, redis.Redis] = {}
_clients_lock = threading.Lock()


def _redis_client() -> redis.Redis:
    url = _redis_url()
    with _clients_lock:
        if url not in _clients:
            _clients[url] = redis.Redis.from_url(
                url, socket_connect_timeout=CONNECT_TIMEOUT, socket_timeout=CONNECT_TIMEOUT
            )
        return _clients[url]


# --- Waiting -----------------------------------------------------------------------------------


# Whether any of these ids has not ended yet (read from the database, by the caller's rule).
Pending = Callable[[list[Any]], bool]


class _Listener(Protocol):
    def wait(self, timeout: float) -> None:
        """Return after a notification arrived or ``timeout`` seconds passed."""

    def close(self) -> None: ...


def wait_for_ends(ids: list[Any], timeout: float, pending: Pending) -> bool:
    """Wait until ``pending(ids)`` is false (every one ended); False when ``timeout`` seconds
    pass first. The caller says what "ended" means (runs: evaluations final)."""
    deadline = time.monotonic() + timeout
    if timeout <= 0:
        return not pending(ids)
    listener = _listen([str(i) for i in ids])
    if listener is None:
        return _poll(ids, deadline, pending)
    try:
        return _wait_told(listener, ids, deadline, pending)
    finally:
        listener.close()


def _wait_told(listener: _Listener, ids: list[Any], deadline: float, pending: Pending) -> bool:
    while pending(ids):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        dbpool.release()  # the wait holds no database connection
        try:
            listener.wait(min(remaining, SAFETY_INTERVAL))
        except (psycopg.Error, redis.RedisError, OSError) as exc:
            _channel_down(exc)
            return _poll(ids, deadline, pending)
    return True


def _poll(ids: list[Any], deadline: float, pending: Pending) -> bool:
    interval = FIRST_POLL
    while pending(ids):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        dbpool.release()
        time.sleep(min(interval, remaining))
        interval = min(interval * 1.5, MAX_POLL)
    return True


_down = False  # the channel failed and that was logged; cleared by the next good subscription


def _listen(ids: list[str]) -> _Listener | None:
    """A subscription to these evaluations' ends, confirmed by the server; None to poll."""
    global _down
    mode = notify_mode()
    if mode == "poll":
        return None
    try:
        listener: _Listener = _PgListener(ids) if mode == "postgres" else _RedisListener(ids)
    except (psycopg.Error, redis.RedisError, OSError) as exc:
        _channel_down(exc)
        return None
    _down = False
    return listener


def _channel_down(exc: BaseException) -> None:
    global _down
    if not _down:
        _down = True
        logger.warning(
            "notification channel (%s) unreachable, waiting score calls poll instead: %s",
            notify_mode(),
            exc,
        )


class _PgListener:
    def __init__(self, ids: list[str]) -> None:
        self.channels = {PG_PREFIX + uuid.UUID(i).hex for i in ids}
        self.conninfo = _pg_conninfo()
        self.conn = _idle_connection(self.conninfo)
        try:
            rawsql.listen(self.conn, sorted(self.channels))  # answered: the LISTENs are in force
        except psycopg.Error:
            self.conn.close()  # an idle connection the server dropped: one fresh try
            self.conn = psycopg.connect(self.conninfo, autocommit=True)
            rawsql.listen(self.conn, sorted(self.channels))

    def wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            for note in self.conn.notifies(timeout=remaining, stop_after=1):
                if note.channel in self.channels:  # not a late one for the previous holder
                    return

    def close(self) -> None:
        """UNLISTEN and keep the connection for the next waiter (at most MAX_IDLE of them per
        process), else close it."""
        try:
            rawsql.unlisten_all(self.conn)
        except psycopg.Error:
            self.conn.close()
            return
        with _idle_lock:
            idle = _idle.setdefault(self.conninfo, [])
            if len(idle) < MAX_IDLE:
                idle.append(self.conn)
                return
        self.conn.close()


# Connecting costs PostgreSQL a new backend process (several ms, more under load): waiters of
# this process hand their LISTEN connections on instead. Bounded, and closed by notify_close().
MAX_IDLE = 2
_idle: dict[str, list[psycopg.Connection]] = {}
_idle_lock = threading.Lock()


def _idle_connection(conninfo: str) -> psycopg.Connection:
    with _idle_lock:
        idle = _idle.get(conninfo, [])
        while idle:
            conn = idle.pop()
            if not conn.closed:
                return conn
    return psycopg.connect(conninfo, autocommit=True)


def notify_close() -> None:
    """Close this process's idle LISTEN connections (tests, shutdown)."""
    with _idle_lock:
        conns = [conn for idle in _idle.values() for conn in idle]
        _idle.clear()
    for conn in conns:
        conn.close()


def _pg_conninfo() -> str:
    if settings.EVALSITE_NOTIFY_URL:
        return psycopg.conninfo.make_conninfo(
            settings.EVALSITE_NOTIFY_URL, connect_timeout=CONNECT_TIMEOUT
        )
    db = connection.settings_dict
    params = {
        "dbname": db["NAME"],
        "user": db.get("USER"),
        "password": db.get("PASSWORD"),
        "host": db.get("HOST"),
        "port": str(db.get("PORT") or ""),
    }
    params |= {k: v for k, v in (db.get("OPTIONS") or {}).items() if k in _LIBPQ_OPTIONS}
    return psycopg.conninfo.make_conninfo(
        connect_timeout=CONNECT_TIMEOUT, **{k: v for k, v in params.items() if v}
    )


class _RedisListener:
    def __init__(self, ids: list[str]) -> None:
        self.pubsub = _redis_client().pubsub()
        try:
            self.pubsub.subscribe(*[REDIS_PREFIX + i for i in ids])
            # SUBSCRIBE is asynchronous: only its confirmations prove it is in force.
            confirmed = 0
            deadline = time.monotonic() + CONNECT_TIMEOUT
            while confirmed < len(ids):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise redis.TimeoutError("no SUBSCRIBE confirmation")
                message = self.pubsub.get_message(timeout=remaining)
                if message and message["type"] == "subscribe":
                    confirmed += 1
        except BaseException:
            self.pubsub.close()
            raise

    def wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            message = self.pubsub.get_message(timeout=remaining)
            if message and message["type"] == "message":
                return

    def close(self) -> None:
        self.pubsub.close()
