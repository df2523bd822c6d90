"""The API's schemas for synchronous scoring (POST /api/score) and the function that fills
its answer."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from ninja import Field, Schema
from pydantic import ConfigDict, ValidationInfo, field_validator

from judging.services.budget_wait import budget_wait

from ..models import AgentRun, Kind, StatusChoice
from ..payloads import CriterionIn, RunPayload
from ..selectors.evaluations import Scored
from .evaluations import AlignmentOut, JudgeViewChoice, VerdictOut, alignment_out, verdict_out


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
    its result (judge_engine.rules.run_result, the one every surface shows) gives status,
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
        "verdicts": [verdict_out(v) for v in scored.verdicts.get(rubric.id, [])] if rubric else [],
        "alignment": alignment_out(alignment, scored.breakdowns.get(alignment.id, []))
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
        # The wording every surface shows (judging.services.budget_wait).
        return (
            f"{budget_wait(team_id=team_id).label}: the team's judge budget is reached, nothing "
            "was judged yet (not a pass); it is judged then, or sooner with a raised budget. "
            "Poll GET /api/evaluations/{evaluation_id}"
        )
    if status in ("queued", "running"):
        return "time ran out while the judge was working; poll GET /api/evaluations/{evaluation_id}"
    return ""
