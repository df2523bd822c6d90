"""The API's schemas for runs, evaluations and scoring, and the functions that fill them.

The run input is runs.payloads.RunPayload (the public run payload). Outputs are built from
rows fetched by runs.selectors (verdicts and alignment prefetched), never by lazy loads here.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from ninja import Field, Schema
from pydantic import ConfigDict, ValidationInfo, WithJsonSchema, field_validator

from .models import AgentRun, Evaluation, Kind, StatusChoice
from .payloads import CriterionIn, RunPayload
from .scoring.rules import display_round
from .scoring.trajectory import tool_names
from .selectors.evaluations import Scored
from .services.budget_wait import budget_wait
from .services.bulk import MAX_BULK_RUNS

AlignmentChoice = Literal["off", "user", "system", "both"]
JudgeViewChoice = Literal["final", "conversation", "trajectory"]


# --- Evaluations ------------------------------------------------------------------------------


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
        "verdicts": [_verdict(v) for v in verdicts],
        "alignment": _alignment(e, breakdowns) if e.kind == Kind.ALIGNMENT else None,
    }


def _verdict(v: Any) -> dict[str, Any]:
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


def _alignment(e: Evaluation, breakdowns: Iterable[Any]) -> dict[str, Any]:
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


# --- Runs -------------------------------------------------------------------------------------


class JudgedOut(Schema):
    passed: bool | None
    score: float | None
    alignment_score: float | None


class RunSummaryOut(Schema):
    """A run's fields, without its content, plus its current result."""

    id: UUID
    external_id: str | None
    agent: str
    rubric: UUID | None = Field(description="Id of the run's rubric")
    alignment: AlignmentChoice
    status: StatusChoice = Field(description="queued/running while any evaluation is pending")
    passed: bool | None = Field(
        description="Current rubric result (human-adjusted); null unless status is succeeded "
        "(docs/api.md, A run's result)"
    )
    score: float | None = Field(description="Current rubric score; null unless status is succeeded")
    alignment_score: float | None = Field(
        description="Current alignment score; null unless status is succeeded"
    )
    rubric_version: int | None = Field(description="Version number of the current result")
    adjusted: bool = Field(
        default=False,
        description="True when reviewers changed the result: passed, score or alignment_score "
        "differ from the judge's own (in `judge`)",
    )
    judge: JudgedOut | None = Field(
        default=None,
        description="The judge's own result, as judged before any review; null when no "
        "evaluation is current or status is not succeeded",
    )
    sampling: dict[str, Any] = Field(
        description="The rubric's sampling decision at ingest: sampled, rate, bucket, reason "
        "({} without a rubric)"
    )
    created_at: datetime


class RunListItemOut(RunSummaryOut):
    task_preview: str = Field(description="First 280 characters of the task (first user message)")
    output_preview: str = Field(description="First 280 characters of the output text")


class RunOut(RunSummaryOut):
    input: dict[str, Any]
    output: str | list[Any]
    request_context: dict[str, Any]
    metadata: dict[str, Any]
    expected_output: str
    steps: list[dict[str, Any]] = Field(
        description="The run's messages as ordered steps: messages, tool calls, tool results"
    )
    flagged_steps: int = Field(description="Steps with a malformed tool call or unmatched result")
    tools: list[str] = Field(description="Distinct tools the run called, in first-call order")
    evaluations: list[EvaluationOut] = Field(
        description="The newest evaluation per kind and rubric (queued, running or final)"
    )


class RunPageOut(Schema):
    items: list[RunListItemOut]
    next_cursor: str | None = Field(
        description="Pass as `cursor` for the next page; null at the end"
    )


def _summary(run: AgentRun) -> dict[str, Any]:
    result = run.result  # the one rule: runs.scoring.rules.run_result
    return {
        "id": run.id,
        "external_id": run.external_id,
        "agent": run.agent,
        "rubric": run.rubric_id,
        "alignment": run.alignment_mode,
        "status": result.status,
        "passed": result.passed,
        "score": result.score,
        "alignment_score": result.alignment_score,
        "rubric_version": run.current_version.number if run.current_version_id else None,  # type: ignore[union-attr]
        "adjusted": result.adjusted,
        "judge": result.judge,
        "sampling": run.sampling or {},
        "created_at": run.created_at,
    }


def run_list_item_out(run: AgentRun) -> dict[str, Any]:
    previews = {"task_preview": run.task_preview, "output_preview": run.output_preview}  # type: ignore[attr-defined]
    return _summary(run) | {k: v or "" for k, v in previews.items()}


def run_out(
    run: AgentRun, evaluations: list[Evaluation], *, unjudged: bool = False
) -> dict[str, Any]:
    return _summary(run) | {
        "input": run.input,
        "output": run.output,
        "request_context": run.request_context,
        "metadata": run.metadata,
        "expected_output": run.expected_output,
        "steps": (steps := run.trajectory()),
        "flagged_steps": run.flagged_steps,
        "tools": tool_names(steps),
        "evaluations": [evaluation_out(e, unjudged=unjudged) for e in evaluations],
    }


# --- Bulk ingest ------------------------------------------------------------------------------


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """A model's JSON schema with its local $defs substituted in place (it has no cycles)."""
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                return walk(defs[ref.removeprefix("#/$defs/")])
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


# Items are validated one by one by the bulk service, so a bad item is reported with its index
# next to the others' errors instead of failing the whole body; the schema still documents them.
BulkItems = Annotated[
    list[dict[str, Any]],
    WithJsonSchema(
        {
            "type": "array",
            "items": _inlined(RunPayload.model_json_schema()),
            "maxItems": MAX_BULK_RUNS,
        }
    ),
]


