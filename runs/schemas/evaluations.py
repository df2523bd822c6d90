"""The API's schemas for evaluations (verdicts, alignment breakdowns) and the functions that
fill them from rows fetched by runs.selectors (verdicts and alignment prefetched), never by lazy
loads here."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from ninja import Field, Schema

from judge_engine.rules import display_round

from ..models import Evaluation, Kind, StatusChoice

JudgeViewChoice = Literal["final", "conversation", "trajectory"]


class VerdictOut(Schema):
    criterion_id: str = Field(description="The criterion's stable key in its rubric (c1, c2, …)")
    description: str
    required: bool
    satisfied: bool
    reasoning: str
    reused: bool = Field(description="Copied from an earlier identical judgement, not re-judged")
    evidence: list[int] = Field(description="Step indices of the run this verdict relies on")
    evidence_note: str = Field(description="Citations of the judge that were dropped, if any")


class IntentOut(Schema):
    score: float
    primary_intent: str
    addressed: bool
    reasoning: str


class RequirementsOut(Schema):
    score: float
    items: list[dict[str, Any]]


class CompletenessOut(Schema):
    score: float
    missing_elements: list[Any]
    reasoning: str


class AppropriatenessOut(Schema):
    score: float
    format_aligned: bool
    tone_aligned: bool
    reasoning: str


class PerspectiveOut(Schema):
    score: float = Field(description="Weighted score of this perspective, 0..1")
    weights: dict[str, Any]
    intent: IntentOut
    requirements: RequirementsOut
    completeness: CompletenessOut
    appropriateness: AppropriatenessOut
    overall_assessment: str


class AlignmentOut(Schema):
    user: PerspectiveOut | None
    system: PerspectiveOut | None
    user_score: float | None
    system_score: float | None
    score: float | None = Field(
        description="Final score (weighted, times the scale), summed exactly: "
        "a perfect answer is exactly 1 times the scale"
    )
    display_score: float | None = Field(description="score rounded half up to 2 decimals")
    band: str
    system_applicable: bool | None = Field(
        description="The system perspective was judged (false: user mode, or no system prompt)"
    )
    user_applicable: bool | None = Field(
        description="The user perspective was judged (false: system mode, or no user message)"
    )


class EvaluationOut(Schema):
    id: UUID
    run_id: UUID
    kind: Literal["rubric", "alignment"]
    status: StatusChoice
    passed: bool | None
    score: float | None
    reason: str
    error: str
    rubric_id: UUID | None
    rubric_version: int | None = Field(description="Version number, null for inline criteria")
    judge_model: str
    judge_view: JudgeViewChoice = Field(description="What of the run the judge saw")
    rendering: dict[str, Any] = Field(
        description="What was cut to fit the token budget ({} when nothing was)"
    )
    is_current: bool
    created_at: datetime
    finished_at: datetime | None
    verdicts: list[VerdictOut]
    alignment: AlignmentOut | None


def evaluation_out(e: Evaluation, *, unjudged: bool = False) -> dict[str, Any]:
    """An evaluation as the API answers it. ``unjudged``: one just stored by this request
    (no verdicts or alignment rows yet, so none are read)."""
    verdicts = [] if unjudged else e.verdicts.all()
    breakdowns = [] if unjudged else e.alignment.all()
    return {
        "id": e.id,
        "run_id": e.run_id,
        "kind": e.kind,
        "status": e.status,
        "passed": e.passed,
        "score": e.score,
        "reason": e.reason,
        "error": e.error,
        "rubric_id": e.rubric_id,
        "rubric_version": e.rubric_version.number if e.rubric_version_id else None,  # type: ignore[union-attr]
        "judge_model": e.judge_model,
        "judge_view": e.judge_view or "final",
        "rendering": e.rendering,
        "is_current": e.is_current,
        "created_at": e.created_at,
        "finished_at": e.finished_at,
        "verdicts": [verdict_out(v) for v in verdicts],
        "alignment": alignment_out(e, breakdowns) if e.kind == Kind.ALIGNMENT else None,
    }


def verdict_out(v: Any) -> dict[str, Any]:
    return {
        "criterion_id": v.criterion_key,
        "description": v.description,
        "required": v.required,
        "satisfied": v.satisfied,
        "reasoning": v.reasoning,
        "reused": v.reused_from_id is not None,
        "evidence": v.evidence,
        "evidence_note": v.evidence_note,
    }


def alignment_out(e: Evaluation, breakdowns: Iterable[Any]) -> dict[str, Any]:
    perspectives = {p.perspective: _perspective(p) for p in breakdowns}
    return {
        "user": perspectives.get("user"),
        "system": perspectives.get("system"),
        "user_score": e.user_score,
        "system_score": e.system_score,
        "score": e.score,
        "display_score": None if e.score is None else display_round(e.score),
        "band": e.band,
        "system_applicable": e.system_applicable,
        "user_applicable": e.user_applicable,
    }


def _perspective(p: Any) -> dict[str, Any]:
    return {
        "score": p.weighted_score,
        "weights": p.weights,
        "intent": {
            "score": p.intent_score,
            "primary_intent": p.primary_intent,
            "addressed": p.intent_addressed,
            "reasoning": p.intent_reasoning,
        },
        "requirements": {"score": p.requirements_score, "items": p.requirements},
        "completeness": {
            "score": p.completeness_score,
            "missing_elements": p.missing_elements,
            "reasoning": p.completeness_reasoning,
        },
        "appropriateness": {
            "score": p.appropriateness_score,
            "format_aligned": p.format_aligned,
            "tone_aligned": p.tone_aligned,
            "reasoning": p.appropriateness_reasoning,
        },
        "overall_assessment": p.overall_assessment,
    }
