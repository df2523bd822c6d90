"""Writing an evaluation's outcome: one short transaction, guarded by the lease token."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.db import transaction
from django.utils import timezone

from evalsite import rawsql
from evalsite.notify import evaluations_ended
from judge_engine import JudgeCall, Usage
from judge_engine.redact import tenant_error
from runs.models import (
    AgentRun,
    AlignmentBreakdown,
    CriterionVerdict,
    Evaluation,
    Kind,
    Status,
)
from runs.otel.export import otel_export_enqueue
from runs.services.groupcommit import GroupCommit
from runs.services.rollups import rollup_verdicts_changed, verdict_rollup_rows
from runs.services.rollups_evaluations import (
    demoted_rows,
    rollup_evaluations_counted,
    rollup_evaluations_demoted,
    rollup_evaluations_ended,
)
from runs.services.rollups_versions import rollup_versions_judged
from runs.services.run_state import run_refresh, runs_refresh, state_rows

from .rescore_dispatch import batch_evaluation_finished
from .result_rows import alignment_rows, verdict_rows


def _calls_json(calls: list[Any]) -> list[dict[str, Any]]:
    rows = [c.model_dump(mode="json") if hasattr(c, "model_dump") else dict(c) for c in calls]
    for row in rows:  # a call's error is shown with "what did the judge see"
        if row.get("error"):
            row["error"] = tenant_error(row["error"])
    return rows


def _usage_fields(calls: list[JudgeCall]) -> dict[str, Any]:
    usage = Usage.from_calls(calls)
    return {
        "calls": _calls_json(calls),
        "judge_calls": usage.calls,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "cost": usage.cost if calls else None,
        "latency_ms": usage.latency_ms if calls else None,
    }


def _guarded(evaluation: Evaluation, token: uuid.UUID):
    return Evaluation.objects.filter(id=evaluation.id, status=Status.RUNNING, lease_token=token)


def record_failure(
    evaluation: Evaluation, token: uuid.UUID, message: str, calls: list[Any]
) -> bool:
    """End the evaluation as failed with ``message``, cut to what a team may read (no traceback
    or server path, at most MAX_ERROR_CHARS)."""
    with transaction.atomic():
        AgentRun.objects.select_for_update(no_key=True).filter(pk=evaluation.run_id).first()
        done = _guarded(evaluation, token).update(
            status=Status.FAILED,
            error=tenant_error(message),
            lease_token=None,
            lease_expires_at=None,
            finished_at=timezone.now(),
            **_usage_fields(calls),
        )
        if done:
            rollup_evaluations_ended(ids=[evaluation.id])
            run_refresh(evaluation.run_id)
            _batch_hook(evaluation)
            evaluations_ended([evaluation.id])  # delivered at commit
    return bool(done)


def _batch_hook(evaluation: Evaluation) -> None:
    """A re-score batch's evaluation ended: once this commits, end the batch if it was the
    last one or release the next of its held evaluations (judging.services.rescore)."""
    batch_id = evaluation.batch_id
    if batch_id is None:
        return
    transaction.on_commit(lambda: batch_evaluation_finished(batch_id=batch_id), robust=True)


class Written(NamedTuple):
    """What a write stored for one evaluation, as a score answer reads it (so the caller that
    waited for it need not read it back): the evaluation's written fields with its id, run,
    kind and creation time, its verdicts by position, its alignment rows by perspective."""

    evaluation: Evaluation
    verdicts: list[CriterionVerdict]
    breakdowns: list[AlignmentBreakdown]


@dataclass
class Finished:
    """A judged evaluation waiting to be written: what record_success takes. ``written`` is
    set by the write that stored it (the last one, when a group write is retried alone)."""

    evaluation: Evaluation
    token: uuid.UUID
    result: Any
    criteria_ids: dict[str, Any] = field(default_factory=dict)
    written: Written | None = None


def record_success(
    evaluation: Evaluation, token: uuid.UUID, result: Any, criteria_ids: dict[str, Any]
) -> bool:
    """Store the result; False (and nothing written) when the lease was lost.

    Concurrent callers in one process share transactions (group commit, see ``_commits``):
    the result is durable when this returns, as if it had been written alone."""
    return _commits.submit(Finished(evaluation, token, result, criteria_ids))


def record_many(jobs: list[Finished]) -> list[bool]:
    """record_success for several results (group commit, as one caller)."""
    return _commits.submit_many(jobs)


def record_successes(jobs: list[Finished]) -> list[bool]:
    """Write several judged evaluations in one transaction with a fixed number of
    statements; for each, False (and nothing written for it) when its lease was lost."""
    with transaction.atomic():
        run_ids = sorted({job.evaluation.run_id for job in jobs}, key=str)
        # Lock order: runs, then their evaluations, both by id (as every writer does). NO KEY:
        # writers still exclude each other, but inserts of new evaluations for these runs (a
        # re-score batch's foreign-key checks) neither wait for nor deadlock with this.
        runs = _runs_locked(run_ids)
        held = _held_locked([job.evaluation.id for job in jobs])
        kept = [job for job in jobs if (job.evaluation.id, job.token) in held]
        if kept:
            _write(kept, runs)
            for job in kept:
                _batch_hook(job.evaluation)
            evaluations_ended([job.evaluation.id for job in kept])  # delivered at commit
    kept_ids = {id(job) for job in kept}
    return [id(job) in kept_ids for job in jobs]


# What the write reads of each run, under its row lock.
_RUN_FIELDS = rawsql.model_order(
    AgentRun, ("id", "team_id", "rubric_id", "created_at", "passed", "current_version_id")
)


def _runs_locked(run_ids: list[Any]) -> dict[Any, AgentRun]:
    """The runs, row-locked in id order (FOR NO KEY UPDATE; hand-written: the hot path)."""
    runs = rawsql.rows_in(AgentRun, "id", run_ids, fields=_RUN_FIELDS, order_by="id", lock="no_key")
    return {run.pk: run for run in runs}


def _held_locked(ids: list[Any]) -> set[tuple[Any, Any]]:
    """(id, lease token) of those evaluations still running, row-locked in id order."""
    rows = rawsql.select_in(
        Evaluation,
        ("id", "lease_token"),
        "id",
        ids,
        equal={"status": Status.RUNNING},
        order_by="id",
        lock="update",
    )
    return {(row_id, token) for row_id, token in rows}


def _write(jobs: list[Finished], runs: dict[Any, AgentRun]) -> None:
    now = timezone.now()
    # The runs' evaluations, read once under the runs' row locks: who is current now, and (with
    # this write applied) what the runs' state becomes.
    rows = state_rows(list(runs))
    current = _current_after(jobs, [r for r in rows if r["is_current"]])
    updates: dict[tuple[str, ...], list[Evaluation]] = {}
    verdicts: list[tuple[CriterionVerdict, Any]] = []  # with their rubric version
    breakdowns: list[AlignmentBreakdown] = []
    for job in jobs:
        evaluation = job.evaluation
        fields = _usage_fields(job.result.calls) | _result_fields(evaluation, job.result)
        fields |= {
            "status": _final_status(evaluation, job.result),
            "error": "",
            "lease_token": None,
            "lease_expires_at": None,
            "finished_at": now,
            "is_current": evaluation.id in current.promoted,
        }
        row = Evaluation(
            pk=evaluation.pk, run_id=evaluation.run_id, kind=evaluation.kind,
            created_at=evaluation.created_at, **fields,
        )  # fmt: skip
        updates.setdefault(tuple(sorted(fields)), []).append(row)  # only ``fields`` are written
        if evaluation.kind == Kind.RUBRIC:
            rows_of = verdict_rows(
                job.evaluation,
                job.result,
                job.criteria_ids,
                runs[evaluation.run_id],
                fields["is_current"],
            )
            verdicts += [(v, evaluation.rubric_version_id) for v in rows_of]
            job.written = Written(row, rows_of, [])
        else:
            aligned = alignment_rows(evaluation, job.result)
            breakdowns += aligned
            job.written = Written(row, [], sorted(aligned, key=lambda b: b.perspective))
    removed = verdict_rollup_rows(evaluation_ids=current.demoted) if current.demoted else []
    banded = demoted_rows(ids=current.demoted) if current.demoted else []
    if current.demoted:
        Evaluation.objects.filter(id__in=current.demoted).update(is_current=False)
        CriterionVerdict.objects.filter(evaluation_id__in=current.demoted).update(is_current=False)
    for names, group in updates.items():
        rawsql.update_rows(Evaluation, group, names)
    written = {e.pk: e for group in updates.values() for e in group}
    if verdicts:
        rawsql.insert_rows(CriterionVerdict, [v for v, _ in verdicts])
    rollup_verdicts_changed(added=verdicts, removed=removed)
    rollup_evaluations_demoted(rows=banded)
    rollup_evaluations_counted(rows=[_ended_row(job.evaluation, written) for job in jobs])
    rollup_versions_judged(judged=_judged_on_versions(jobs, written), before=rows)
    if breakdowns:
        rawsql.insert_rows(AlignmentBreakdown, breakdowns)
    otel_export_enqueue(evaluations=_exported(jobs, written))
    _applied(rows, updates, current.demoted)
    before = {
        pk: (r.team_id, r.rubric_id, r.created_at, r.passed, r.current_version_id)
        for pk, r in runs.items()
    }
    runs_refresh({run_id: run.rubric_id for run_id, run in runs.items()}, rows, before)


def _judged_on_versions(jobs: list[Finished], written: dict[Any, Evaluation]) -> list[Any]:
    """(team, rubric version, run) of each evaluation this write made succeed."""
    return [
        (job.evaluation.team_id, job.evaluation.rubric_version_id, job.evaluation.run_id)
        for job in jobs
        if written[job.evaluation.pk].status == Status.SUCCEEDED
    ]


def _exported(jobs: list[Finished], written: dict[Any, Evaluation]) -> list[tuple[Any, Any]]:
    """(team, evaluation) of each verdict a team's tracing is owed (runs/otel/export.py): the
    evaluations this write made succeed, calibration judgements left out."""
    return [
        (job.evaluation.team_id, job.evaluation.pk)
        for job in jobs
        if written[job.evaluation.pk].status == Status.SUCCEEDED and not job.evaluation.calibration
    ]


def _ended_row(evaluation: Evaluation, written: dict[Any, Evaluation]) -> dict[str, Any]:
    """The evaluation as this write left it, as the evaluations' rollup counts it."""
    row = written[evaluation.pk]
    return {
        "team_id": evaluation.team_id, "created_at": evaluation.created_at,
        "kind": evaluation.kind, "status": row.status, "is_current": row.is_current,
        "band": getattr(row, "band", "") or "", "prompt_tokens": row.prompt_tokens,
        "completion_tokens": row.completion_tokens, "cost": row.cost,
        "judge_calls": row.judge_calls,
    }  # fmt: skip


