"""The rubrics API's schemas (/api/rubrics) and the functions that fill its answers."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from ninja import Field, Schema
from pydantic import ConfigDict, Strict

from evalsite.schemas import Amount

from .models import DEFAULT_RUN_TOKEN_BUDGET, Rubric, RubricVersion
from .services import (
    MAX_INSTRUCTIONS_CHARS,
    MAX_RUN_TOKEN_BUDGET,
    MIN_RUN_TOKEN_BUDGET,
    JudgeParams,
)

SLUG_PATTERN = r"^[-a-zA-Z0-9_]+$"
StrategyChoice = Literal["batched", "independent"]
AlignmentChoice = Literal["off", "user", "system", "both"]
JudgeViewChoice = Literal["final", "conversation", "trajectory"]
# A whole number of tokens: "24000" (a string) and 24000.5 are refused, not coerced.
TokenBudget = Annotated[int, Strict()]
VIEW_HELP = (
    "What the judge sees of a run: final (task, system prompt and last answer), conversation "
    "(every user and assistant turn) or trajectory (every turn plus every tool call and its "
    "result). Saved with a version: a change is a new version."
)
BUDGET_HELP = (
    f"At most this many tokens of the rendered run ({MIN_RUN_TOKEN_BUDGET:,} to "
    f"{MAX_RUN_TOKEN_BUDGET:,}); over it, middle steps are elided with a marker. Saved with a "
    "version: a change is a new version."
)


INSTRUCTIONS_HELP = (
    f"Judge instructions (Markdown, at most {MAX_INSTRUCTIONS_CHARS:,} characters): shown to "
    "the judge in their own block after evalsite's fixed rules, which they cannot change. "
    "Saved with a version: a change is a new version."
)


SAMPLE_RATE_HELP = "Percent of matching runs judged at ingest, 0-100 (default 100)"
SAMPLE_FILTERS_HELP = (
    "What a run must match to be judged (AND): agents (a list), metadata_equals and "
    "metadata_contains ({key: value}), context_has (request-context keys); {} or null: all"
)


def InstructionsField(default: Any, prefix: str = "") -> Any:
    # The limit is the service's (a 422 on `instructions` naming it), not the schema's.
    return Field(default=default, max_length=100_000, description=prefix + INSTRUCTIONS_HELP)


def ViewField(default: Any, prefix: str = "") -> Any:
    return Field(default=default, description=prefix + VIEW_HELP)


def BudgetField(default: Any, prefix: str = "") -> Any:
    return Field(
        default=default,
        ge=MIN_RUN_TOKEN_BUDGET,
        le=MAX_RUN_TOKEN_BUDGET,
        description=prefix + BUDGET_HELP,
    )


# --- Schemas ----------------------------------------------------------------------------------


class CriterionOut(Schema):
    criterion_id: str = Field(description="Stable key: rewording keeps it, diffs follow it")
    description: str
    required: bool
    position: int


class ExampleOut(Schema):
    criterion_id: str
    excerpt: str
    satisfied: bool
    reason: str
    run_id: UUID | None = Field(description="The run it was taken from; null once deleted")


class VersionOut(Schema):
    id: UUID
    number: int
    judge_view: JudgeViewChoice
    run_token_budget: int
    instructions: str
    note: str
    created_at: datetime
    criteria: list[CriterionOut]
    examples: list[ExampleOut] = Field(description="Graded examples, in prompt order")


class ConnectionRef(Schema):
    id: UUID
    name: str


ConnectionChoice = Field(
    default=None,
    max_length=100,
    description="A judge connection of the team, by id or name; null = the deployment's judge",
)


class RubricOut(Schema):
    id: UUID
    slug: str
    name: str
    description: str
    judge_connection: ConnectionRef | None = Field(
        description="Where judge calls go; null = the deployment's judge"
    )
    judge_model: str = Field(
        description="litellm model string; empty = the connection's model or the deployment's"
    )
    judge_params: dict[str, Any]
    scale: float
    strategy: StrategyChoice
    alignment_mode: AlignmentChoice
    alignment_weights: dict[str, Any] | None
    sample_rate: float = Field(description="Percent of runs judged at ingest (0-100)")
    sample_filters: dict[str, Any] = Field(description="What a run must match to be judged")
    archived_at: datetime | None
    created_at: datetime
    updated_at: datetime
    current_version: VersionOut | None


class RubricPageOut(Schema):
    items: list[RubricOut]
    next_cursor: str | None


class VersionPageOut(Schema):
    items: list[VersionOut]
    next_cursor: str | None


class TrendPointOut(Schema):
    day: date = Field(description="UTC day the runs were created on")
    runs: int = Field(description="Runs with a result judged on this version, created that day")
    pass_rate: float = Field(ge=0, le=1, description="Share of those runs that passed")


class TrendSeriesOut(Schema):
    version: int = Field(description="Rubric version number; one series per version")
    took_over: date | None = Field(
        description="UTC day the version was saved, when inside the window and it replaced an "
        "earlier version"
    )
    points: list[TrendPointOut] = Field(description="Days with a result, oldest first")


class TrendOut(Schema):
    days: int
    series: list[TrendSeriesOut] = Field(description="Oldest version first")


class CriterionEdit(Schema):
    model_config = ConfigDict(extra="forbid")
    # Longer than CRITERION_MAX_CHARS is refused by the service with the one message every
    # surface gives; this bound only caps the work of parsing.
    description: str = Field(min_length=1, max_length=100_000)
    required: bool = True
    criterion_id: str | None = Field(
        default=None,
        max_length=32,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="Keep this key (e.g. when rewording); omitted = matched by text or new",
    )


CriteriaValue = list[CriterionEdit] | str


class RubricIn(Schema):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    slug: str | None = Field(default=None, max_length=100, pattern=SLUG_PATTERN)
    description: str = Field(default="", max_length=20_000)
    criteria: CriteriaValue | None = Field(
        default=None, description="A list of {description, required} or text, one per line"
    )
    judge_model: str = Field(default="", max_length=200)
    judge_connection: str | None = ConnectionChoice
    judge_params: JudgeParams | None = None
    scale: float = Field(default=1.0, ge=0, le=1_000_000)
    strategy: StrategyChoice = "batched"
    alignment_mode: AlignmentChoice = "off"
    alignment_weights: dict[str, Any] | None = None
    judge_view: JudgeViewChoice = ViewField("final")
    run_token_budget: TokenBudget = BudgetField(DEFAULT_RUN_TOKEN_BUDGET)
    instructions: str = InstructionsField("")
    sample_rate: Amount = Field(default=100.0, description=SAMPLE_RATE_HELP)
    sample_filters: dict[str, Any] | None = Field(default=None, description=SAMPLE_FILTERS_HELP)


UNSET: Any = None


class RubricPatch(Schema):
    """Only the fields sent change. Criteria change through PUT /criteria (a new version)."""

    model_config = ConfigDict(extra="forbid")
    # Defaults of None with non-null types: omitted means unchanged, an explicit null is a 422
    # (pydantic does not validate defaults). UNSET is None, typed so mypy accepts it.
    name: str = Field(default=UNSET, min_length=1, max_length=200)
    description: str = Field(default=UNSET, max_length=20_000)
    judge_model: str = Field(default=UNSET, max_length=200)
    judge_connection: str | None = ConnectionChoice
    judge_params: JudgeParams = Field(default=UNSET)
    scale: float = Field(default=UNSET, ge=0, le=1_000_000)
    strategy: StrategyChoice = Field(default=UNSET)
    alignment_mode: AlignmentChoice = Field(default=UNSET)
    alignment_weights: dict[str, Any] | None = Field(default=None, description="null = defaults")
    judge_view: JudgeViewChoice = ViewField(UNSET, "Omitted = unchanged. ")
    run_token_budget: TokenBudget = BudgetField(UNSET, "Omitted = unchanged. ")
    instructions: str = InstructionsField(UNSET, "Omitted = unchanged. ")
    sample_rate: Amount = Field(default=UNSET, description=SAMPLE_RATE_HELP)
    sample_filters: dict[str, Any] | None = Field(default=None, description=SAMPLE_FILTERS_HELP)


class CriteriaIn(Schema):
    model_config = ConfigDict(extra="forbid")
    criteria: CriteriaValue = Field(description="A list of {description, required} or text")
    note: str = Field(default="", max_length=300, description="Why this version (shown in history)")
    judge_view: JudgeViewChoice = ViewField(UNSET, "Omitted = the current version's. ")
    run_token_budget: TokenBudget = BudgetField(UNSET, "Omitted = the current version's. ")
    instructions: str = InstructionsField(UNSET, "Omitted = the current version's. ")


def version_out(version: RubricVersion | None) -> dict[str, Any] | None:
    if version is None:
        return None
    criteria = [
        {
            "criterion_id": c.key,
            "description": c.description,
            "required": c.required,
            "position": c.position,
        }
        for c in version.criteria.all()
    ]
    return {
        "id": version.id,
        "number": version.number,
        "judge_view": version.judge_view,
        "run_token_budget": version.run_token_budget,
        "instructions": version.instructions,
        "note": version.note,
        "created_at": version.created_at,
        "criteria": criteria,
        "examples": [
            {
                "criterion_id": e.criterion_key,
                "excerpt": e.excerpt,
                "satisfied": e.satisfied,
                "reason": e.reason,
                "run_id": e.run_id,
            }
            for e in version.examples.all()
        ],
    }


def rubric_out(rubric: Rubric) -> dict[str, Any]:
    fields = [
        "id",
        "slug",
        "name",
        "description",
        "judge_model",
        "judge_params",
        "scale",
        "strategy",
        "alignment_mode",
        "alignment_weights",
        "sample_rate",
        "sample_filters",
        "archived_at",
        "created_at",
        "updated_at",
    ]
    connection = rubric.judge_connection
    return {f: getattr(rubric, f) for f in fields} | {
        "current_version": version_out(rubric.current_version),
        "judge_connection": {"id": connection.pk, "name": connection.name} if connection else None,
    }