class BulkIn(Schema):
    model_config = ConfigDict(extra="forbid")
    runs: BulkItems = Field(max_length=MAX_BULK_RUNS)


class BulkItemOut(Schema):
    index: int
    id: UUID
    external_id: str | None
    created: bool = Field(description="False when the external_id already named this run")
    status: StatusChoice
    evaluations: list[EvaluationOut]


class BulkOut(Schema):
    created: int
    existing: int
    items: list[BulkItemOut]


class BulkErrorItem(Schema):
    index: int | None
    field: str | None
    message: str


# --- Synchronous scoring ----------------------------------------------------------------------


class ScoreIn(RunPayload):
    """A run payload plus how to score it and how long to wait."""

    model_config = ConfigDict(extra="forbid")
    criteria: list[CriterionIn] | str | None = Field(
        default=None,
        description="Inline criteria, a list or text (one per line); replaces the rubric's",
    )
    timeout: float = Field(default=30, gt=0, le=120, description="Seconds to wait for the result")
    judge_view: JudgeViewChoice | None = Field(
        default=None,
        description="What the judge sees with inline criteria (default: the rubric's, else final)",
    )
    inline: bool = Field(
        default=False,
        description="Judge in the web process now (the worker's claim, judge and write path; "
        "a worker that claimed first wins), instead of waiting for a worker",
    )
    fresh: bool = Field(
        default=False,
        description="When external_id names a run scored before: judge it again now (its "
        "rubric's current version; the earlier verdict stays in its history) instead of "
        "answering the stored result",
    )

    @field_validator("judge_view")
    @classmethod
    def _view_needs_inline_criteria(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and "criteria" in info.data and info.data["criteria"] is None:
            raise ValueError(
                "judge_view applies to inline criteria; a rubric's judge view is a setting of "
                "its version (PATCH /api/rubrics/{rubric})"
            )
        return value

    def run_payload(self) -> RunPayload:
        return RunPayload.model_validate(
            self.model_dump(exclude={"criteria", "timeout", "judge_view", "inline", "fresh"})
        )

    def criteria_value(self) -> Any:
        if isinstance(self.criteria, list):
            return [c.model_dump() for c in self.criteria]
        return self.criteria


class ScoreOut(Schema):
    status: StatusChoice = Field(
        description="The run's status: succeeded, failed, queued/running (timed out), "
        "over_budget (waits for the team's judge budget) or nothing_to_judge"
    )
    passed: bool | None = Field(
        description="The run's result (human-adjusted): null unless status is succeeded"
    )
    score: float | None = Field(
        description="The run's rubric score (alignment-only: its alignment score); null unless "
        "status is succeeded"
    )
    reason: str
    error: str
    detail: str = Field(
        default="", description="Why the result is not final yet (202); empty when it is"
    )
    verdicts: list[VerdictOut]
    alignment: AlignmentOut | None
    evaluation_id: UUID = Field(description="The rubric evaluation (else the alignment one)")
    evaluation_ids: list[UUID]
    run_id: UUID
    stored: bool = Field(
        description="True: external_id named a run scored before and this is its stored "
        "result, not judged again (send fresh=true to re-judge it)"
    )
    rubric_version: int | None = Field(
        description="The rubric version the verdict came from (null: inline criteria, or "
        "alignment only)"
    )


def score_out(run: AgentRun, scored: Scored, *, stored: bool = False) -> dict[str, Any]:
    """The result an agent loop reads. ``run``: the run as it is now (read after the wait):
    its result (runs.scoring.rules.run_result, the one every surface shows) gives status,
    passed and score (an alignment-only run's score is its alignment score). The evaluations
    add the rubric's reason, verdicts and version, the alignment breakdown and the first
    error. ``stored``: the answer is a run scored by an earlier call (Submitted.stored)."""
    evaluations = scored.evaluations
    rubric = next((e for e in evaluations if e.kind == Kind.RUBRIC), None)
    alignment = next((e for e in evaluations if e.kind == Kind.ALIGNMENT), None)
    primary = rubric or alignment
    assert primary is not None
    failed = next((e for e in evaluations if e.error and e.status == "failed"), None)
    result = run.result
    return {
        "status": result.status,
        "passed": result.passed,
        "score": result.score if rubric else result.alignment_score,
        "reason": primary.reason,
        "error": failed.error if failed else "",
        "detail": _waiting_detail(result.status, run.team_id),
        "verdicts": [_verdict(v) for v in scored.verdicts.get(rubric.id, [])] if rubric else [],
        "alignment": _alignment(alignment, scored.breakdowns.get(alignment.id, []))
        if alignment
        else None,
        "evaluation_id": primary.id,
        "evaluation_ids": [e.id for e in evaluations],
        "run_id": run.id,
        "stored": stored,
        "rubric_version": rubric.rubric_version.number  # type: ignore[union-attr]
        if rubric and rubric.rubric_version_id
        else None,
    }


def _waiting_detail(status: str, team_id: Any) -> str:
    if status == "over_budget":
        # The wording every surface shows (runs.services.budget_wait).
        return (
            f"{budget_wait(team_id=team_id).label}: the team's judge budget is reached, nothing "
            "was judged yet (not a pass); it is judged then, or sooner with a raised budget. "
            "Poll GET /api/evaluations/{evaluation_id}"
        )
    if status in ("queued", "running"):
        return "time ran out while the judge was working; poll GET /api/evaluations/{evaluation_id}"
    return ""
