"""The rollups' one write shape: an upsert sent once per row (one executemany), each value
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
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)
