"""Runs, evaluations and synchronous scoring: /api/runs, /api/evaluations, /api/score."""

from __future__ import annotations

from uuid import UUID

from django.http import Http404, HttpRequest
from django.urls import register_converter
from ninja import Query, Router, Schema, Status

from evalsite.schemas import INT_MAX, ValidationErrorOut, with_errors
from judging.services.score import score_await, score_submit, score_waiting_slot
from reviews.services.retention import run_delete
from teams.api import caller, editor

from .models import FINAL_STATUSES
from .payloads import RunPayload
from .schemas import (
    BulkErrorItem,
    BulkIn,
    BulkOut,
    EvaluationOut,
    RunOut,
    RunPageOut,
    ScoreIn,
    ScoreOut,
    evaluation_out,
    run_list_item_out,
    run_out,
    score_out,
)
from .selectors import (
    RunFilters,
    evaluation_get,
    evaluations_for_run,
    evaluations_latest_for_runs,
    evaluations_scored,
    run_get,
    runs_list,
)
from .services.bulk import runs_ingest_bulk
from .services.ingest import run_store

router = Router(tags=["runs"])


class RunRef:
    """A run id in /runs/{run_id}: any one path segment but the words of sibling routes
    (/runs/bulk here, /runs/export in reviews.api_export), so which route answers never
    depends on the order routers are mounted in (tests/api/test_routes_unique.py). The id is
    validated as a UUID by the operation (a 422 naming run_id, as for any parameter)."""

    WORDS = ("bulk", "export")
    regex = rf"(?!(?:{'|'.join(WORDS)})(?![^/]))[^/]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: object) -> str:
        return str(value)


register_converter(RunRef, "runref")


@router.post("/runs", response=with_errors({200: RunOut, 201: RunOut}, 400, 409, 413))
def create_run(request: HttpRequest, payload: RunPayload):
    """Store one run and queue its evaluations (201). Idempotent on `external_id`: the same
    payload again answers 200 with the stored run; another payload under that id is a 409."""
    run, created, built = run_store(team=editor(request).team, payload=payload)
    if built is not None:  # a new run: its evaluations as just stored (queued, not judged)
        return Status(201, run_out(run, built, unjudged=True))
    return Status(201 if created else 200, run_out(run, evaluations_for_run(run=run)))


class BulkErrorExtra(Schema):
    errors: list[BulkErrorItem]


class BulkErrorOut(Schema):
    message: str
    extra: BulkErrorExtra


@router.post(
    "/runs/bulk",
    response=with_errors({200: BulkOut, 201: BulkOut}, 400, 413)
    | {422: ValidationErrorOut | BulkErrorOut},
)
def create_runs_bulk(request: HttpRequest, payload: BulkIn):
    """Store up to 1,000 runs in one transaction, all or nothing. Any invalid item stores
    nothing and answers 422 with `extra.errors` = [{index, field, message}] for every item.
    201 when at least one run was created, else 200 (every item named an existing run)."""
    results = runs_ingest_bulk(team=editor(request).team, items=payload.runs)
    # The runs it created are answered from the evaluations it stored (as POST /api/runs
    # answers a new run); only runs that existed already are read back.
    known = evaluations_latest_for_runs(run_ids=[r.run.pk for r in results if r.stored is None])
    items = [
        {
            "index": i,
            "id": run.id,
            "external_id": run.external_id,
            "created": created,
            "status": run.status,
            "evaluations": [evaluation_out(e, unjudged=True) for e in stored]
            if stored is not None
            else [evaluation_out(e) for e in known[run.pk]],
        }
        for i, (run, created, stored) in enumerate(results)
    ]
    created = sum(1 for item in items if item["created"])
    body = {"created": created, "existing": len(items) - created, "items": items}
    return Status(201 if created else 200, body)


