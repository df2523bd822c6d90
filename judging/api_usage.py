"""Judge budgets and usage over the API: /api/team/budget and /api/usage."""

from __future__ import annotations

from datetime import date
from typing import Any
from uuid import UUID

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from pydantic import ConfigDict

from evalsite.schemas import Amount, BigCount, with_errors
from runs.models.budget import JudgeBudget
from teams.api import caller, editor

from .selectors import usage_report
from .services.budget import budget_for, budget_update, budget_usage
from .services.budget_wait import budget_below_use

router = Router(tags=["usage"])


class BudgetIn(Schema):
    """The four limits; an absent or null one is no limit. USD counts only calls whose cost is
    known."""

    model_config = ConfigDict(extra="forbid")

    daily_tokens: BigCount | None = None
    daily_usd: Amount | None = None
    monthly_tokens: BigCount | None = None
    monthly_usd: Amount | None = None


class PeriodUsageOut(Schema):
    period: str
    starts_on: date
    tokens: int
    usd: float
    reserved_tokens: int
    token_limit: int | None
    usd_limit: float | None
    token_percent: float | None
    usd_percent: float | None
    reached: bool


class BudgetOut(Schema):
    daily_tokens: int | None
    daily_usd: float | None
    monthly_tokens: int | None
    monthly_usd: float | None
    usage: list[PeriodUsageOut]
    warnings: list[str] = Field(
        default_factory=list,
        description="PUT only: one line per limit saved below what the team already used in "
        "its period (new evaluations wait until the period ends or the budget is raised)",
    )


def budget_out(budget: JudgeBudget) -> dict[str, Any]:
    return {
        "daily_tokens": budget.daily_tokens,
        "daily_usd": budget.daily_usd,
        "monthly_tokens": budget.monthly_tokens,
        "monthly_usd": budget.monthly_usd,
        "usage": budget_usage(team=budget.team),
    }


# Operation ids as they were when this router was runs.api_usage (the OpenAPI document is a
# contract: generated clients name their methods after them).
@router.get(
    "/team/budget",
    response=with_errors({200: BudgetOut}),
    operation_id="runs_api_usage_budget_get",
)
def budget_get(request: HttpRequest):
    """The team's judge budget and its usage in the current UTC day and month."""
    return budget_out(budget_for(team=caller(request).team))


@router.put(
    "/team/budget",
    response=with_errors({200: BudgetOut}),
    operation_id="runs_api_usage_budget_put",
)
def budget_put(request: HttpRequest, payload: BudgetIn):
    """Set the team's judge budget (all four limits at once). A negative limit is a 422 naming
    it. Evaluations waiting over budget are queued again at once if the new budget has room.
    A limit below what the team already used in its period is saved, and `warnings` says so."""
    team = editor(request).team
    limits = payload.model_dump()
    budget = budget_update(team=team, **limits)
    # Saved as asked (an API caller means it), with a warning when below today's use.
    return budget_out(budget) | {"warnings": budget_below_use(team_id=team.pk, limits=limits)}


class UsageQuery(Schema):
    model_config = ConfigDict(extra="forbid")

    start: date | None = None
    end: date | None = None


class UsageTotals(Schema):
    evaluations: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    tokens: int
    cost: float | None
    unpriced: int


class DayUsageOut(UsageTotals):
    day: date


class RubricUsageOut(UsageTotals):
    rubric_id: UUID | None
    rubric_name: str | None


class ModelUsageOut(UsageTotals):
    judge_model: str


class UsageOut(Schema):
    start: date
    end: date
    days: list[DayUsageOut]
    rubrics: list[RubricUsageOut]
    models: list[ModelUsageOut]
    budget: list[PeriodUsageOut]


@router.get(
    "/usage", response=with_errors({200: UsageOut}), operation_id="runs_api_usage_usage_get"
)
def usage_get(request: HttpRequest, q: Query[UsageQuery]):
    """Judge usage per UTC day, per rubric and per judge model, of the evaluations created
    from `start` to `end` (inclusive; default the last 30 days; at most 92 days, else a 422
    naming the field). `cost` sums the calls whose cost is known; `unpriced` counts the
    evaluations whose cost is unknown (their tokens are counted, their cost is not)."""
    team = caller(request).team
    report = usage_report(team=team, start=q.start, end=q.end)
    return {
        "start": report.start,
        "end": report.end,
        "days": report.days,
        "rubrics": report.rubrics,
        "models": report.models,
        "budget": budget_usage(team=team),
    }
