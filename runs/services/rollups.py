"""Keeping the rollups (runs.models.rollups): increments written in the same transaction as the
rows they count, and the rebuild from raw rows (manage.py rollups_rebuild).

Every increment is one ``INSERT ... ON CONFLICT DO UPDATE SET n = n + excluded.n`` statement
(PostgreSQL and SQLite alike) sent for all keys at once, keys sorted so that two transactions
touching the same days lock their rows in the same order.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime
from typing import Any

from django.db import transaction
from django.db.models import Count, Max, Q
from django.db.models.functions import TruncDate

from evalsite import rawsql
from teams.models import Team

from ..models import AgentRun, CriterionVerdict
from ..models.rollups import (
    NO_RUBRIC,
    CriterionDayRollup,
    EvaluationDayRollup,
    RunDayRollup,
    VersionDayRollup,
    VersionRollup,
)
from .rollups_evaluations import recount_evaluations
from .rollups_version_days import recount_version_days, rollup_version_days, version_day_deltas
from .rollups_versions import recount_versions

RunKey = tuple[Any, Any, date]  # (team id, rubric id or NO_RUBRIC, day)
CriterionKey = tuple[Any, Any, Any, Any, date]  # (team, rubric, version, criterion, day)


def utc_day(moment: datetime) -> date:
    return moment.astimezone(UTC).date()


def run_key(team_id: Any, rubric_id: Any, created_at: datetime) -> RunKey:
    return (team_id, rubric_id or NO_RUBRIC, utc_day(created_at))


def rollup_runs_added(*, runs: list[AgentRun]) -> None:
    """Count newly stored runs (with whatever result they already have)."""
    deltas: dict[RunKey, list[Any]] = {}
    for run in runs:
        row = deltas.setdefault(
            run_key(run.team_id, run.rubric_id, run.created_at), [0, 0, 0, None]
        )
        row[0] += 1
        row[1] += run.passed is not None
        row[2] += bool(run.passed)
        row[3] = max(filter(None, (row[3], run.created_at)))
    _upsert_runs(deltas)
    no_result = (None, None)
    rollup_version_days(
        version_day_deltas(
            (r.team_id, r.rubric_id, r.created_at, no_result, (r.passed, r.current_version_id))
            for r in runs
        )
    )


def rollup_runs_changed(*, before: dict[Any, tuple], after: dict[Any, tuple[Any, Any]]) -> None:
    """Move runs whose result changed. ``before``: run id -> (team id, rubric id, created at,
    passed, current version id) as the run was; ``after``: run id -> (passed, current version
    id) as it is now. Runs missing from ``after`` did not change. The run days count the
    result; the version days (rollups_version_days) count it on the version it is from."""
    deltas: dict[RunKey, list[Any]] = {}
    rollup_version_days(
        version_day_deltas((*before[pk][:3], before[pk][3:5], now) for pk, now in after.items())
    )
    for run_id, (passed, _) in after.items():
        team_id, rubric_id, created_at, was, _ = before[run_id]
        if passed == was:
            continue
        row = deltas.setdefault(run_key(team_id, rubric_id, created_at), [0, 0, 0, None])
        row[1] += (passed is not None) - (was is not None)
        row[2] += bool(passed) - bool(was)
    _upsert_runs({k: v for k, v in deltas.items() if v[1] or v[2]})


def rollup_verdicts_changed(
    *, added: list[tuple[CriterionVerdict, Any]], removed: list[dict[str, Any]]
) -> None:
    """Count verdicts that became current (``added``: (verdict, its evaluation's rubric
    version id)) and take back those that stopped being (``removed``: rows of
    verdict_rollup_rows)."""
    judged: Counter[CriterionKey] = Counter()
    failed: Counter[CriterionKey] = Counter()
    for v, version_id in added:
        if v.criterion_id is not None and v.is_current:
            day = utc_day(v.run_created_at)
            key = (v.team_id, v.rubric_id or NO_RUBRIC, version_id, v.criterion_id, day)
            judged[key] += 1
            failed[key] += not v.satisfied
    for row in removed:
        key = (row["team_id"], row["rubric_id"] or NO_RUBRIC, row["criterion__version_id"], row["criterion_id"], utc_day(row["run_created_at"]))  # fmt: skip
        judged[key] -= 1
        failed[key] -= not row["satisfied"]
    _upsert_criteria({k: (judged[k], failed[k]) for k in judged if judged[k] or failed[k]})


def verdict_rollup_rows(*, evaluation_ids: Any) -> list[dict[str, Any]]:
    """The current verdicts of these evaluations as rollup_verdicts_changed takes them."""
    rows = CriterionVerdict.objects.filter(
        evaluation_id__in=evaluation_ids, is_current=True, criterion__isnull=False
    ).values(
        "team_id", "rubric_id", "criterion__version_id", "criterion_id", "run_created_at",
        "satisfied",
    )  # fmt: skip
    return [dict(row) for row in rows]


def _upsert_runs(deltas: dict[RunKey, list[Any]]) -> None:
    rows = [[*key, *values] for key, values in sorted(deltas.items(), key=_sort_key)]
    rawsql.upsert(
        RunDayRollup,
        RUN_COLUMNS,
        rows,
        unique=("team", "day", "rubric_ref"),
        add=("runs", "judged", "passed"),
        latest=("last_run_at",),
    )


RUN_COLUMNS = ("team", "rubric_ref", "day", "runs", "judged", "passed", "last_run_at")
CRITERION_COLUMNS = ("team", "rubric_ref", "version_ref", "criterion_ref", "day", "judged", "failed")  # fmt: skip


def _upsert_criteria(deltas: dict[CriterionKey, tuple[int, int]]) -> None:
    items = sorted(deltas.items(), key=lambda kv: (str(kv[0][3]), kv[0][4]))
    rawsql.upsert(
        CriterionDayRollup,
        CRITERION_COLUMNS,
        [[*k, *v] for k, v in items],
        unique=("criterion_ref", "day"),
        add=("judged", "failed"),
    )


def _sort_key(item: tuple[RunKey, Any]) -> tuple[str, date, str]:
    (team_id, rubric, day), _ = item
    return (str(team_id), day, str(rubric))


# --- Rebuild -------------------------------------------------------------------------------------


ROLLUPS = (RunDayRollup, CriterionDayRollup, EvaluationDayRollup, VersionRollup, VersionDayRollup)


def rollups_rebuild(*, team: Team | None = None) -> dict[str, int]:
    """Recount the rollups (of ``team``, or of every team) from the raw rows stored now, in one
    transaction that locks the rollup tables against the increments of concurrent writers
    (they wait, then add their own deltas to the recount). Counts of raw rows that retention
    already deleted are lost: the recount holds only what is still stored."""
    with transaction.atomic():
        rawsql.tables_lock(ROLLUPS)
        scope = {"team": team} if team is not None else {}
        for model in ROLLUPS:
            model.objects.filter(**scope).delete()
        runs = RunDayRollup.objects.bulk_create(_recount_runs(scope), batch_size=1000)
        criteria = CriterionDayRollup.objects.bulk_create(_recount_criteria(scope), batch_size=1000)
        evaluations = EvaluationDayRollup.objects.bulk_create(
            recount_evaluations(scope), batch_size=1000
        )
        versions = VersionRollup.objects.bulk_create(recount_versions(scope), batch_size=1000)
        version_days = VersionDayRollup.objects.bulk_create(
            recount_version_days(scope), batch_size=1000
        )
    return {
        "run_days": len(runs),
        "criterion_days": len(criteria),
        "evaluation_days": len(evaluations),
        "versions": len(versions),
        "version_days": len(version_days),
    }


def _recount_runs(scope: dict[str, Any]) -> list[RunDayRollup]:
    rows = (
        AgentRun.objects.filter(**scope)
        .annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values("team_id", "rubric_id", "day")
        .annotate(
            runs=Count("created_at"),
            judged=Count("created_at", filter=Q(passed__isnull=False)),
            passed=Count("created_at", filter=Q(passed=True)),
            last=Max("created_at"),
        )
        .order_by()
    )
    return [
        RunDayRollup(
            team_id=r["team_id"], rubric_ref=r["rubric_id"] or NO_RUBRIC, day=r["day"],
            runs=r["runs"], judged=r["judged"], passed=r["passed"], last_run_at=r["last"],
        )
        for r in rows
    ]  # fmt: skip


def _recount_criteria(scope: dict[str, Any]) -> list[CriterionDayRollup]:
    rows = (
        CriterionVerdict.objects.filter(**scope, is_current=True, criterion__isnull=False)
        .annotate(day=TruncDate("run_created_at", tzinfo=UTC))
        .values("team_id", "rubric_id", "criterion__version_id", "criterion_id", "day")
        .annotate(judged=Count("run_created_at"), failed=Count("run_created_at", filter=Q(satisfied=False)))
        .order_by()
    )  # fmt: skip
    return [
        CriterionDayRollup(
            team_id=r["team_id"], rubric_ref=r["rubric_id"] or NO_RUBRIC,
            version_ref=r["criterion__version_id"], criterion_ref=r["criterion_id"], day=r["day"],
            judged=r["judged"], failed=r["failed"],
        )
        for r in rows
    ]  # fmt: skip