@router.get("/runs", response=with_errors({200: RunPageOut}))
def list_runs(
    request: HttpRequest,
    filters: Query[RunFilters],
    cursor: str | None = Query(None, max_length=500, description="next_cursor of the last page"),
    limit: int = Query(
        50, ge=1, le=INT_MAX, description="Page size, capped at EVALSITE_PAGE_SIZE_MAX"
    ),
):
    """The team's runs, newest first, filtered; keyset pagination with `cursor`."""
    page = runs_list(
        team=caller(request).team,
        filters=filters,
        cursor=cursor,
        limit=limit,
    )
    return {"items": [run_list_item_out(r) for r in page.items], "next_cursor": page.next_cursor}


@router.get("/runs/{runref:run_id}", response=with_errors({200: RunOut}, 404))
def get_run(request: HttpRequest, run_id: UUID):
    """A run with its newest evaluation per kind and rubric, verdicts and alignment."""
    run = run_get(team=caller(request).team, run_id=run_id)
    if run is None:
        raise Http404("No such run in this team")
    return run_out(run, evaluations_for_run(run=run))


@router.delete("/runs/{runref:run_id}", response=with_errors({204: None}, 403, 404, 409))
def delete_run(
    request: HttpRequest,
    run_id: UUID,
    force: bool = Query(False, description="Delete a protected run too (owners and API keys)"),
):
    """Delete a run with its evaluations, verdicts, overrides and labels (editors). A run in a
    golden set, labelled by a reviewer or the source of a judge example is protected: 409
    with ``extra.reasons``, unless an owner (or an API key) sends ``force=true``."""
    who = editor(request)
    run = run_get(team=who.team, run_id=run_id)
    if run is None:
        raise Http404("No such run in this team")
    run_delete(run=run, force=force, may_force=who.can_manage)
    return Status(204, None)


@router.get("/evaluations/{evaluation_id}", response=with_errors({200: EvaluationOut}, 404))
def get_evaluation(request: HttpRequest, evaluation_id: UUID):
    evaluation = evaluation_get(team=caller(request).team, evaluation_id=evaluation_id)
    if evaluation is None:
        raise Http404("No such evaluation in this team")
    return evaluation_out(evaluation)


@router.post(
    "/score",
    response=with_errors({200: ScoreOut, 202: ScoreOut}, 400, 409, 413),
)
def score(request: HttpRequest, payload: ScoreIn):
    """Store the run, wait up to `timeout` seconds for its evaluations and return the result.

    200: every evaluation ended; `status` (the run's) is `succeeded`, or `failed` with `error`
    (the judge failed for good: `passed` and `score` are then null, so a loop must check
    `status`); passed and score are the run's result as every surface shows it (docs/api.md). 202: not final,
    `detail` says why: time ran out (`status` is `queued` or `running`), or the team's judge
    budget is reached (`over_budget`, answered as soon as the run is parked: it is judged when
    the budget allows); poll `GET /api/evaluations/{evaluation_id}`.
    429 (with `Retry-After`, storing nothing): the team already has EVALSITE_SCORE_MAX_WAITING
    score calls waiting. `inline`: the web process judges the run itself, exactly as a worker
    would (a worker that claimed an evaluation first judges it; never two results).
    An `external_id` scored before answers its stored result (`stored: true`; `rubric_version`
    says which version judged it); `fresh: true` judges that run again on the rubric's current
    version (a new evaluation; the earlier one stays in the run's history).
    """
    team = editor(request).team
    with score_waiting_slot(team=team, timeout=payload.timeout):
        submitted = score_submit(
            team=team,
            payload=payload.run_payload(),
            criteria=payload.criteria_value(),
            judge_view=payload.judge_view or "",
            inline=payload.inline,
            fresh=payload.fresh,
        )
        awaited = score_await(team=team, submitted=submitted, timeout=payload.timeout)
    ids = [e.id for e in submitted.evaluations]
    run = run_get(team=team, run_id=submitted.run.pk) or submitted.run  # its result now
    out = score_out(run, awaited.scored or evaluations_scored(ids=ids), stored=submitted.stored)
    return Status(200 if awaited.finished and out["status"] in FINAL_STATUSES else 202, out)
