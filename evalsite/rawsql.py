"""Hand-written SQL for the few fixed-shape reads on the hot paths (a POST /api/score call, a
worker's write of a result), on SQLite and PostgreSQL alike.

The ORM builds and compiles a query object on every call; for a statement that runs for every
evaluation, that is most of its CPU. These helpers keep what the ORM guarantees: table and
column names come from the models' ``_meta`` (a renamed field fails the tests, it does not read
the wrong column), each parameter is prepared as its field prepares it (a UUID is hex on SQLite),
and each column read is converted as the ORM converts it (UUIDs, datetimes and JSON on SQLite).
Use them only where a profile shows the query building; everywhere else the ORM is clearer.
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from django.db import connections, router
from django.db.models import Field, Model
from django.db.models.fields import AutoFieldMixin


def connection_for(model: type[Model], *, write: bool = False) -> Any:
    alias = router.db_for_write(model) if write else router.db_for_read(model)
    return connections[alias]


def name(connection: Any, model: type[Model], field: str | None = None) -> str:
    """The quoted table of ``model``, or the quoted ``table.column`` of its ``field``."""
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    return table if field is None else f"{table}.{quote(_field(model, field).column)}"


def names(connection: Any, model: type[Model], fields: Iterable[str]) -> str:
    return ", ".join(name(connection, model, f) for f in fields)


def marks(count: int) -> str:
    """``count`` placeholders for an IN list (at least one: ``IN ()`` is not SQL)."""
    if count < 1:
        raise ValueError("an IN list needs at least one value")
    return ", ".join(["%s"] * count)


def lock_clause(connection: Any, *, no_key: bool = False) -> str:
    """FOR [NO KEY] UPDATE where the database has row locks (SQLite locks the whole file)."""
    features = connection.features
    if not features.has_select_for_update:
        return ""
    return (
        " FOR NO KEY UPDATE" if no_key and features.has_select_for_no_key_update else " FOR UPDATE"
    )


def prep(connection: Any, model: type[Model], field: str, values: Iterable[Any]) -> list[Any]:
    """``values`` prepared for the database as ``field``'s lookups prepare them."""
    f = _field(model, field)
    return [f.get_db_prep_value(v, connection) for v in values]


def _field(model: type[Model], name: str) -> Field:
    """A concrete field of ``model`` by name or attname (``team`` or ``team_id``)."""
    field = model._meta.get_field(name)
    if not isinstance(field, Field) or not field.concrete:
        raise ValueError(f"{model.__name__}.{name} is not a column")
    return field


def model_order(model: type[Model], attnames: Iterable[str]) -> tuple[str, ...]:
    """``attnames`` in the model's field order: the order Model.from_db takes values in."""
    wanted = set(attnames)
    ordered = tuple(f.attname for f in model._meta.concrete_fields if f.attname in wanted)
    if len(ordered) != len(wanted):
        raise ValueError(f"not concrete fields of {model.__name__}: {wanted - set(ordered)}")
    return ordered


