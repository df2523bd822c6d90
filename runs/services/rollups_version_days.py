"""Pass rates per rubric version and day (runs.models.rollups.VersionDayRollup): the trends'
one series per version. Kept beside RunDayRollup by the same writes (runs.services.rollups:
a run stored, a run's result moving), so in the same transaction and statement order.

A run counts on the version its current result is from (``AgentRun.current_version``) and only
while it has a result (it succeeded: runs_refresh clears ``passed`` otherwise). A re-score on a
new version moves the run from the old version's row to the new one's; its day stays the UTC
day the run was created on, as in RunDayRollup.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime
from typing import Any

from django.db.models import Count, Q
from django.db.models.functions import TruncDate

from evalsite import rawsql

from ..models import AgentRun
from ..models.rollups import NO_RUBRIC, VersionDayRollup

# (team id, rubric id or NO_RUBRIC, day, version id)
VersionDayKey = tuple[Any, Any, date, Any]
COLUMNS = ("team", "rubric_ref", "day", "version_ref", "judged", "passed")


def _key(team_id: Any, rubric_id: Any, created_at: datetime, version_id: Any) -> VersionDayKey:
    return (team_id, rubric_id or NO_RUBRIC, created_at.astimezone(UTC).date(), version_id)


def version_day_deltas(
    changes: Iterable[tuple[Any, Any, datetime, tuple[Any, Any], tuple[Any, Any]]],
) -> dict[VersionDayKey, list[int]]:
    """[judged, passed] deltas per key for runs whose (passed, version) went from ``was`` to
    ``now``: each change is (team id, rubric id, created at, was, now). A run with no result
    or no version counts nowhere."""
    deltas: dict[VersionDayKey, list[int]] = {}
    for team_id, rubric_id, created_at, was, now in changes:
        if was == now:
            continue
        for (passed, version_id), sign in ((was, -1), (now, 1)):
            if passed is None or version_id is None:
                continue
            row = deltas.setdefault(_key(team_id, rubric_id, created_at, version_id), [0, 0])
            row[0] += sign
            row[1] += sign * bool(passed)
    return {k: v for k, v in deltas.items() if v[0] or v[1]}


def rollup_version_days(deltas: dict[VersionDayKey, list[int]]) -> None:
    """One upsert (an executemany) for every key, sorted so concurrent writers lock shared rows
    in one order."""
    items = sorted(deltas.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]), kv[0][2], str(kv[0][3])))  # fmt: skip
    rawsql.upsert(
        VersionDayRollup,
        COLUMNS,
        [[*k, *v] for k, v in items],
        unique=("team", "rubric_ref", "day", "version_ref"),
        add=("judged", "passed"),
    )


def recount_version_days(scope: dict[str, Any]) -> list[VersionDayRollup]:
    """The rollup rows recounted from the runs stored now (rollups_rebuild)."""
    rows = (
        AgentRun.objects.filter(**scope, passed__isnull=False, current_version__isnull=False)
        .annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values("team_id", "rubric_id", "current_version_id", "day")
        .annotate(judged=Count("created_at"), passed=Count("created_at", filter=Q(passed=True)))
        .order_by()
    )
    return [
        VersionDayRollup(
            team_id=r["team_id"], rubric_ref=r["rubric_id"] or NO_RUBRIC,
            version_ref=r["current_version_id"], day=r["day"],
            judged=r["judged"], passed=r["passed"],
        )
        for r in rows
    ]  # fmt: skip
