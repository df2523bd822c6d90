"""Human review through the API: overrides, agreement, exports, golden set, consistency.

``POST /api/runs/{id}/overrides`` records a reviewer's verdict on one criterion of the run's
current rubric result: agreeing with the judge confirms it, disagreeing overrides it (a note
is then required). The run's ``passed``/``score`` become the human-adjusted values; the
evaluation keeps the judge's. ``GET /api/rubrics/{rubric}/agreement`` measures the judge
against the labels per criterion (positive = satisfied, the human label is the truth).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.http import Http404, HttpRequest, StreamingHttpResponse
from ninja import Path, Query, Router, Status

from evalsite.schemas import INT_MAX, with_errors
from rubrics.models import Rubric
from rubrics.selectors import rubric_get
from teams.api import Caller, caller, editor

from . import selectors, services
from .exports import csv_lines, jsonl_lines
from .outputs import (
    agreement_item_out,
    calibration_out,
    disputed_out,
    override_out,
    reviewer_agreement_out,
    run_review_out,
    verdict_out,
)
from .schemas import (
    AgreementOut,
    AlignmentOverrideIn,
    CalibrationOut,
    ConsistencyIn,
    GoldenIn,
    GoldenOut,
    GoldenRunIn,
    OverrideIn,
    OverrideResultOut,
    RevertIn,
    RunReviewOut,
)
from .services import Reviewer, ReviewValidationError

router = Router(tags=["reviews"])

RubricRef = Path(..., max_length=100, pattern=r"^[-a-zA-Z0-9_]+$", description="Rubric id or slug")


def _reviewer(c: Caller) -> Reviewer:
    return Reviewer(user=c.user, api_key=c.api_key)


def _run(c: Caller, run_id: UUID) -> Any:
    run = selectors.team_run_get(team=c.team, run_id=run_id)
    if run is None:
        raise Http404("No such run in this team")
    return run


def _rubric_or_404(c: Caller, ref: str) -> Rubric:
    rubric = rubric_get(team=c.team, ref=ref)
    if rubric is None:
        raise Http404("No such rubric in this team")
    return rubric


def _rubric_id(c: Caller, ref: str | None) -> Any:
    return _rubric_or_404(c, ref).pk if ref else None


# --- Answers ----------------------------------------------------------------------------------


def _result(run: Any) -> dict[str, Any]:
    """The run's result after a change, as every surface shows it (AgentRun.result)."""
    run.refresh_from_db(fields=["status", "passed", "score", "alignment_score"])
    result = run.result
    return {
        "passed": result.passed,
        "score": result.score,
        "alignment_score": result.alignment_score,
    }


def _criterion_state(row: Any, run: Any) -> dict[str, Any] | None:
    """A criterion change: that criterion's majority, dispute and reviewers afterwards."""
    if not hasattr(row, "criterion_key"):
        return None
    view = selectors.run_review_get(run=run, rubric_id=row.rubric_id, history=False)
    found = [v for v in view.verdicts if v.verdict.key == row.criterion_key]
    return verdict_out(found[0]) if found else None


def _change_answer(change: services.LabelChange, run: Any) -> Status:
    body = {
        "created": change.created,
        "override": override_out(change.row),
        "run": _result(run),
        "verdict": _criterion_state(change.row, run),
    }
    return Status(201 if change.created else 200, body)


# --- Run overrides ----------------------------------------------------------------------------


@router.post(
    "/runs/{run_id}/overrides",
    response=with_errors({200: OverrideResultOut, 201: OverrideResultOut}, 400, 404, 409),
)
def create_override(request: HttpRequest, run_id: UUID, payload: OverrideIn):
    """Record a reviewer's verdict on one criterion of the run's current rubric result.
    Agreeing with the judge confirms it; disagreeing overrides it and needs a `note`. 201 with
    the history row; 200 when the label already said this (nothing written). 409 when the
    run has no judged rubric result yet."""
    c = editor(request)
    run = _run(c, run_id)
    change = services.override_create(
        run=run,
        criterion_key=payload.criterion_id,
        satisfied=payload.satisfied,
        note=payload.note,
        reviewer=_reviewer(c),
        rubric_id=_rubric_id(c, payload.rubric),
    )
    return _change_answer(change, run)


