"""The review API's schemas, and the functions that fill them from the selectors' views.

Inputs forbid extra fields; outputs are built from rows and reports fetched by
reviews.selectors (the operations in reviews.api call these builders).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from ninja import Field, Schema
from pydantic import ConfigDict, StrictBool

from . import selectors

DimensionChoice = Literal["intent", "requirements", "completeness", "appropriateness"]
PerspectiveChoice = Literal["user", "system"]


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


class GoldenOut(Schema):
    run_id: UUID
    rubric_id: UUID
    golden: bool


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


def agreement_item_out(c: Any) -> dict[str, Any]:
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
            item = agreement_item_out(c) | {
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
