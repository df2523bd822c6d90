"""Database connections: a pool per process on PostgreSQL (evalsite/dbsettings.py), handed back
while a thread waits (evalsite/dbpool.py), and every bad setting refused at start by name."""

from __future__ import annotations

import threading

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, connections

from evalsite import dbpool
from evalsite.dbsettings import postgres_settings

PARSED = {"ENGINE": "django.db.backends.postgresql", "NAME": "evalsite", "OPTIONS": {}}
ON_POSTGRES = connection.vendor == "postgresql"


def test_the_pool_is_the_default_with_its_bounds_and_the_connection_checked_when_taken():
    db = postgres_settings({}, PARSED)

    assert db["OPTIONS"]["pool"] == {"min_size": 2, "max_size": 10, "timeout": 10.0}
    assert db["CONN_MAX_AGE"] == 0  # Django refuses a pool with persistent connections
    assert db["CONN_HEALTH_CHECKS"] is True  # Django then checks each connection the pool lends
    assert db["OPTIONS"]["connect_timeout"] == 5
    assert "DISABLE_SERVER_SIDE_CURSORS" not in db


def test_the_pool_takes_its_sizes_and_timeout_from_the_environment():
    env = {
        "EVALSITE_DB_POOL_MIN": "0",
        "EVALSITE_DB_POOL_MAX": "4",
        "EVALSITE_DB_POOL_TIMEOUT": "2.5",
    }

    assert postgres_settings(env, PARSED)["OPTIONS"]["pool"] == {
        "min_size": 0,
        "max_size": 4,
        "timeout": 2.5,
    }


def test_without_the_pool_for_pgbouncer_connections_are_per_thread_and_cursors_client_side():
    env = {
        "EVALSITE_DB_POOL": "0",
        "EVALSITE_DB_CONN_MAX_AGE": "0",
        "EVALSITE_DB_DISABLE_SERVER_SIDE_CURSORS": "1",
    }
    db = postgres_settings(env, PARSED)

    assert "pool" not in db["OPTIONS"]
    assert db["CONN_MAX_AGE"] == 0
    assert db["DISABLE_SERVER_SIDE_CURSORS"] is True
    assert postgres_settings({"EVALSITE_DB_POOL": "off"}, PARSED)["CONN_MAX_AGE"] == 60


def test_options_of_the_database_url_are_kept():
    parsed = PARSED | {"OPTIONS": {"sslmode": "require", "connect_timeout": 9}}

    options = postgres_settings({}, parsed)["OPTIONS"]

    assert options["sslmode"] == "require"
    assert options["connect_timeout"] == 9


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"EVALSITE_DB_POOL": "maybe"}, "EVALSITE_DB_POOL must be 1 or 0"),
        ({"EVALSITE_DB_POOL_MAX": "ten"}, "EVALSITE_DB_POOL_MAX must be a whole number"),
        ({"EVALSITE_DB_POOL_MAX": "0"}, "EVALSITE_DB_POOL_MAX must be at least 1"),
        ({"EVALSITE_DB_POOL_MIN": "-1"}, "EVALSITE_DB_POOL_MIN must be at least 0"),
        ({"EVALSITE_DB_POOL_MIN": "8", "EVALSITE_DB_POOL_MAX": "4"}, "must not exceed"),
        ({"EVALSITE_DB_POOL_TIMEOUT": "soon"}, "EVALSITE_DB_POOL_TIMEOUT must be a number"),
        ({"EVALSITE_DB_POOL_TIMEOUT": "0"}, "EVALSITE_DB_POOL_TIMEOUT must be at least 0.1"),
        ({"EVALSITE_DB_POOL": "0", "EVALSITE_DB_CONN_MAX_AGE": "x"}, "EVALSITE_DB_CONN_MAX_AGE"),
        ({"EVALSITE_DB_CONNECT_TIMEOUT": "0"}, "EVALSITE_DB_CONNECT_TIMEOUT must be at least 1"),
    ],
)
def test_a_bad_setting_stops_the_start_naming_the_variable(env, named):
    with pytest.raises(ImproperlyConfigured, match=named):
        postgres_settings(env, PARSED)


@pytest.mark.django_db
def test_release_outside_a_pool_or_inside_a_transaction_keeps_the_connection():
    from django.db import transaction

    connection.ensure_connection()
    with transaction.atomic():
        dbpool.release()
        assert connection.connection is not None  # the transaction goes on
    if not dbpool.pooled():
        dbpool.release()
        assert connection.connection is not None  # closing would only cost a reconnect


def _backend_pids(rounds: int) -> set[int]:
    """What one thread does in a worker: query, wait (the connection released), query again."""
    seen = set()
    try:
        for _ in range(rounds):
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                seen.add(cursor.fetchone()[0])
            dbpool.release()
    finally:
        connections.close_all()
    return seen


@pytest.mark.skipif(not ON_POSTGRES, reason="the pool is PostgreSQL's")
@pytest.mark.django_db(transaction=True)
def test_many_threads_never_open_more_server_connections_than_the_pools_max():
    assert connection.pool is not None
    maximum = connection.settings_dict["OPTIONS"]["pool"]["max_size"]
    pids: set[int] = set()
    lock = threading.Lock()

    def work() -> None:
        seen = _backend_pids(rounds=20)
        with lock:
            pids.update(seen)

    threads = [threading.Thread(target=work) for _ in range(3 * maximum)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    # 3 × max threads, 20 queries each, and never more server connections than the pool's max.
    assert 1 <= len(pids) <= maximum
    assert connection.pool.get_stats()["pool_max"] == maximum


@pytest.mark.skipif(not ON_POSTGRES, reason="the pool is PostgreSQL's")
@pytest.mark.django_db(transaction=True)
def test_release_hands_the_connection_back_to_the_pool_and_the_next_query_takes_one_again():
    connection.ensure_connection()
    opened = connection.pool.get_stats()["connections_num"]
    available = connection.pool.get_stats().get("pool_available", 0)

    dbpool.release()

    assert connection.connection is None
    assert connection.pool.get_stats().get("pool_available", 0) == available + 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    assert connection.connection is not None
    assert connection.pool.get_stats()["connections_num"] == opened  # one already open: no connect


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/runs", "/rubrics", "/usage"])
def test_a_database_that_does_not_answer_is_a_503_with_retry_after_and_no_detail(api, path):
    from django.db import OperationalError

    def away(execute, sql, params, many, context):
        raise OperationalError("couldn't get a connection after 10.00 sec (host=db.internal)")

    with connection.execute_wrapper(away):
        response = api.get(path)

    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "5"
    body = response.json()
    assert body["message"].startswith("The database is unavailable or busy")
    assert "db.internal" not in response.content.decode()