@router.get("/runs/{run_id}/overrides", response=with_errors({200: RunReviewOut}, 404))
def list_overrides(
    request: HttpRequest,
    run_id: UUID,
    rubric: str | None = Query(None, max_length=100, description="Rubric id or slug"),
):
    """The run's judge and human-adjusted results, each criterion's judge and human verdict,
    alignment dimensions, and the whole review history (newest first)."""
    c = caller(request)
    run = _run(c, run_id)
    return run_review_out(selectors.run_review_get(run=run, rubric_id=_rubric_id(c, rubric)))


@router.post(
    "/runs/{run_id}/overrides/{override_id}/revert",
    response=with_errors({201: OverrideResultOut}, 400, 404, 409),
)
def revert_override(request: HttpRequest, run_id: UUID, override_id: UUID, payload: RevertIn):
    """Undo the change in effect for one criterion: the label returns to what it was before it
    (possibly none). 409 when a newer change replaced this one."""
    c = editor(request)
    run = _run(c, run_id)
    row = selectors.verdict_override_get(team=c.team, override_id=override_id)
    if row is None or row.run_id != run.pk:
        raise Http404("No such override on this run")
    return _change_answer(
        services.override_revert(row=row, reviewer=_reviewer(c), note=payload.note),
        run,
    )


@router.post(
    "/runs/{run_id}/alignment-overrides",
    response=with_errors({200: OverrideResultOut, 201: OverrideResultOut}, 400, 404, 409),
)
def create_alignment_override(request: HttpRequest, run_id: UUID, payload: AlignmentOverrideIn):
    """Replace the judge's score of one alignment dimension; the run's alignment score is
    recomputed with the perspective weights. A score other than the judge's needs a note."""
    c = editor(request)
    run = _run(c, run_id)
    change = services.alignment_override_create(
        run=run,
        perspective=payload.perspective,
        dimension=payload.dimension,
        score=payload.score,
        note=payload.note,
        reviewer=_reviewer(c),
    )
    return _change_answer(change, run)


@router.post(
    "/runs/{run_id}/alignment-overrides/{override_id}/revert",
    response=with_errors({201: OverrideResultOut}, 400, 404, 409),
)
def revert_alignment_override(
    request: HttpRequest, run_id: UUID, override_id: UUID, payload: RevertIn
):
    c = editor(request)
    run = _run(c, run_id)
    row = selectors.alignment_override_get(team=c.team, override_id=override_id)
    if row is None or row.run_id != run.pk:
        raise Http404("No such alignment override on this run")
    change = services.alignment_override_revert(row=row, reviewer=_reviewer(c), note=payload.note)
    return _change_answer(change, run)


@router.post("/runs/{run_id}/golden", response=with_errors({200: GoldenOut}, 400, 404, 409))
def mark_golden(request: HttpRequest, run_id: UUID, payload: GoldenIn):
    """Add a reviewed run to its rubric's golden set (or take it out). 409 when the run is not
    fully reviewed."""
    c = editor(request)
    run = _run(c, run_id)
    rubric_id = _rubric_id(c, payload.rubric) or run.rubric_id
    if rubric_id is None:
        raise ReviewValidationError({"rubric": "the run has no rubric: name one"})
    review = services.golden_set_mark(run=run, rubric_id=rubric_id, golden=payload.golden)
    return {"run_id": run.pk, "rubric_id": rubric_id, "golden": review.golden}


# --- Rubric agreement and exports -------------------------------------------------------------


@router.get("/rubrics/{rubric}/agreement", response=with_errors({200: AgreementOut}, 404))
def agreement(
    request: HttpRequest,
    rubric: str = RubricRef,
    version: int | None = Query(None, ge=1, le=INT_MAX, description="Default: current"),
):
    """Per criterion of a version: labelled verdicts, agreement (0–1), Cohen's kappa, TPR,
    TNR and the confusion matrix. Positive = satisfied; the human label (the majority of the
    reviewers' latest verdicts) is the truth. With no labels the figures are null; when judge
    and humans used one single class throughout, kappa is 1.0 (perfect agreement) by
    convention. `reviewers`: agreement between reviewers (Cohen's kappa for two, Fleiss' for
    more); `disputed`: runs whose reviewers tie on a criterion."""
    found = _rubric_or_404(caller(request), rubric)
    chosen = selectors.version_pick(rubric=found, number=version)
    if version is not None and chosen is None:
        raise Http404(f"The rubric has no version {version}")
    report = selectors.rubric_agreement(rubric=found, version=chosen)
    reviewers = selectors.reviewer_agreement(report=report)
    return {
        "rubric_id": found.pk,
        "version": chosen.number if chosen else None,
        "kappa_threshold": report.threshold,
        "criteria": [
            agreement_item_out(c)
            | {"reviewers": reviewer_agreement_out(reviewers.criteria.get(c.criterion_id))}
            for c in report.criteria
        ],
        "disputed": [disputed_out(d) for d in reviewers.disputed],
        "disputed_total": reviewers.disputed_total,
        "excluded_examples": report.excluded_examples,
    }


