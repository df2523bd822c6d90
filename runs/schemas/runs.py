"""The API's schemas for runs (summaries, list items, a run with its evaluations) and the
functions that fill them."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from ninja import Field, Schema

from judge_engine.trajectory import tool_names

from ..models import AgentRun, Evaluation, StatusChoice
from .evaluations import EvaluationOut, evaluation_out

AlignmentChoice = Literal["off", "user", "system", "both"]


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
    result = run.result  # the one rule: judge_engine.rules.run_result
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
