"""The judge budget check's statements on the workers' hot path, as plain SQL on Django's
connection (the ORM compiling each one cost more CPU than the database running it, see
docs/benchmarks.md "Judge budgets"). Values go through the fields' own database preparation,
as QuerySet.update would send them (the same approach as run_state.update_rows)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from django.db import connections, router

from ..models import Evaluation
from ..models.budget import BudgetCounter, BudgetHold, BudgetPeriod


@dataclass(frozen=True)
class Held:
    """A reservation (a BudgetHold row) as the worker that made it knows it."""

    pk: uuid.UUID
    team_id: Any
    day: date
    month: date
    tokens: int
    usd: float


def _connection() -> Any:
    return connections[router.db_for_write(BudgetCounter)]


def _q(name: str) -> str:
    return _connection().ops.quote_name(name)


def _prep(model: Any, name: str, value: Any) -> Any:
    return model._meta.get_field(name).get_db_prep_save(value, _connection())


def _run(sql: str, params: list[Any]) -> int:
    with _connection().cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def _periods(team_id: Any, day: date, month: date, limits: dict[str, tuple]) -> tuple[str, list]:
    """WHERE clause of the team's day and month counters, each only while below ``limits``
    (period -> (max tokens, max usd), None for no limit)."""
    clauses, params = [], [_prep(BudgetCounter, "team", team_id)]
    for period, starts_on in ((BudgetPeriod.DAY, day), (BudgetPeriod.MONTH, month)):
        clause = f"({_q('period')} = %s AND {_q('starts_on')} = %s"
        params += [str(period), _prep(BudgetCounter, "starts_on", starts_on)]
        max_tokens, max_usd = limits.get(period, (None, None))
        if max_tokens is not None:
            clause += f" AND {_q('tokens')} + {_q('reserved_tokens')} < %s"
            params.append(max_tokens)
        if max_usd is not None:
            clause += f" AND {_q('usd')} + {_q('reserved_usd')} < %s"
            params.append(max_usd)
        clauses.append(clause + ")")
    return f"{_q('team_id')} = %s AND ({' OR '.join(clauses)})", params


def counters_reserve(
    team_id: Any, day: date, month: date, limits: dict[str, tuple], tokens: int, usd: float
) -> int:
    """Add the reservation to the counters that are below their limits: how many were (2 is
    an admission)."""
    where, params = _periods(team_id, day, month, limits)
    sql = (
        f"UPDATE {_q(BudgetCounter._meta.db_table)} SET "  # noqa: S608 - quoted identifiers
        f"{_q('reserved_tokens')} = {_q('reserved_tokens')} + %s, "
        f"{_q('reserved_usd')} = {_q('reserved_usd')} + %s WHERE {where}"
    )
    return _run(sql, [tokens, usd, *params])


def hold_insert(held: Held, expires_at: datetime) -> None:
    names = ["id", "team", "day", "month", "tokens", "usd", "expires_at"]
    values = [held.pk, held.team_id, held.day, held.month, held.tokens, held.usd, expires_at]
    columns = ", ".join(_q(n + "_id" if n == "team" else n) for n in names)
    sql = (
        f"INSERT INTO {_q(BudgetHold._meta.db_table)} ({columns}) "  # noqa: S608
        f"VALUES ({', '.join(['%s'] * len(names))})"
    )
    _run(sql, [_prep(BudgetHold, n, v) for n, v in zip(names, values, strict=True)])


def hold_release(held: Any, tokens: int, usd: float) -> bool:
    """Delete the hold; take its reservation off its counters if it was still there, and add
    ``tokens`` and ``usd`` as used. Call inside a transaction. Whether the hold was there."""
    deleted = _run(
        f"DELETE FROM {_q(BudgetHold._meta.db_table)} WHERE {_q('id')} = %s",  # noqa: S608
        [_prep(BudgetHold, "id", held.pk)],
    )
    if not deleted and not (tokens or usd):
        return False
    where, params = _periods(held.team_id, held.day, held.month, {})
    back_tokens, back_usd = (held.tokens, held.usd) if deleted else (0, 0.0)
    sql = (
        f"UPDATE {_q(BudgetCounter._meta.db_table)} SET "  # noqa: S608
        f"{_q('tokens')} = {_q('tokens')} + %s, {_q('usd')} = {_q('usd')} + %s, "
        f"{_q('reserved_tokens')} = {_q('reserved_tokens')} - %s, "
        f"{_q('reserved_usd')} = {_q('reserved_usd')} - %s WHERE {where}"
    )
    _run(sql, [tokens, usd, back_tokens, back_usd, *params])
    return bool(deleted)


def evaluations_usage(ids: list[uuid.UUID]) -> list[tuple[int, int, float | None]]:
    """(prompt tokens, completion tokens, cost) each of these evaluations recorded."""
    if not ids:
        return []
    sql = (
        f"SELECT {_q('prompt_tokens')}, {_q('completion_tokens')}, {_q('cost')} "  # noqa: S608
        f"FROM {_q(Evaluation._meta.db_table)} WHERE {_q('id')} IN "
        f"({', '.join(['%s'] * len(ids))})"
    )
    with _connection().cursor() as cursor:
        cursor.execute(sql, [_prep(Evaluation, "id", i) for i in ids])
        return list(cursor.fetchall())