EXPORT_FIELDS = [
    "run_id", "external_id", "agent", "rubric_version", "criterion_id", "criterion",
    "judge_satisfied", "human_satisfied", "agree", "note", "reviewer", "reviewed_at",
]  # fmt: skip


def export_response(rubric: Rubric, fmt: str) -> StreamingHttpResponse:
    rows = selectors.review_export_rows(rubric=rubric)
    lines, content_type = (
        (csv_lines(rows, EXPORT_FIELDS), "text/csv; charset=utf-8")
        if fmt == "csv"
        else (jsonl_lines(rows), "application/x-ndjson; charset=utf-8")
    )
    response = StreamingHttpResponse(lines, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{rubric.slug}-reviews.{fmt}"'
    return response


def _export_doc(media: str) -> dict[str, Any]:
    return {
        "responses": {
            200: {
                "description": "One line per reviewed verdict: " + ", ".join(EXPORT_FIELDS),
                "content": {media: {"schema": {"type": "string"}}},
            }
        }
    }


@router.get(
    "/rubrics/{rubric}/reviews.csv",
    response=with_errors({}, 404),
    openapi_extra=_export_doc("text/csv"),
)
def export_csv(request: HttpRequest, rubric: str = RubricRef):
    """The rubric's reviewed verdicts as CSV: run, criterion, judge verdict, human verdict,
    note, reviewer. Cells that would start a spreadsheet formula are prefixed with '."""
    return export_response(_rubric_or_404(caller(request), rubric), "csv")


@router.get(
    "/rubrics/{rubric}/reviews.jsonl",
    response=with_errors({}, 404),
    openapi_extra=_export_doc("application/x-ndjson"),
)
def export_jsonl(request: HttpRequest, rubric: str = RubricRef):
    """The rubric's reviewed verdicts as JSON Lines (one object per line)."""
    return export_response(_rubric_or_404(caller(request), rubric), "jsonl")


# --- Calibration ------------------------------------------------------------------------------


@router.post("/rubrics/{rubric}/golden-runs", response=with_errors({202: CalibrationOut}, 400, 404))
def start_golden_run(request: HttpRequest, payload: GoldenRunIn, rubric: str = RubricRef):
    """Score the rubric's golden set with a candidate — a stored `version`, or `criteria` not
    saved yet — and compare per criterion with the human labels and with the current
    version's verdicts. 202: poll `GET /api/calibrations/{id}`."""
    c = editor(request)
    found = _rubric_or_404(c, rubric)
    calibration = services.golden_run(
        rubric=found,
        user=c.user,
        version_number=payload.version,
        criteria=payload.criteria,
        judge_model=payload.judge or "",
    )
    return Status(202, calibration_out(selectors.calibration_report(calibration=calibration)))


@router.post(
    "/rubrics/{rubric}/consistency-checks", response=with_errors({202: CalibrationOut}, 400, 404)
)
def start_consistency_check(request: HttpRequest, payload: ConsistencyIn, rubric: str = RubricRef):
    """Judge a sample of runs `repeats` more times (or with a second `judge`) and report per
    criterion how often the verdict flips. 202: poll `GET /api/calibrations/{id}`."""
    c = editor(request)
    found = _rubric_or_404(c, rubric)
    calibration = services.consistency_check(
        rubric=found,
        user=c.user,
        version_number=payload.version,
        run_ids=payload.runs,
        sample=payload.sample,
        repeats=payload.repeats,
        judge_model=payload.judge or "",
    )
    return Status(202, calibration_out(selectors.calibration_report(calibration=calibration)))


@router.get("/calibrations/{calibration_id}", response=with_errors({200: CalibrationOut}, 404))
def get_calibration(request: HttpRequest, calibration_id: UUID):
    """A golden-set run or consistency check: progress and the per-criterion report."""
    calibration = selectors.calibration_get(
        team=caller(request).team, calibration_id=calibration_id
    )
    if calibration is None:
        raise Http404("No such calibration in this team")
    return calibration_out(selectors.calibration_report(calibration=calibration))
