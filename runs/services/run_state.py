"""A run's denormalised state (status, current result) recomputed from its evaluations."""

from __future__ import annotations

from typing import Any

from django.db import connections, router

from ..hooks import result_adjusters
from ..models import AgentRun, Evaluation, Kind, Status


def run_refresh(run_id: Any) -> None:
    """Recompute the run's denormalised status and current result from its evaluations."""
    rubric_id = AgentRun.objects.filter(pk=run_id).values_list("rubric_id", flat=True).get()
    runs_refresh({run_id: rubric_id})


def runs_refresh(rubric_of: dict[Any, Any]) -> None:
    """run_refresh for several runs (run id -> the run's own rubric id) in a fixed number of
    statements."""
    by_run: dict[Any, list[dict[str, Any]]] = {run_id: [] for run_id in rubric_of}
    for row in (
        Evaluation.objects.filter(run_id__in=list(rubric_of), calibration=False)
        .order_by("-created_at")
        .values(
            "id",
            "run_id",
            "kind",
            "rubric_id",
            "rubric_version_id",
            "status",
            "is_current",
            "score",
            "passed",
        )
    ):
        by_run[row["run_id"]].append(dict(row))
    fields: dict[Any, dict[str, Any]] = {}
    picked: dict[Any, tuple[Any, Any]] = {}
    for run_id, evaluations in by_run.items():
        values: dict[str, Any] = {"status": _run_status(evaluations)}
        rubric_current = [e for e in evaluations if e["kind"] == Kind.RUBRIC and e["is_current"]]
        preferred = [
            e for e in rubric_current if e["rubric_id"] == rubric_of[run_id]
        ] or rubric_current
        if preferred:
            values.update(
                passed=preferred[0]["passed"],
                score=preferred[0]["score"],
                current_version_id=preferred[0]["rubric_version_id"],
            )
        alignment = [e for e in evaluations if e["kind"] == Kind.ALIGNMENT and e["is_current"]]
        if alignment:
            values["alignment_score"] = alignment[0]["score"]
        fields[run_id] = values
        picked[run_id] = (
            preferred[0]["id"] if preferred else None,
            alignment[0]["id"] if alignment else None,
        )
    # Human review labels adjust passed/score/alignment_score (reviews registers that in its
    # AppConfig.ready()); the evaluations keep the judge's.
    for adjust in result_adjusters():
        for run_id, adjusted in adjust(picked).items():
            fields[run_id].update(adjusted)
    groups: dict[tuple[str, ...], list[AgentRun]] = {}
    for run_id, values in fields.items():
        groups.setdefault(tuple(sorted(values)), []).append(AgentRun(pk=run_id, **values))
    for names, rows in groups.items():
        update_rows(AgentRun, rows, names)


def update_rows(model: Any, rows: list[Any], names: tuple[str, ...]) -> None:
    """Write the named fields of unsaved instances, by primary key: one prepared UPDATE sent
    for all rows at once (executemany). Values go through each field's own database
    preparation, exactly as QuerySet.update would send them, without building a query
    object per row."""
    connection = connections[router.db_for_write(model)]
    fields = [model._meta.get_field(name) for name in names]
    pk = model._meta.pk
    quote = connection.ops.quote_name
    sql = "UPDATE {} SET {} WHERE {} = %s".format(  # noqa: S608 - quoted model identifiers
        quote(model._meta.db_table),
        ", ".join(f"{quote(f.column)} = %s" for f in fields),
        quote(pk.column),
    )
    params = [
        [f.get_db_prep_save(getattr(row, f.attname), connection) for f in fields]
        + [pk.get_db_prep_value(row.pk, connection)]
        for row in rows
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


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
    return Status.FAILED if Status.FAILED in newest.values() else Status.SUCCEEDED
