"""The hot writes' one shape: a statement sent once per row (one executemany), each value
prepared as the ORM would prepare it for its field."""

from __future__ import annotations

from typing import Any


def upsert_rows(
    connection: Any, model: Any, sql: str, names: tuple[str, ...], rows: list[list[Any]]
) -> None:
    """Send ``sql`` once per row of ``rows`` (values in the order of the fields ``names``)."""
    fields = [model._meta.get_field(name) for name in names]
    params = [
        [f.get_db_prep_save(v, connection) for f, v in zip(fields, row, strict=True)]
        for row in rows
    ]
    send_rows(connection, sql, params)


def send_rows(connection: Any, sql: str, params: list[list[Any]]) -> None:
    """``sql`` once per parameter row. One row is sent as a plain execute: psycopg sends an
    executemany through pipeline mode, which costs more CPU than the statement for one row."""
    with connection.cursor() as cursor:
        if len(params) == 1:
            cursor.execute(sql, params[0])
        elif params:
            cursor.executemany(sql, params)
