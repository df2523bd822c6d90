"""Every statement the project writes by hand for Django's database, in one place (the other
hand-written SQL is evalsite/ratelimit.py's own SQLite file, which no model describes). Checked by
tests/test_rawsql.py: no other module builds or sends SQL, and none uses private Django API.

What is here, and why the ORM does not say it:

- Fixed-shape reads on the hot paths (a POST /api/score call, a worker's write of a result):
  the ORM builds and compiles a query object on every call, most of such a statement's CPU.
  They run through ``Model.objects.raw()``, so Django converts each column and builds the
  instances as it does for any query.
- The many-row UPDATE (``update_rows``): one prepared statement sent for every row at once,
  where QuerySet.update would send one compiled statement per row.
- The many-row INSERT on PostgreSQL (``insert_rows``): ``COPY ... FROM STDIN``, whose rows
  psycopg formats in C, where bulk_create's ``UNNEST`` arrays are quoted value by value in
  Python (a worker's verdicts and a bulk ingest's runs: the hot paths' largest statements).
- The rollup upserts (``upsert``): ``INSERT ... ON CONFLICT ... DO UPDATE SET n = n + excluded.n``,
  which QuerySet.bulk_create cannot say (its update_fields overwrite), and the rebuild's
  ``LOCK TABLE``.
- PostgreSQL's notifications (``notify``, ``listen``): ``pg_notify`` and ``LISTEN``.

Table and column names come from the models' ``_meta`` (a renamed field fails the tests, it
does not read the wrong column), quoted by the backend; each value is prepared as its field
prepares it (a UUID is hex on SQLite). SQLite and PostgreSQL alike; the few differences branch
on ``connection.vendor`` and ``connection.features``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connections, router
from django.db.models import Field, Model
from psycopg import sql

# --- Names and values ---------------------------------------------------------------------------


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


def column(connection: Any, model: type[Model], field: str) -> str:
    """The quoted column of ``field`` alone (an INSERT's column list, a SET target)."""
    return connection.ops.quote_name(_field(model, field).column)


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


# --- Reads ---------------------------------------------------------------------------------------


def select_in(
    model: type[Model],
    fields: Sequence[str],
    field: str,
    values: Sequence[Any],
    **where: Any,
) -> list[list[Any]]:
    """The values of ``fields`` (in that order) of the rows of ``model`` whose ``field`` is one
    of ``values``, each converted as the ORM converts it (the filters: ``rows_in``'s)."""
    attnames = [_field(model, f).attname for f in fields]
    rows = rows_in(model, field, values, fields=attnames, **where)
    return [[getattr(row, a) for a in attnames] for row in rows]


def instances_in(model: type[Model], field: str, values: Sequence[Any], **where: Any) -> list[Any]:
    """The rows of ``model`` whose ``field`` is one of ``values``, as instances with every
    concrete field loaded (the filters: ``rows_in``'s; unordered unless asked)."""
    return list(rows_in(model, field, values, **where))


def rows_in(
    model: type[Model],
    field: str,
    values: Sequence[Any],
    *,
    fields: Sequence[str] = (),
    within: dict[str, Sequence[Any]] | None = None,
    equal: dict[str, Any] | None = None,
    null: Sequence[str] = (),
    order_by: str = "",
    lock: str = "",
) -> Sequence[Any]:
    """``SELECT fields FROM model [JOIN ...] WHERE field IN values [AND f IN ...] [AND f = value]
    [AND f IS NULL] [ORDER BY order_by] [FOR UPDATE]`` through ``Model.objects.raw()``: instances
    with ``fields`` (default every concrete field; the primary key always) loaded.

    ``within``: more IN lists; ``equal``: field -> value, ``fk__field`` for a field of the
    model a foreign key points to (joined); ``null``: fields that must be NULL; ``order_by``:
    a field name, ``-`` in front for descending; ``lock``: ``"update"`` or ``"no_key"`` (FOR
    NO KEY UPDATE), ignored where the database has no row locks. An empty IN list: no rows,
    no query."""
    lists = {field: values, **(within or {})}
    if not all(lists.values()):
        return []
    connection = connection_for(model, write=True)
    pk = model._meta.pk
    assert pk is not None
    selected = list(fields) or [f.attname for f in model._meta.concrete_fields]
    if pk.attname not in selected:
        selected.append(pk.attname)  # raw() builds instances: it needs their key
    joins: dict[str, str] = {}
    where, params = [], []
    for f, in_values in lists.items():
        where.append(f"{name(connection, model, f)} IN ({marks(len(in_values))})")
        params += prep(connection, model, f, in_values)
    for f, value in (equal or {}).items():
        target, target_field = _target(connection, model, f, joins)
        where.append(f"{name(connection, target, target_field)} = %s")
        params += prep(connection, target, target_field, [value])
    where += [f"{name(connection, model, f)} IS NULL" for f in null]
    sql = "SELECT {} FROM {}{} WHERE {}".format(  # noqa: S608 - names from _meta
        names(connection, model, selected),
        name(connection, model),
        "".join(joins.values()),
        " AND ".join(where),
    )
    if order_by:
        ordered = name(connection, model, order_by.lstrip("-"))
        sql += f" ORDER BY {ordered}{' DESC' if order_by.startswith('-') else ''}"
    if lock:
        sql += lock_clause(connection, no_key=lock == "no_key")
    # _default_manager: Django's documented name for a model's own manager.
    return list(model._default_manager.raw(sql, params, using=connection.alias))


@dataclass(frozen=True)
class KeysFrom:
    """One part of ``keys_from``: the ``fk`` values of ``model``'s rows whose ``fk`` is one of
    ``values`` (and, with ``any_positive``, one of those fields above 0), marked ``mark``."""

    model: type[Model]
    fk: str
    values: Sequence[Any]
    mark: int
    any_positive: Sequence[str] = ()


MARK = "evalsite_mark"  # the mark's column: no model's field is named so


def keys_from(target: type[Model], parts: Sequence[KeysFrom]) -> set[tuple[Any, int]]:
    """The distinct (primary key of ``target``, mark) pairs the parts find (each ``fk`` a
    foreign key to ``target``): one UNION statement read through ``target.objects.raw()``, so
    each key is converted as ``target``'s key is. Parts without values are left out."""
    parts = [p for p in parts if p.values]
    if not parts:
        return set()
    connection = connection_for(target, write=True)
    pk = target._meta.pk
    assert pk is not None
    as_key, as_mark = column(connection, target, pk.name), connection.ops.quote_name(MARK)
    selects, params = [], []
    for p in parts:
        fk = name(connection, p.model, p.fk)
        where = f"{fk} IN ({marks(len(p.values))})"
        if p.any_positive:
            where += " AND ({})".format(
                " OR ".join(f"{name(connection, p.model, f)} > 0" for f in p.any_positive)
            )
        selects.append(
            f"SELECT {fk} AS {as_key}, {int(p.mark)} AS {as_mark} "  # noqa: S608 - names from _meta
            f"FROM {name(connection, p.model)} WHERE {where}"
        )
        params += prep(connection, p.model, p.fk, p.values)
    rows = target._default_manager.raw(" UNION ".join(selects), params, using=connection.alias)
    return {(row.pk, getattr(row, MARK)) for row in rows}


def _target(connection: Any, model: type[Model], path: str, joins: dict[str, str]) -> tuple:
    """(model, field) that ``path`` names: a field of ``model``, or ``fk__field`` of the model
    its foreign key ``fk`` points to, whose JOIN is added to ``joins``."""
    if "__" not in path:
        return model, path
    fk_name, field = path.split("__", 1)
    fk = _field(model, fk_name)
    related = fk.related_model
    if not isinstance(related, type) or "__" in field:
        raise ValueError(f"{model.__name__}.{path}: one foreign key to a model, then a field")
    target = fk.target_field.attname  # type: ignore[attr-defined]
    joins[fk_name] = (
        f" JOIN {name(connection, related)} ON {name(connection, model, fk_name)} = {name(connection, related, target)}"
    )
    return related, field


# --- Writes --------------------------------------------------------------------------------------


def update_rows(model: type[Model], rows: Sequence[Model], names: Sequence[str]) -> None:
    """Write the named fields of unsaved instances, by primary key (``update_values``)."""
    attnames = [_field(model, n).attname for n in names]
    update_values(model, names, [(row.pk, [getattr(row, a) for a in attnames]) for row in rows])


def update_values(
    model: type[Model], names: Sequence[str], rows: Sequence[tuple[Any, Sequence[Any]]]
) -> None:
    """Write the named fields of rows given as (primary key, values in the order of ``names``):
    one prepared UPDATE sent for all rows at once (executemany), no instance built. Values go
    through each field's own database preparation, exactly as QuerySet.update would send
    them, without building a query object per row."""
    connection = connection_for(model, write=True)
    fields = [_field(model, n) for n in names]
    pk = model._meta.pk
    assert pk is not None
    sql = "UPDATE {} SET {} WHERE {} = %s".format(  # noqa: S608 - names from _meta
        name(connection, model),
        ", ".join(f"{column(connection, model, f.name)} = %s" for f in fields),
        column(connection, model, pk.name),
    )
    params = [
        [f.get_db_prep_save(v, connection) for f, v in zip(fields, values, strict=True)]
        + [pk.get_db_prep_value(key, connection)]
        for key, values in rows
    ]
    _send_rows(connection, sql, params)


def insert_rows(model: type[Model], rows: Sequence[Model]) -> None:
    """Insert unsaved instances whose primary key is set in Python (a UUID default), every
    concrete field stored as ``bulk_create`` stores it (each field's ``pre_save`` for an insert,
    then its database preparation; no signals, as bulk_create sends none). PostgreSQL: one
    ``COPY ... FROM STDIN`` in the caller's transaction; other databases: ``bulk_create``."""
    if not rows:
        return
    if any(row.pk is None for row in rows):
        raise ValueError(f"{model.__name__}: insert_rows needs each row's primary key set")
    connection = connection_for(model, write=True)
    if connection.vendor != "postgresql":
        model._default_manager.using(connection.alias).bulk_create(rows)
        return
    fields = model._meta.concrete_fields
    statement = "COPY {} ({}) FROM STDIN".format(
        name(connection, model), ", ".join(column(connection, model, f.name) for f in fields)
    )
    # wrap_database_errors: a conflict is Django's IntegrityError, as from any other statement.
    with (
        connection.wrap_database_errors,
        connection.cursor() as cursor,
        cursor.copy(statement) as copy,
    ):
        for row in rows:
            copy.write_row([f.get_db_prep_save(f.pre_save(row, True), connection) for f in fields])


def upsert(
    model: type[Model],
    fields: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    unique: Sequence[str],
    add: Sequence[str] = (),
    add_nullable: Sequence[str] = (),
    latest: Sequence[str] = (),
) -> None:
    """Insert each row (values in the order of ``fields``) or, where a row with the same
    ``unique`` fields exists, add to it: ``add`` fields summed, ``add_nullable`` summed with
    NULL + NULL staying NULL, ``latest`` fields keeping the later non-NULL value. One
    statement sent once per row (an executemany); pass the rows sorted, so concurrent writers
    lock shared rows in one order (no deadlock)."""
    if not rows:
        return
    connection = connection_for(model, write=True)
    col = {f: column(connection, model, f) for f in [*fields, *unique]}
    table = name(connection, model)
    greatest = "GREATEST" if connection.vendor == "postgresql" else "MAX"
    sets = [f"{col[f]} = {table}.{col[f]} + excluded.{col[f]}" for f in add]
    sets += [
        f"{col[f]} = CASE WHEN {table}.{col[f]} IS NULL AND excluded.{col[f]} IS NULL THEN NULL "
        f"ELSE COALESCE({table}.{col[f]}, 0) + COALESCE(excluded.{col[f]}, 0) END"
        for f in add_nullable
    ]
    sets += [
        f"{col[f]} = COALESCE({greatest}({table}.{col[f]}, excluded.{col[f]}), "
        f"{table}.{col[f]}, excluded.{col[f]})"
        for f in latest
    ]
    sql = "INSERT INTO {} ({}) VALUES ({}) ON CONFLICT ({}) DO UPDATE SET {}".format(  # noqa: S608 - names from _meta
        table,
        ", ".join(col[f] for f in fields),
        marks(len(fields)),
        ", ".join(col[f] for f in unique),
        ", ".join(sets),
    )
    prepared = [_field(model, f) for f in fields]
    params = [
        [f.get_db_prep_save(v, connection) for f, v in zip(prepared, row, strict=True)]
        for row in rows
    ]
    _send_rows(connection, sql, params)


def tables_lock(models: Sequence[type[Model]]) -> None:
    """Lock the models' tables against concurrent writers (EXCLUSIVE: reads go on) until the
    transaction ends. PostgreSQL only: SQLite's writers take the whole file anyway."""
    connection = connection_for(models[0], write=True)
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for model in models:
            cursor.execute(f"LOCK TABLE {name(connection, model)} IN EXCLUSIVE MODE")


def _send_rows(connection: Any, sql: str, params: list[list[Any]]) -> None:
    """``sql`` once per parameter row. One row is sent as a plain execute: psycopg sends an
    executemany through pipeline mode, which costs more CPU than the statement for one row."""
    with connection.cursor() as cursor:
        if len(params) == 1:
            cursor.execute(sql, params[0])
        elif params:
            cursor.executemany(sql, params)


# --- PostgreSQL notifications ------------------------------------------------------------------


def notify(connection: Any, channels: Sequence[str], payloads: Sequence[str]) -> None:
    """``pg_notify`` each channel with its payload in one statement, on ``connection`` (a
    PostgreSQL one: delivered when its transaction commits)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_notify(c, p) FROM unnest(%s::text[], %s::text[]) AS t(c, p)",
            [list(channels), list(payloads)],
        )


def listen(conn: Any, channels: Iterable[str]) -> None:
    """LISTEN on every channel, on ``conn`` (a psycopg connection of its own, autocommit): in
    force when this returns."""
    conn.execute(
        sql.SQL("; ").join(sql.SQL("LISTEN {}").format(sql.Identifier(c)) for c in channels)
    )


def unlisten_all(conn: Any) -> None:
    conn.execute("UNLISTEN *")
