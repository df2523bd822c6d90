"""Giving a pooled database connection back while a thread waits on something else.

With the pool (evalsite/dbsettings.py), a thread holds its connection until Django closes it: at
the end of a request or task. A thread that then waits seconds on a judge, on another thread's
judging or on a notification would hold a connection it does not use, and 32 worker threads
waiting on judges would need 32 connections. `release()` before such a wait hands it back (the
next query takes one again, already open: no reconnect). Without a pool, or inside a
transaction, it does nothing: closing would cost a reconnect, or end the transaction.
"""

from __future__ import annotations

from django.db import connection


def pooled() -> bool:
    return bool(connection.settings_dict.get("OPTIONS", {}).get("pool"))


def release() -> None:
    """Give this thread's connection back to the pool, if it holds one outside a transaction."""
    if connection.connection is not None and not connection.in_atomic_block and pooled():
        connection.close()