def _applied(
    rows: list[dict[str, Any]], updates: dict[tuple[str, ...], list[Evaluation]], demoted: set[Any]
) -> None:
    """The state rows as the write left them."""
    written = {e.pk: e for group in updates.values() for e in group}
    for row in rows:
        if (evaluation := written.get(row["id"])) is not None:
            row.update(
                status=evaluation.status,
                is_current=evaluation.is_current,
                score=evaluation.score,
                passed=evaluation.passed,
            )
        elif row["id"] in demoted:
            row["is_current"] = False


def _final_status(evaluation: Evaluation, result: Any) -> str:
    """A rubric evaluation that found no criteria anywhere judged nothing: not a success."""
    if evaluation.kind == Kind.RUBRIC and result.criteria_source == "none":
        return Status.NOTHING_TO_JUDGE
    return Status.SUCCEEDED


@dataclass
class _Current:
    promoted: set[Any]
    demoted: set[Any]


def _current_after(jobs: list[Finished], rows: list[dict[str, Any]]) -> _Current:
    """The newest succeeded evaluation per (run, kind, rubric) is current; calibration
    judgements never are (caller holds the runs' row locks, so two finishing evaluations of
    one run cannot both win). ``rows``: the runs' current evaluations."""
    holder: dict[tuple[Any, Any, Any], dict[str, Any]] = {
        (r["run_id"], r["kind"], r["rubric_id"]): dict(r) for r in rows
    }
    promoted: set[Any] = set()
    demoted: set[Any] = set()
    for job in sorted(jobs, key=lambda j: j.evaluation.created_at):
        evaluation = job.evaluation
        if evaluation.calibration:
            continue
        slot = (evaluation.run_id, evaluation.kind, evaluation.rubric_id)
        now_current = holder.get(slot)
        if now_current is not None and now_current["id"] != evaluation.id:
            if now_current["created_at"] > evaluation.created_at:
                continue
            if now_current["id"] in promoted:
                promoted.discard(now_current["id"])
            else:
                demoted.add(now_current["id"])
        promoted.add(evaluation.id)
        holder[slot] = {"id": evaluation.id, "created_at": evaluation.created_at}
    return _Current(promoted, demoted)


def _result_fields(evaluation: Evaluation, result: Any) -> dict[str, Any]:
    shown = {"rendering": {"view": result.view, **result.rendering} if result.rendering else {}}
    return shown | _scores(evaluation, result)


def _scores(evaluation: Evaluation, result: Any) -> dict[str, Any]:
    if evaluation.kind == Kind.RUBRIC:
        reused = sum(1 for v in result.verdicts if v.reused)
        # A run without output sends nothing to the judge: none of its verdicts was judged.
        judged = 0 if result.no_output else len(result.verdicts) - reused
        found = result.criteria_source != "none"  # no criteria anywhere: nothing was judged
        return {
            "score": result.score if found else None,
            "passed": result.passed if found else None,
            "reason": result.reason,
            "overall": result.overall or "",
            "criteria_source": result.criteria_source,
            "criteria_reused": reused,
            "criteria_judged": judged,
        }
    return {
        "score": result.score,
        "passed": None,
        "reason": result.reason,
        "band": result.band,
        "user_score": result.user_score,
        "system_score": result.system_score,
        "system_applicable": result.system_applicable,
        "user_applicable": result.user_applicable,
    }


_commits: GroupCommit[Finished, bool] = GroupCommit(record_successes)
