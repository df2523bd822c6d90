"""Runs judged per rubric version (runs.models.rollups.VersionRollup): the rubric editor's
history. A run counts once per version however often it is judged on it (re-scores,
calibration repeats), so the increment is taken only by the first succeeded evaluation of a
(version, run) pair.

Which one is first is decided from the run's own evaluations, read by the results write under
the run's row lock (judging.services.results): every write that makes an evaluation succeed holds
that lock and reads the run's evaluations after taking it, so two writes judging one run are
serialised and the second sees the first's succeeded evaluation. No marker row is needed and
re-scores on a version already counted send no statement at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from django.db.models import Count

from evalsite import rawsql

from ..models import Evaluation, Status
from ..models.rollups import VersionRollup

Judged = tuple[Any, Any, Any]  # (team id, rubric version id, run id)
COLUMNS = ("team", "version_ref", "runs_judged")


def rollup_versions_judged(*, judged: Iterable[Judged], before: Iterable[dict[str, Any]]) -> None:
    """Count the runs that ``judged`` (evaluations this write made succeed) judges on a version
    for the first time. ``before``: the runs' evaluations (state rows, calibration ones
    included) as read under the runs' row locks, before this write changed them."""
    seen = {
        (row["rubric_version_id"], row["run_id"])
        for row in before
        if row["status"] == Status.SUCCEEDED and row["rubric_version_id"] is not None
    }
    deltas: Counter[Any] = Counter()
    owner: dict[Any, Any] = {}
    for team_id, version_id, run_id in judged:
        if version_id is None or (version_id, run_id) in seen:
            continue
        seen.add((version_id, run_id))
        deltas[version_id] += 1
        owner[version_id] = team_id
    _upsert([(owner[v], v, n) for v, n in sorted(deltas.items(), key=lambda kv: str(kv[0]))])


def _upsert(rows: list[tuple[Any, Any, int]]) -> None:
    """One statement (an executemany) for every version of the write, in version order so
    concurrent writers lock shared rows in one order."""
    rawsql.upsert(
        VersionRollup,
        COLUMNS,
        [list(row) for row in rows],
        unique=("version_ref",),
        add=("runs_judged",),
    )


def recount_versions(scope: dict[str, Any]) -> list[VersionRollup]:
    """The rollup rows recounted from the evaluations stored now (rollups_rebuild)."""
    rows = (
        Evaluation.objects.filter(**scope, status=Status.SUCCEEDED, rubric_version__isnull=False)
        .values("team_id", "rubric_version_id")
        .annotate(n=Count("run_id", distinct=True))
        .order_by()
    )
    return [
        VersionRollup(team_id=r["team_id"], version_ref=r["rubric_version_id"], runs_judged=r["n"])
        for r in rows
    ]
