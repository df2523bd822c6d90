"""Human review through the API: overrides, agreement, exports, golden set, consistency.

``POST /api/runs/{id}/overrides`` records a reviewer's verdict on one criterion of the run's
current rubric result: agreeing with the judge confirms it, disagreeing overrides it (a note
is then required). The run's ``passed``/``score`` become the human-adjusted values; the
evaluation keeps the judge's. ``GET /api/rubrics/{rubric}/agreement`` measures the judge
against the labels per criterion (positive = satisfied, the human label is the truth).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from django.http import Http404, HttpRequest, StreamingHttpResponse
from ninja import Field, Path, Query, Router, Schema, Status
from pydantic import ConfigDict, StrictBool

from evalsite.schemas import with_errors
from rubrics.models import Rubric
from rubrics.selectors import rubric_get
from teams.api import Caller, caller, editor

from . import selectors, services
from .services import Reviewer, ReviewValidationError

router = Router(tags=["reviews"])

RubricRef = Path(..., max_length=100, pattern=r"^[-a-zA-Z0-9_]+$", description="Rubric id or slug")
DimensionChoice = Literal["intent", "requirements", "completeness", "appropriateness"]
PerspectiveChoice = Literal["user", "system"]


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


# --- Schemas ----------------------------------------------------------------------------------


class OverrideIn(Schema):
    model_config = ConfigDict(extra="forbid")
    criterion_id: str = Field(
        min_length=1, max_length=32, description="The criterion's key (c1, c2, …)"
    )
    satisfied: StrictBool = Field(description="The reviewer's verdict")
    note: str = Field(
        "", max_length=5000, description="Why; required when disagreeing with the judge"
    )
    rubric: str | None = Field(
        None, max_length=100, description="Rubric id or slug, when the run was judged by several"
    )


class AlignmentOverrideIn(Schema):
    model_config = ConfigDict(extra="forbid")
    perspective: PerspectiveChoice
    dimension: DimensionChoice
    score: float = Field(ge=0, le=1, description="The reviewer's score of this dimension, 0–1")
    note: str = Field(
        "", max_length=5000, description="Why; required when it differs from the judge"
    )


class RevertIn(Schema):
    model_config = ConfigDict(extra="forbid")
    note: str = Field("", max_length=5000)


class GoldenIn(Schema):
    model_config = ConfigDict(extra="forbid")
    golden: StrictBool
    rubric: str | None = Field(None, max_length=100, description="Default: the run's rubric")


class OverrideOut(Schema):
    id: UUID
    kind: Literal["criterion", "alignment"]
    action: Literal["confirm", "override", "revert"]
    criterion_id: str | None
    description: str | None
    perspective: str | None
    dimension: str | None
    judge_satisfied: bool | None
    from_satisfied: bool | None
    to_satisfied: bool | None
    judge_score: float | None
    from_score: float | None
    to_score: float | None
    note: str
    reviewer: str
    reverts: UUID | None = Field(description="The change this revert undid")
    reverted: bool = Field(description="A later revert undid this change")
    created_at: datetime


class ResultOut(Schema):
    passed: bool | None
    score: float | None
    alignment_score: float | None


class OverrideResultOut(Schema):
    created: bool = Field(description="False: the label already said this; nothing was written")
    override: OverrideOut
    run: ResultOut = Field(description="The run's human-adjusted result after the change")


class ReviewedVerdictOut(Schema):
    criterion_id: str
    description: str
    required: bool
    judge_satisfied: bool
    human_satisfied: bool | None = Field(description="Null: not labelled for this wording")
    satisfied: bool = Field(description="The effective verdict: the human's when labelled")
    overridden: bool
    note: str
    reasoning: str = Field(description="The judge's reasoning")
    change_id: UUID | None = Field(description="The change in effect (revert it to undo)")


class DimensionOut(Schema):
    perspective: str
    dimension: str
    weight: float
    judge_score: float
    human_score: float | None
    score: float
    note: str
    change_id: UUID | None


class RunReviewOut(Schema):
    run_id: UUID
    rubric_id: UUID | None
    rubric_version: int | None
    judge: ResultOut = Field(description="The judge's result, untouched by reviews")
    effective: ResultOut = Field(description="The result with reviewers' labels applied")
    reviewed: bool
    golden: bool
    verdicts: list[ReviewedVerdictOut]
    alignment: list[DimensionOut]
    history: list[OverrideOut]


class ConfusionOut(Schema):
    tp: int
    fp: int
    fn: int
    tn: int


class CriterionAgreementOut(Schema):
    criterion_id: str
    description: str
    labelled: int
    agreement: float | None = Field(description="Fraction 0–1; null without labels")
    kappa: float | None
    tpr: float | None
    tnr: float | None
    confusion: ConfusionOut
    flagged: bool = Field(description="Kappa below the team's threshold")


class AgreementOut(Schema):
    rubric_id: UUID
    version: int | None
    kappa_threshold: float
    criteria: list[CriterionAgreementOut]


class GoldenRunIn(Schema):
    model_config = ConfigDict(extra="forbid")
    version: int | None = Field(None, ge=1, le=2_147_483_647, description="A stored version")
    criteria: str | list[dict[str, Any]] | None = Field(
        None,
        description="Candidate criteria not saved yet: text, or [{key?, description, required?}]",
    )
    judge: str | None = Field(None, max_length=200, description="Another judge model")


class ConsistencyIn(Schema):
    model_config = ConfigDict(extra="forbid")
    version: int | None = Field(None, ge=1, le=2_147_483_647, description="Default: current")
    runs: list[UUID] | None = Field(None, max_length=200, description="Default: a sample")
    sample: int = Field(20, ge=1, le=200, description="How many of the newest runs to sample")
    repeats: int = Field(3, ge=1, le=10, description="Judgements per run")
    judge: str | None = Field(None, max_length=200, description="A second judge model")


class ProgressOut(Schema):
    total: int
    finished: int
    failed: int
    done: bool


class CalibrationCriterionOut(Schema):
    criterion_id: str
    description: str
    labelled: int | None = None
    agreement: float | None = None
    kappa: float | None = None
    tpr: float | None = None
    tnr: float | None = None
    confusion: ConfusionOut | None = None
    flagged: bool = False
    reworded: bool = False
    compared: int = Field(description="Runs with a verdict to compare with")
    flipped: int = Field(
        description="Golden: verdicts that differ from the baseline version's; consistency: runs whose verdicts disagree"
    )
    flip_rate: float | None = None


class CalibrationOut(Schema):
    id: UUID
    kind: Literal["golden", "consistency"]
    rubric_id: UUID
    version: int | None
    baseline_version: int | None
    judge_model: str
    repeats: int
    runs: int
    created_at: datetime
    progress: ProgressOut
    criteria: list[CalibrationCriterionOut]


# --- Output builders --------------------------------------------------------------------------


def override_out(row: Any) -> dict[str, Any]:
    alignment = getattr(row, "is_alignment", hasattr(row, "dimension"))
    return {
        "id": row.pk,
        "kind": "alignment" if alignment else "criterion",
        "action": row.action,
        "criterion_id": None if alignment else row.criterion_key,
        "description": None if alignment else row.description,
        "perspective": row.perspective if alignment else None,
        "dimension": row.dimension if alignment else None,
        "judge_satisfied": None if alignment else row.judge_satisfied,
        "from_satisfied": None if alignment else row.from_satisfied,
        "to_satisfied": None if alignment else row.to_satisfied,
        "judge_score": row.judge_score if alignment else None,
        "from_score": row.from_score if alignment else None,
        "to_score": row.to_score if alignment else None,
        "note": row.note,
        "reviewer": row.actor_name,
        "reverts": row.reverts_id,
        "reverted": getattr(row, "reverted", False),
        "created_at": row.created_at,
    }


def _result(run: Any) -> dict[str, Any]:
    run.refresh_from_db(fields=["passed", "score", "alignment_score"])
    return {"passed": run.passed, "score": run.score, "alignment_score": run.alignment_score}


def _change_answer(change: services.LabelChange, run: Any) -> Status:
    body = {"created": change.created, "override": override_out(change.row), "run": _result(run)}
    return Status(201 if change.created else 200, body)


def run_review_out(view: selectors.RunReviewView) -> dict[str, Any]:
    e, a, run = view.evaluation, view.alignment_evaluation, view.run
    return {
        "run_id": run.pk,
        "rubric_id": e.rubric_id if e else None,
        "rubric_version": e.rubric_version.number if e and e.rubric_version else None,
        "judge": {
            "passed": e.passed if e else None,
            "score": e.score if e else None,
            "alignment_score": a.score if a else None,
        },
        "effective": {
            "passed": run.passed,
            "score": run.score,
            "alignment_score": run.alignment_score,
        },
        "reviewed": bool(view.review and view.review.reviewed_at),
        "golden": bool(view.review and view.review.golden),
        "verdicts": [
            {
                "criterion_id": v.verdict.key,
                "description": v.verdict.description,
                "required": v.verdict.required,
                "judge_satisfied": v.verdict.judge,
                "human_satisfied": v.verdict.human,
                "satisfied": v.verdict.satisfied,
                "overridden": v.verdict.overridden,
                "note": v.note,
                "reasoning": v.reasoning,
                "change_id": v.label_source_id,
            }
            for v in view.verdicts
        ],
        "alignment": [
            {
                "perspective": d.perspective,
                "dimension": d.dimension,
                "weight": d.weight,
                "judge_score": d.judge,
                "human_score": d.human,
                "score": d.effective,
                "note": d.note,
                "change_id": d.label_source_id,
            }
            for d in view.dimensions
        ],
        "history": [override_out(row) for row in view.history],
    }


def _agreement_item(c: Any) -> dict[str, Any]:
    s = c.stats
    return {
        "criterion_id": c.criterion_id,
        "description": c.description,
        "labelled": s.labelled,
        "agreement": s.agreement,
        "kappa": s.kappa,
        "tpr": s.tpr,
        "tnr": s.tnr,
        "confusion": s.confusion.as_dict(),
        "flagged": c.flagged,
    }


def calibration_out(report: Any) -> dict[str, Any]:
    cal = report.calibration
    golden = isinstance(report, selectors.GoldenReport)
    criteria = []
    for c in report.criteria:
        if golden:
            item = _agreement_item(c) | {
                "reworded": c.reworded,
                "compared": c.compared,
                "flipped": len(c.flips),
                "flip_rate": len(c.flips) / c.compared if c.compared else None,
            }
        else:
            item = {
                "criterion_id": c.criterion_id,
                "description": c.description,
                "compared": c.compared,
                "flipped": c.flipped,
                "flip_rate": c.flip_rate,
                "flagged": c.flaky,
            }
        criteria.append(item)
    return {
        "id": cal.pk,
        "kind": cal.kind,
        "rubric_id": cal.rubric_id,
        "version": cal.version.number if cal.version else None,
        "baseline_version": cal.baseline_version.number if cal.baseline_version else None,
        "judge_model": cal.judge_model,
        "repeats": cal.repeats,
        "runs": report.runs,
        "created_at": cal.created_at,
        "progress": {
            "total": report.progress.total,
            "finished": report.progress.finished,
            "failed": report.progress.failed,
            "done": report.progress.done,
        },
        "criteria": criteria,
    }


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


class GoldenOut(Schema):
    run_id: UUID
    rubric_id: UUID
    golden: bool


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
    version: int | None = Query(None, ge=1, le=2_147_483_647, description="Default: current"),
):
    """Per criterion of a version: labelled verdicts, agreement (0–1), Cohen's kappa, TPR,
    TNR and the confusion matrix. Positive = satisfied; the human label is the truth. With no
    labels the figures are null; when judge and humans used one single class throughout,
    kappa is 1.0 (perfect agreement) by convention."""
    found = _rubric_or_404(caller(request), rubric)
    chosen = selectors.version_pick(rubric=found, number=version)
    if version is not None and chosen is None:
        raise Http404(f"The rubric has no version {version}")
    report = selectors.rubric_agreement(rubric=found, version=chosen)
    return {
        "rubric_id": found.pk,
        "version": chosen.number if chosen else None,
        "kappa_threshold": report.threshold,
        "criteria": [_agreement_item(c) for c in report.criteria],
    }


EXPORT_FIELDS = [
    "run_id", "external_id", "agent", "rubric_version", "criterion_id", "criterion",
    "judge_satisfied", "human_satisfied", "agree", "note", "reviewer", "reviewed_at",
]  # fmt: skip
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    """Spreadsheets run cells that start like a formula: quote them (CSV injection)."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def csv_lines(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=EXPORT_FIELDS)
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v) for k, v in row.items()})
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def jsonl_lines(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"


def export_response(rubric: Rubric, fmt: str) -> StreamingHttpResponse:
    rows = selectors.review_export_rows(rubric=rubric)
    lines, content_type = (
        (csv_lines(rows), "text/csv; charset=utf-8")
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
