"""The review API's schemas. Inputs forbid extra fields; outputs are filled from the
selectors' views by reviews/outputs.py."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from ninja import Field, Schema
from pydantic import ConfigDict, StrictBool

from evalsite.schemas import INT_MAX

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


class ReviewerVerdictOut(Schema):
    reviewer: str
    satisfied: bool = Field(description="This reviewer's latest verdict")
    note: str
    change_id: UUID = Field(description="This reviewer's change in effect (revert it to undo)")
    updated_at: datetime


class ReviewedVerdictOut(Schema):
    criterion_id: str
    description: str
    required: bool
    judge_satisfied: bool
    human_satisfied: bool | None = Field(
        description="The majority of the reviewers' verdicts; null: not labelled for this wording, or disputed"
    )
    disputed: bool = Field(description="The reviewers' latest verdicts tie")
    satisfied: bool = Field(description="The effective verdict: the human's when labelled")
    overridden: bool
    note: str
    reasoning: str = Field(description="The judge's reasoning")
    change_id: UUID | None = Field(
        description="The newest change on the majority's side (revert it to undo)"
    )
    reviews: list[ReviewerVerdictOut] = Field(description="Each reviewer's latest verdict")


class OverrideResultOut(Schema):
    created: bool = Field(description="False: the label already said this; nothing was written")
    override: OverrideOut
    run: ResultOut = Field(
        description="The run's human-adjusted result after the change (null values unless the "
        "run's status is succeeded)"
    )
    verdict: ReviewedVerdictOut | None = Field(
        None, description="A criterion change: the criterion's majority, dispute and reviewers"
    )


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
    effective: ResultOut = Field(
        description="The run's result with reviewers' labels applied (null values unless the "
        "run's status is succeeded)"
    )
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
    reviewers: ReviewerAgreementOut | None = None


class ReviewerAgreementOut(Schema):
    items: int = Field(description="Runs with verdicts from at least two reviewers")
    reviewers: int
    method: Literal["cohen", "fleiss"] | None = Field(
        description="Cohen's kappa for two reviewers, Fleiss' for more; null: nothing to compare"
    )
    kappa: float | None


class DisputedOut(Schema):
    run_id: UUID
    external_id: str
    criterion_id: str
    satisfied: int = Field(description="Reviewers saying satisfied")
    not_satisfied: int


class AgreementOut(Schema):
    rubric_id: UUID
    version: int | None
    kappa_threshold: float
    criteria: list[CriterionAgreementOut]
    disputed: list[DisputedOut] = Field(description="Disputed runs, newest first (at most 50)")
    disputed_total: int
    excluded_examples: int = Field(
        0, description="Runs left out of a criterion's figures: the version's examples of it"
    )


class GoldenRunIn(Schema):
    model_config = ConfigDict(extra="forbid")
    version: int | None = Field(None, ge=1, le=INT_MAX, description="A stored version")
    criteria: str | list[dict[str, Any]] | None = Field(
        None,
        description="Candidate criteria not saved yet: text, or [{key?, description, required?}]",
    )
    judge: str | None = Field(None, max_length=200, description="Another judge model")


class ConsistencyIn(Schema):
    model_config = ConfigDict(extra="forbid")
    version: int | None = Field(None, ge=1, le=INT_MAX, description="Default: current")
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
