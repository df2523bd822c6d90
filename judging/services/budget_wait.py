"""What a team waiting for its judge budget is told, and what saving a budget would refuse.

One truth for every surface (runs list, run page, home, batch page, the score answer's
``detail``, the CLI that prints it): an over-budget evaluation reads "Waiting for budget —
resumes <when>", where <when> follows the budget rules of judging.services.budget: a reached
limit frees up at the start of the next UTC day or month (the budget beat task queues the work
again then), a reached limit of 0 only when the budget is raised, and a budget with room
again at once (within one beat).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from runs.models.budget import BudgetCounter, BudgetPeriod, JudgeBudget

from .budget_slices import period_bounds, period_starts, recorded_usage

WAITING = "Waiting for budget"


@dataclass(frozen=True)
class Reached:
    """One period whose limit is reached: when it ends, and whether its limit is 0 (a new
    period does not help then)."""

    period: str
    ends_at: datetime
    zero_limit: bool


def reached_limits(budget: JudgeBudget | None, *, now: datetime) -> list[Reached]:
    """The periods whose usage (settled plus reserved for calls in flight) is at or above a
    limit: the admission rule (judging.services.budget.budget_has_room), read without reserving."""
    if budget is None or not budget.is_set:
        return []
    starts = period_starts(now)
    rows = {
        c.period: c
        for c in BudgetCounter.objects.filter(
            team_id=budget.team_id, starts_on__in=set(starts.values())
        )
        if c.starts_on == starts[c.period]
    }
    out = []
    for period in (BudgetPeriod.DAY, BudgetPeriod.MONTH):
        max_tokens, max_usd = budget.limits(period)
        row = rows.get(period)
        tokens = (row.tokens + row.reserved_tokens) if row else 0
        usd = (row.usd + row.reserved_usd) if row else 0.0
        over_tokens = max_tokens is not None and tokens >= max_tokens
        over_usd = max_usd is not None and usd >= max_usd
        if over_tokens or over_usd:
            zero = (over_tokens and max_tokens == 0) or (over_usd and max_usd == 0)
            out.append(Reached(str(period), period_bounds(period, starts[period])[1], zero))
    return out


@dataclass(frozen=True)
class BudgetWait:
    """When a team's over-budget work resumes: at ``resumes_at`` (UTC), only when the budget
    is raised (``raise_needed``), or at once (neither: the budget has room again)."""

    resumes_at: datetime | None
    raise_needed: bool

    @property
    def when(self) -> str:
        if self.raise_needed:
            return "when the budget is raised"
        if self.resumes_at is None:
            return "shortly (the budget has room again)"
        at = self.resumes_at
        return f"{at.day} {at:%b %Y}, {at:%H:%M} UTC"

    @property
    def label(self) -> str:
        return f"{WAITING} — resumes {self.when}"


def budget_wait(*, team_id: Any, now: datetime | None = None) -> BudgetWait:
    """When the team's over-budget evaluations resume (two queries)."""
    now = now or timezone.now()
    reached = reached_limits(JudgeBudget.objects.filter(team_id=team_id).first(), now=now)
    if any(r.zero_limit for r in reached):
        return BudgetWait(None, raise_needed=True)
    return BudgetWait(max((r.ends_at for r in reached), default=None), raise_needed=False)


# --- Saving a budget below what is already used ---------------------------------------------

LIMIT_WORDS = {
    "daily_tokens": ("day", "daily token budget", "today", "tokens"),
    "daily_usd": ("day", "daily USD budget", "today", "usd"),
    "monthly_tokens": ("month", "monthly token budget", "this month", "tokens"),
    "monthly_usd": ("month", "monthly USD budget", "this month", "usd"),
}


def budget_below_use(
    *, team_id: Any, limits: dict[str, Any], now: datetime | None = None
) -> list[str]:
    """One warning per limit in ``limits`` set below what the team's evaluations already
    recorded in its period (UTC): saving it parks new evaluations at once until the period
    ends. Empty when every limit is at or above the use (or unset)."""
    now = now or timezone.now()
    starts = period_starts(now)
    used: dict[str, tuple[int, float]] = {}
    warnings = []
    for name, (period, words, when, unit) in LIMIT_WORDS.items():
        limit = limits.get(name)
        if limit is None:
            continue
        if period not in used:
            used[period] = recorded_usage(team_id, period, starts[period])
        tokens, usd = used[period]
        use = tokens if unit == "tokens" else usd
        if limit < use:
            shown = (
                f"of {limit:,} is below the {tokens:,} tokens already used {when}"
                if unit == "tokens"
                else f"of ${limit:,.2f} is below the ${usd:,.2f} already used {when}"
            )
            warnings.append(
                f"The {words} {shown}: new evaluations wait until the "
                f"{'next UTC day' if period == 'day' else 'next UTC month'} or until the budget "
                "is raised."
            )
    return warnings
