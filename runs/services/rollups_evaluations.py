"""The evaluations' rollup (runs.models.rollups.EvaluationDayRollup): an evaluation is counted
once, in the transaction that ends it (results, the sweeper's lease expiry, a re-score
batch's cancel), and moved to the band-less row when a newer one demotes it."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime
from typing import Any

from django.db.models import Case, Count, F, Q, Sum, Value, When
from django.db.models.functions import TruncDate

from evalsite import rawsql

from ..models import FINAL_STATUSES, Evaluation, Kind
from ..models.rollups import EvaluationDayRollup

EvalKey = tuple[Any, date, str, str, str]  # (team id, day, kind, status, band)
FIELDS = ("team_id", "created_at", "kind", "status", "is_current", "band", "prompt_tokens",
          "completion_tokens", "cost", "judge_calls")  # fmt: skip
COLUMNS = ("team", "day", "kind", "status", "band", "evaluations", "tokens", "cost", "calls")


def rollup_evaluations_ended(*, ids: Iterable[Any], finished_at: datetime | None = None) -> None:
    """Count these evaluations, which the caller's transaction just ended (``finished_at``:
    the end time it wrote, to leave out any another writer ended instead)."""
    rows = Evaluation.objects.filter(id__in=list(ids), status__in=FINAL_STATUSES)
    if finished_at is not None:
        rows = rows.filter(finished_at=finished_at)
    rollup_evaluations_counted(rows=list(rows.values(*FIELDS)))


def rollup_evaluations_counted(*, rows: list[dict[str, Any]]) -> None:
    """Count ended evaluations the caller has in hand (``rows``: the FIELDS as written)."""
    deltas: dict[EvalKey, list[Any]] = {}
    for row in rows:
        _add(deltas, _key(row, _band(row)), row, 1)
    _upsert(deltas)


def rollup_evaluations_demoted(*, rows: list[dict[str, Any]]) -> None:
    """Move current alignment results that stop being current (``rows``: demoted_rows, read
    before the demotion) from their band's row to the band-less one."""
    deltas: dict[EvalKey, list[Any]] = {}
    for row in rows:
        _add(deltas, _key(row, row["band"]), row, -1)
        _add(deltas, _key(row, ""), row, 1)
    _upsert(deltas)


def demoted_rows(*, ids: Iterable[Any]) -> list[dict[str, Any]]:
    """The current alignment evaluations among ``ids`` that carry a band."""
    return list(
        Evaluation.objects.filter(id__in=list(ids), kind=Kind.ALIGNMENT, is_current=True)
        .exclude(band="")
        .values(*FIELDS)
    )


def _band(row: dict[str, Any]) -> str:
    return row["band"] if row["kind"] == Kind.ALIGNMENT and row["is_current"] else ""


def _key(row: dict[str, Any], band: str) -> EvalKey:
    day = row["created_at"].astimezone(UTC).date()
    return (row["team_id"], day, row["kind"], row["status"], band or "")


def _add(deltas: dict[EvalKey, list[Any]], key: EvalKey, row: dict[str, Any], sign: int) -> None:
    total = deltas.setdefault(key, [0, 0, None, 0])
    total[0] += sign
    total[1] += sign * ((row["prompt_tokens"] or 0) + (row["completion_tokens"] or 0))
    if row["cost"] is not None:
        total[2] = (total[2] or 0.0) + sign * row["cost"]
    total[3] += sign * (row["judge_calls"] or 0)


def _upsert(deltas: dict[EvalKey, list[Any]]) -> None:
    # Sorted keys: concurrent writers lock shared rows in one order (no deadlock).
    items = sorted(deltas.items(), key=lambda kv: (str(kv[0][0]), *kv[0][1:]))
    rawsql.upsert(
        EvaluationDayRollup,
        COLUMNS,
        [[*k, *v] for k, v in items],
        unique=("team", "day", "kind", "status", "band"),
        add=("evaluations", "tokens", "calls"),
        add_nullable=("cost",),
    )


def recount_evaluations(scope: dict[str, Any]) -> list[EvaluationDayRollup]:
    """The rollup rows recounted from the evaluations stored now (rollups_rebuild)."""
    current_band = Case(
        When(kind=Kind.ALIGNMENT, is_current=True, then=F("band")), default=Value("")
    )
    rows = (
        Evaluation.objects.filter(**scope, status__in=FINAL_STATUSES)
        .annotate(day=TruncDate("created_at", tzinfo=UTC), band_now=current_band)
        .values("team_id", "day", "kind", "status", "band_now")
        .annotate(
            n=Count("created_at"),
            tokens=Sum(F("prompt_tokens") + F("completion_tokens")),
            total_cost=Sum("cost"),
            calls=Sum("judge_calls"),
            priced=Count("created_at", filter=Q(cost__isnull=False)),
        )
        .order_by()
    )
    return [
        EvaluationDayRollup(
            team_id=r["team_id"], day=r["day"], kind=r["kind"], status=r["status"],
            band=r["band_now"] or "", evaluations=r["n"], tokens=r["tokens"] or 0,
            cost=r["total_cost"] if r["priced"] else None, calls=r["calls"] or 0,
        )
        for r in rows
    ]  # fmt: skip