def fetch(
    connection: Any, columns: Sequence[tuple[type[Model], str]], sql: str, params: Sequence[Any]
) -> list[list[Any]]:
    """Run ``sql`` and return its rows with the values of its first columns, ``columns``
    (each (model, field name), in order), converted as the ORM would convert them (columns
    after those, literals say, come as the database sends them)."""
    converters = [
        (i, [(_bound(convert, connection), col) for convert, col in chain])
        for i, chain in _converters(connection.alias, connection.vendor, tuple(columns))
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    out = []
    for row in rows:
        values = list(row)
        for i, chain in converters:
            for convert, expression in chain:
                values[i] = convert(values[i], expression, connection)
        out.append(values)
    return out


def select_in(
    model: type[Model],
    fields: Sequence[str],
    field: str,
    values: Sequence[Any],
    *,
    equal: dict[str, Any] | None = None,
    order_by: str = "",
    lock: str = "",
) -> list[list[Any]]:
    """``SELECT fields FROM model WHERE field IN values [AND name = value ...] [ORDER BY
    order_by] [FOR UPDATE]``, each value converted as the ORM converts it. ``order_by``: a field
    name, ``-`` in front for descending; ``lock``: ``"update"`` or ``"no_key"`` (FOR NO KEY
    UPDATE), ignored where the database has no row locks. No values: no rows, no query."""
    if not values:
        return []
    connection = connection_for(model, write=True)
    where = [f"{name(connection, model, field)} IN ({marks(len(values))})"]
    params = prep(connection, model, field, values)
    for other, value in (equal or {}).items():
        where.append(f"{name(connection, model, other)} = %s")
        params += prep(connection, model, other, [value])
    sql = "SELECT {} FROM {} WHERE {}".format(  # noqa: S608 - names from _meta
        names(connection, model, fields), name(connection, model), " AND ".join(where)
    )
    if order_by:
        column = name(connection, model, order_by.lstrip("-"))
        sql += f" ORDER BY {column}{' DESC' if order_by.startswith('-') else ''}"
    if lock:
        sql += lock_clause(connection, no_key=lock == "no_key")
    return fetch(connection, [(model, f) for f in fields], sql, params)


def instances_in(model: type[Model], field: str, values: Sequence[Any]) -> list[Any]:
    """The rows of ``model`` whose ``field`` is one of ``values``, as instances with every
    concrete field loaded (unordered)."""
    attnames = [f.attname for f in model._meta.concrete_fields]
    alias = connection_for(model, write=True).alias
    return [
        model.from_db(alias, attnames, row) for row in select_in(model, attnames, field, values)
    ]


def insert(objs: Sequence[Model]) -> None:
    """Insert unsaved instances of one model whose primary key is set in Python (a UUID
    default), as QuerySet.bulk_create would (each field's pre_save, as on an add, then its
    database preparation; related objects checked as for a save), in as few multi-row
    statements as the database allows. No signals are sent, as with bulk_create."""
    if not objs:
        return
    model = type(objs[0])
    meta = model._meta
    if isinstance(meta.pk, AutoFieldMixin):
        raise ValueError(f"{model.__name__} has a database-generated key: use bulk_create")
    connection = connection_for(model, write=True)
    fields = list(meta.concrete_fields)
    rows = []
    for obj in objs:
        obj._prepare_related_fields_for_save(operation_name="bulk_create")  # type: ignore[attr-defined]
        rows.append([f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields])
    columns, table = (
        ", ".join(connection.ops.quote_name(f.column) for f in fields),
        name(connection, model),
    )
    # The database's own limit (SQLite's variables), and PostgreSQL's 65,535 parameters.
    size = max(1, min(connection.ops.bulk_batch_size(fields, objs), 65535 // len(fields)))
    row_marks = f"({marks(len(fields))})"
    with connection.cursor() as cursor:
        for start in range(0, len(rows), size):
            batch = rows[start : start + size]
            values = ", ".join([row_marks] * len(batch))
            sql = f"INSERT INTO {table} ({columns}) VALUES {values}"  # noqa: S608 - names from _meta
            cursor.execute(sql, [v for row in batch for v in row])
    for obj in objs:
        obj._state.adding = False
        obj._state.db = connection.alias


def _bound(convert: Any, connection: Any) -> Any:
    """A backend converter cached from one thread's connection, bound to this one's (they are
    the same code; a converter may read its own connection's settings)."""
    owner = getattr(convert, "__self__", None)
    if isinstance(owner, type(connection.ops)) and owner is not connection.ops:
        return types.MethodType(convert.__func__, connection.ops)
    return convert


@lru_cache(maxsize=256)
def _converters(
    alias: str, vendor: str, columns: tuple[tuple[type[Model], str], ...]
) -> list[tuple[int, list[tuple[Any, Any]]]]:
    """Per selected column with any, its converters: the backend's, then the field's (the
    order of django.db.models.sql.compiler.SQLCompiler.get_converters)."""
    connection = connections[alias]
    out = []
    for i, (model, field_name) in enumerate(columns):
        field = _field(model, field_name)
        col = field.get_col(model._meta.db_table)
        chain = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
        if chain:
            out.append((i, [(convert, col) for convert in chain]))
    return out
