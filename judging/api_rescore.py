"""Re-scoring: /api/rescore, /api/runs/{id}/rescore and /api/batches.

A re-score creates a batch (202) after estimating it; ``dry_run`` answers 200 with the estimate
alone and queues nothing. ``Idempotency-Key`` makes a retried request return the same batch.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from django.http import Http404, HttpRequest
from ninja import Field, Header, Query, Router, Schema, Status
from pydantic import ConfigDict

from evalsite.schemas import INT_MAX, with_errors
from rubrics.selectors import rubric_get
from runs.models import StatusChoice
from runs.selectors import batch_get, batch_progress, batches_list, batches_progress, run_get
from teams.api import caller, editor

from .services.rescore import (
    RescoreScope,
    RescoreValidationError,
    batch_cancel,
    batch_create,
    batch_estimate,
    run_rescore,
    run_rescore_estimate,
)

router = Router(tags=["re-scoring"])

BatchStatusChoice = Literal[
    "queued", "running", "completed", "completed_with_failures", "cancelled"
]
IdempotencyKey = Header(
    None,
    alias="Idempotency-Key",
    max_length=200,
    description="Retrying with the same key returns the same batch instead of a new one",
)


# --- Schemas ------------------------------------------------------------------------------------


class _RescoreOptions(Schema):
    model_config = ConfigDict(extra="forbid")
    judge: str | None = Field(
        None, max_length=200, description="Another judge model (litellm model string)"
    )
    target_version: int | None = Field(
        None,
        ge=1,
        le=INT_MAX,
        description="Version number to score against (default: current)",
    )
    force: bool = Field(False, description="Judge every criterion again, reusing no verdict")
    dry_run: bool = Field(False, description="Answer 200 with the estimate; queue nothing")
    webhook_url: str | None = Field(
        None, max_length=200, description="Called once (POST, signed) when the batch ends"
    )


class RescoreIn(_RescoreOptions):
    rubric: str = Field(min_length=1, max_length=200, description="Rubric id or slug")
    runs: list[UUID] | None = Field(
        None, max_length=20_000, description="Run ids; without them the filters pick the runs"
    )
    version: int | None = Field(
        None, ge=1, le=INT_MAX, description="Runs whose current result is on this version"
    )
    failed_only: bool = Field(False, description="Runs whose current result did not pass")
    criterion_id: str | None = Field(
        None, max_length=32, description="Runs whose current verdict on this criterion (c3) fails"
    )
    since: datetime | None = Field(None, description="Runs created at or after")
    until: datetime | None = Field(None, description="Runs created before")
    status: StatusChoice | None = Field(
        None, description="Runs with this status, e.g. not_sampled (left out by sampling)"
    )


class RunRescoreIn(_RescoreOptions):
    rubric: str | None = Field(None, max_length=200, description="Default: the run's rubric")


class EstimateOut(Schema):
    runs: int
    judge_calls: int
    criterion_judgements: int = Field(description="Criteria sent to the judge after reuse")
    criteria_reused: int
    prompt_tokens: int
    completion_tokens: int
    tokens: int = Field(description="Approximate: prompt characters / 4 plus an answer allowance")
    cost: float | None = Field(description="USD from litellm's price map; null when unknown")
    model: str
    skipped_pending: int = Field(
        description="Runs left out: an evaluation for this version and judge is already pending"
    )


class DryRunOut(Schema):
    estimate: EstimateOut


class CountsOut(Schema):
    queued: int
    running: int
    succeeded: int
    failed: int
    cancelled: int


class ActualOut(Schema):
    judge_calls: int
    criterion_judgements: int
    criteria_reused: int
    prompt_tokens: int
    completion_tokens: int
    tokens: int
    cost: float | None = Field(
        description="USD of the judged evaluations whose cost is known; null when none is"
    )
    unpriced: int = Field(
        0, description="Judged evaluations of unknown cost (not in `cost`: it is a lower bound)"
    )


class FailureOut(Schema):
    evaluation_id: UUID
    run_id: UUID
    error: str


class BatchOut(Schema):
    id: UUID
    status: BatchStatusChoice
    rubric_id: UUID
    rubric_version: int
    judge_model: str
    force: bool
    scope: dict[str, Any]
    total: int
    counts: CountsOut
    done: int = Field(description="Evaluations that ended (succeeded, failed or cancelled)")
    progress: float = Field(description="done / total, 0..1")
    estimate: EstimateOut
    actual: ActualOut
    failures: list[FailureOut] = Field(description="Newest failed evaluations (at most 50)")
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None = Field(description="Set once no evaluation is pending")
    cancelled_at: datetime | None
    webhook_url: str
    webhook_delivered_at: datetime | None
    webhook_error: str


class BatchPageOut(Schema):
    items: list[BatchOut]
    next_cursor: str | None


# --- Operations ---------------------------------------------------------------------------------


def _rubric_from_ref(team: Any, ref: str | None) -> Any:
    found = rubric_get(team=team, ref=ref, with_criteria=False) if ref else None
    if ref and found is None:
        raise RescoreValidationError({"rubric": "no rubric of this team has this id or slug"})
    return found


def _scope(body: RescoreIn) -> RescoreScope:
    return RescoreScope(
        runs=tuple(body.runs) if body.runs is not None else None,
        version=body.version,
        failed_only=body.failed_only,
        criterion=body.criterion_id,
        since=body.since,
        until=body.until,
        status=body.status,
    )


@router.post(
    "/rescore", response=with_errors({200: DryRunOut, 202: BatchOut}, 409), operation_id="rescore"
)
def rescore(request: HttpRequest, body: RescoreIn, idempotency_key: str | None = IdempotencyKey):
    """Re-score runs of a rubric: the listed `runs`, else the runs matching the filters.
    202 with the batch (estimate included); 200 with the estimate alone for `dry_run`."""
    who = editor(request)
    rubric = _rubric_from_ref(who.team, body.rubric)
    options: dict[str, Any] = {
        "target_version": body.target_version,
        "judge": body.judge,
        "force": body.force,
    }
    if body.dry_run:
        estimate = batch_estimate(team=who.team, rubric=rubric, scope=_scope(body), **options)
        return Status(200, {"estimate": estimate.as_json()})
    batch, _ = batch_create(
        team=who.team, rubric=rubric, scope=_scope(body), idempotency_key=idempotency_key,
        webhook_url=body.webhook_url, user=who.user, **options,
    )  # fmt: skip
    return Status(202, batch_progress(batch=batch).as_json())


@router.post(
    "/runs/{run_id}/rescore",
    response=with_errors({200: DryRunOut, 202: BatchOut}, 404, 409),
    operation_id="rescore_run",
)
def rescore_run(
    request: HttpRequest,
    run_id: UUID,
    body: RunRescoreIn,
    idempotency_key: str | None = IdempotencyKey,
):
    """Re-score one run (against its rubric unless `rubric` names another) as a batch of one."""
    who = editor(request)
    run = run_get(team=who.team, run_id=run_id)
    if run is None:
        raise Http404("No such run in this team")
    options: dict[str, Any] = {
        "rubric": _rubric_from_ref(who.team, body.rubric),
        "target_version": body.target_version,
        "judge": body.judge,
        "force": body.force,
    }
    if body.dry_run:
        return Status(200, {"estimate": run_rescore_estimate(run=run, **options).as_json()})
    batch, _ = run_rescore(
        run=run, idempotency_key=idempotency_key, webhook_url=body.webhook_url,
        user=who.user, **options,
    )  # fmt: skip
    return Status(202, batch_progress(batch=batch).as_json())


@router.get("/batches", response=with_errors({200: BatchPageOut}), operation_id="list_batches")
def list_batches(
    request: HttpRequest,
    status: BatchStatusChoice | None = None,
    rubric: str | None = Query(None, max_length=200, description="Rubric id or slug"),
    cursor: str | None = Query(None, max_length=500, description="next_cursor of the last page"),
    limit: int = Query(
        50, ge=1, le=INT_MAX, description="Page size, capped at EVALSITE_PAGE_SIZE_MAX"
    ),
):
    """The team's re-score batches, newest first (failures are listed on a single batch)."""
    page = batches_list(
        team=caller(request).team, status=status, rubric=rubric, cursor=cursor, limit=limit
    )
    progress = batches_progress(batches=page.items)
    return {
        "items": [progress[b.pk].as_json() for b in page.items],
        "next_cursor": page.next_cursor,
    }


@router.get(
    "/batches/{batch_id}", response=with_errors({200: BatchOut}, 404), operation_id="get_batch"
)
def get_batch(request: HttpRequest, batch_id: UUID):
    """A batch: counts by status, progress, estimate vs actual usage, failures with messages."""
    batch = batch_get(team=caller(request).team, batch_id=batch_id)
    if batch is None:
        raise Http404("No such batch in this team")
    return batch_progress(batch=batch).as_json()


@router.post(
    "/batches/{batch_id}/cancel",
    response=with_errors({200: BatchOut}, 404),
    operation_id="cancel_batch",
)
def cancel_batch(request: HttpRequest, batch_id: UUID):
    """Cancel a batch: queued work is cancelled, running work finishes, then the batch ends
    `cancelled`. Cancelling an ended batch changes nothing."""
    batch = batch_get(team=editor(request).team, batch_id=batch_id)
    if batch is None:
        raise Http404("No such batch in this team")
    return batch_progress(batch=batch_cancel(batch=batch)).as_json()
