"""A run's denormalised state (status, current result) recomputed from its evaluations."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from evalsite import rawsql
from judge_engine.rules import RESULT_FIELDS, result_whole

from ..hooks import result_adjusters
from ..models import AgentRun, Evaluation, Kind, Status
from .rollups import rollup_runs_changed


def run_refresh(run_id: Any) -> None:
    """Recompute the run's denormalised status and current result from its evaluations."""
    rubric_id = AgentRun.objects.filter(pk=run_id).values_list("rubric_id", flat=True).get()
    runs_refresh({run_id: rubric_id})


# What a run's state is computed from, per evaluation (newest first).
STATE_FIELDS = (
    "id", "run_id", "kind", "rubric_id", "rubric_version_id", "status", "is_current", "score",
    "passed", "created_at", "calibration",
)  # fmt: skip


def state_rows(run_ids: list[Any]) -> list[dict[str, Any]]:
    """The runs' evaluations as runs_refresh reads them. Calibration judgements are included
    (the versions a run was judged on count them, runs.services.rollups_versions); runs_refresh
    leaves them out of the run's state. Hand-written SQL: every write of a result reads it."""
    rows = rawsql.select_in(Evaluation, STATE_FIELDS, "run_id", run_ids, order_by="-created_at")
    return [dict(zip(STATE_FIELDS, row, strict=True)) for row in rows]


def runs_refresh(
    rubric_of: dict[Any, Any],
    rows: list[dict[str, Any]] | None = None,
    before: dict[Any, tuple] | None = None,
) -> None:
    """run_refresh for several runs (run id -> the run's own rubric id) in a fixed number of
    statements. ``rows``: the runs' state_rows as they are now, when the caller has them (it
    read them under the runs' row locks and applied its own writes). ``before``: run id ->
    (team id, rubric id, created at, passed, current version id) read under those locks, when the caller has it;
    the rollups move each run whose result changes."""
    if before is None:
        before = _before(list(rubric_of))
    by_run: dict[Any, list[dict[str, Any]]] = {run_id: [] for run_id in rubric_of}
    for row in state_rows(list(rubric_of)) if rows is None else rows:
        if not row["calibration"]:  # never the run's result nor counted in its status
            by_run[row["run_id"]].append(row)
    fields: dict[Any, dict[str, Any]] = {}
    picked: dict[Any, tuple[Any, Any]] = {}
    for run_id, evaluations in by_run.items():
        fields[run_id], picked[run_id] = _run_values(evaluations, rubric_of[run_id])
    # Human review labels adjust passed/score/alignment_score (reviews registers that in its
    # AppConfig.ready()); the evaluations keep the judge's.
    unjudged = _unjudged_status([pk for pk, values in fields.items() if not values["status"]])
    for pk, status in unjudged.items():
        fields[pk]["status"] = status
    for adjust in result_adjusters():
        for run_id, adjusted in adjust(picked).items():
            fields[run_id].update(adjusted)
    for values in fields.values():
        # Stored as every surface shows it (the rule: judge_engine.rules.run_result), so counts,
        # pass rates and alerts read no result from a run that is not succeeded.
        if not result_whole(values["status"]):
            values.update(dict.fromkeys(RESULT_FIELDS))
    after = {
        pk: (values["passed"], values.get("current_version_id", before[pk][4]))
        for pk, values in fields.items()
        if "passed" in values
    }
    rollup_runs_changed(before=before, after=after)
    _write_runs(fields)


def _run_values(
    evaluations: list[dict[str, Any]], own_rubric: Any
) -> tuple[dict[str, Any], tuple[Any, Any]]:
    """A run's status and the judge's result from its current evaluations (the run's own
    rubric first), and the ids of the rubric and alignment evaluations that result is from."""
    values: dict[str, Any] = {"status": _run_status(evaluations)}
    rubric_current = [e for e in evaluations if e["kind"] == Kind.RUBRIC and e["is_current"]]
    preferred = [e for e in rubric_current if e["rubric_id"] == own_rubric] or rubric_current
    if preferred:
        values.update(
            passed=preferred[0]["passed"],
            score=preferred[0]["score"],
            current_version_id=preferred[0]["rubric_version_id"],
        )
    alignment = [e for e in evaluations if e["kind"] == Kind.ALIGNMENT and e["is_current"]]
    if alignment:
        values["alignment_score"] = alignment[0]["score"]
    picked = (preferred[0]["id"] if preferred else None, alignment[0]["id"] if alignment else None)
    return values, picked


def _write_runs(fields: dict[Any, dict[str, Any]]) -> None:
    """One UPDATE per set of fields written (run id -> field -> value)."""
    groups: dict[tuple[str, ...], list[tuple[Any, list[Any]]]] = {}
    for run_id, values in fields.items():
        names = tuple(sorted(values))
        groups.setdefault(names, []).append((run_id, [values[n] for n in names]))
    for names, group in groups.items():
        rawsql.update_values(AgentRun, names, group)


def _before(run_ids: list[Any]) -> dict[Any, tuple]:
    """The runs' results before the refresh, their rows locked (most callers hold the locks
    already) so two refreshes of one run move its rollup once each, in turn."""
    runs = AgentRun.objects.filter(pk__in=run_ids).order_by("pk")
    if transaction.get_connection().in_atomic_block:  # every caller's case; FOR UPDATE needs it
        runs = runs.select_for_update(no_key=True)
    rows = runs.values_list(
        "pk", "team_id", "rubric_id", "created_at", "passed", "current_version_id"
    )
    return {pk: tuple(rest) for pk, *rest in rows}


def _run_status(evaluations: list[dict[str, Any]]) -> str:
    statuses = {e["status"] for e in evaluations}
    if Status.RUNNING in statuses:
        return Status.RUNNING
    if Status.QUEUED in statuses:
        return Status.QUEUED
    if Status.OVER_BUDGET in statuses:
        return Status.OVER_BUDGET
    newest: dict[tuple, str] = {}
    for e in evaluations:  # newest first
        if e["status"] != Status.CANCELLED:
            newest.setdefault((e["kind"], e["rubric_id"]), e["status"])
    if not newest:
        return ""  # nothing judged: the run keeps what ingest decided (see _unjudged_status)
    if Status.FAILED in newest.values():
        return Status.FAILED
    if set(newest.values()) == {Status.NOTHING_TO_JUDGE}:
        return Status.NOTHING_TO_JUDGE
    return Status.SUCCEEDED


def _unjudged_status(run_ids: list[Any]) -> dict[Any, str]:
    """Runs with no evaluation left (a re-score cancelled before it ran): not sampled when
    their rubric's sampling left them out at ingest, else nothing to judge."""
    if not run_ids:
        return {}
    rows = AgentRun.objects.filter(pk__in=run_ids).values_list("pk", "sampling")
    return {
        pk: Status.NOT_SAMPLED
        if (sampling or {}).get("sampled") is False
        else Status.NOTHING_TO_JUDGE
        for pk, sampling in rows
    }
