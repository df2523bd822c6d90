"""Criteria drafted from an agent's system prompt: POST /api/rubrics/draft-from-prompt.

The answer is the judge's draft for a person to edit; nothing is saved as a rubric. One judge
call, made while the request waits (reviews.services.drafting)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Field, Router, Schema
from pydantic import ConfigDict

from evalsite.schemas import with_errors
from judge_engine.draft import MAX_SYSTEM_PROMPT
from teams.api import editor

from .services.drafting import MAX_RUNS, criteria_draft

router = Router(tags=["rubrics"])


class DraftIn(Schema):
    model_config = ConfigDict(extra="forbid")
    system_prompt: str = Field(
        ..., max_length=MAX_SYSTEM_PROMPT, description="The agent's system prompt"
    )
    runs: list[str] = Field(
        default_factory=list,
        max_length=MAX_RUNS,
        description=f"Up to {MAX_RUNS} ids of the team's runs the judge may look at",
    )


class DraftedCriterionOut(Schema):
    description: str = Field(description="One checkable requirement")
    required: bool = Field(description="True only for what the system prompt demands")
    rationale: str = Field(description="The part of the system prompt it comes from")


class DraftOut(Schema):
    criteria: list[DraftedCriterionOut]


@router.post(
    "/rubrics/draft-from-prompt",
    response=with_errors({200: DraftOut}, 403, 409, 429, 502, 503),
    operation_id="rubric_draft_from_prompt",
)
def draft_from_prompt(request: HttpRequest, payload: DraftIn):
    """Draft a rubric's criteria from the agent's system prompt (and, optionally, a few of its
    runs): one checkable requirement each, `required` only where the prompt demands it. Nothing
    is saved: create the rubric with the criteria you keep (`POST /api/rubrics`). Editors only;
    a reached judge budget is a 409, more than EVALSITE_DRAFT_MAX_IN_FLIGHT drafts at once a
    429, an unreachable judge a 503, an answer that is not usable criteria a 502."""
    who = editor(request)
    criteria = criteria_draft(
        team=who.team, user=who.user, system_prompt=payload.system_prompt, runs=payload.runs
    )
    return {"criteria": criteria}
