"""How a process connects to PostgreSQL: a pool of connections per process (the default), or one
connection per thread kept for a while (for PgBouncer in transaction mode).

With the pool (psycopg_pool through Django 5.2's OPTIONS["pool"]), a thread takes a connection
when it first queries and gives it back when Django closes it: at the end of a request, of a
Celery task, and before a worker waits on a judge (judging.services.execute). A process then holds
at most EVALSITE_DB_POOL_MAX connections whatever its threads: 16 gunicorn threads or 32 worker
threads need a handful, not one each (docs/scaling.md has the sums). A connection is checked
(`SELECT 1`) when taken, so after a PostgreSQL restart a dead one is replaced there instead of
failing the request or evaluation that took it.

EVALSITE_DB_POOL=0 keeps the older scheme: a connection per thread, reused for
EVALSITE_DB_CONN_MAX_AGE seconds and health-checked before reuse. Use it behind PgBouncer (which
pools for every process) with EVALSITE_DB_CONN_MAX_AGE=0 and
EVALSITE_DB_DISABLE_SERVER_SIDE_CURSORS=1 (transaction pooling cannot keep a cursor open across
transactions).

Read by evalsite/settings.py; a bad value stops the process at start, naming the variable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ImproperlyConfigured

DEFAULTS = {
    "EVALSITE_DB_POOL": "1",
    "EVALSITE_DB_POOL_MIN": "2",
    "EVALSITE_DB_POOL_MAX": "10",
    "EVALSITE_DB_POOL_TIMEOUT": "10",
    "EVALSITE_DB_CONN_MAX_AGE": "60",
    "EVALSITE_DB_CONNECT_TIMEOUT": "5",
    "EVALSITE_DB_DISABLE_SERVER_SIDE_CURSORS": "0",
}
TRUE, FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def _value(env: Mapping[str, str], name: str) -> str:
    raw = env.get(name)
    return (raw if raw not in (None, "") else DEFAULTS[name]).strip().lower()


def _flag(env: Mapping[str, str], name: str) -> bool:
    value = _value(env, name)
    if value in TRUE | FALSE:
        return value in TRUE
    raise ImproperlyConfigured(f"{name} must be 1 or 0, not {env.get(name)!r}")


def _number(env: Mapping[str, str], name: str, low: float, *, whole: bool = True) -> Any:
    value = _value(env, name)
    try:
        number = int(value) if whole else float(value)
    except ValueError:
        kind = "a whole number" if whole else "a number"
        raise ImproperlyConfigured(f"{name} must be {kind}, not {env.get(name)!r}") from None
    if number < low:
        raise ImproperlyConfigured(f"{name} must be at least {low:g}, not {number}")
    return number


def pool_enabled(env: Mapping[str, str]) -> bool:
    return _flag(env, "EVALSITE_DB_POOL")


def postgres_settings(env: Mapping[str, str], database: dict[str, Any]) -> dict[str, Any]:
    """The PostgreSQL entry of DATABASES (as dj_database_url parsed it) with the connection
    scheme the environment asks for."""
    db = dict(database)
    options = dict(db.get("OPTIONS") or {})
    options.setdefault("connect_timeout", _number(env, "EVALSITE_DB_CONNECT_TIMEOUT", 1))
    if _flag(env, "EVALSITE_DB_DISABLE_SERVER_SIDE_CURSORS"):
        db["DISABLE_SERVER_SIDE_CURSORS"] = True
    if pool_enabled(env):
        low = _number(env, "EVALSITE_DB_POOL_MIN", 0)
        high = _number(env, "EVALSITE_DB_POOL_MAX", 1)
        if low > high:
            raise ImproperlyConfigured(
                f"EVALSITE_DB_POOL_MIN ({low}) must not exceed EVALSITE_DB_POOL_MAX ({high})"
            )
        options["pool"] = {
            "min_size": low,
            "max_size": high,
            "timeout": _number(env, "EVALSITE_DB_POOL_TIMEOUT", 0.1, whole=False),
        }
        db["CONN_MAX_AGE"] = 0  # Django requires it with a pool: the pool keeps connections
    else:
        db["CONN_MAX_AGE"] = _number(env, "EVALSITE_DB_CONN_MAX_AGE", 0)
    # Pooled: the pool checks a connection when it is taken (ConnectionPool.check_connection);
    # per thread: Django checks it before reusing it after a request or task.
    db["CONN_HEALTH_CHECKS"] = True
    db["OPTIONS"] = options
    return db
