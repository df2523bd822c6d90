"""Judge budgets: a team's limits, and the per-period counters that enforce them.

A worker reserves an estimate of a message's judge tokens (and USD) on the team's counter rows
for the current day and month with one conditional UPDATE each (judging.services.budget), so many
workers cannot together overrun a budget by more than the calls they have in flight. The
reservation is a ``BudgetHold`` row that expires with the evaluations' lease: a worker killed
mid-call leaks nothing for longer than that (the budget beat task gives expired holds back).
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from teams.models import Team

LIMIT_FIELDS = ("daily_tokens", "daily_usd", "monthly_tokens", "monthly_usd")


class BudgetPeriod(models.TextChoices):
    DAY = "day", "Day"
    MONTH = "month", "Month"


class JudgeBudget(models.Model):
    """A team's judge budget: any of the four limits, NULL for "no limit"."""

    team = models.OneToOneField(
        Team, primary_key=True, on_delete=models.CASCADE, related_name="judge_budget"
    )
    daily_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    daily_usd = models.FloatField(null=True, blank=True)
    monthly_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    monthly_usd = models.FloatField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(**{f"{name}__isnull": True}) | Q(**{f"{name}__gte": 0}),
                name=f"judge_budget_{name}_not_negative",
            )
            for name in LIMIT_FIELDS
        ]

    def __str__(self) -> str:
        return f"judge budget of {self.team_id}"

    def limits(self, period: str) -> tuple[int | None, float | None]:
        """(tokens, usd) limits of ``period``; None where there is none."""
        if period == BudgetPeriod.DAY:
            return self.daily_tokens, self.daily_usd
        return self.monthly_tokens, self.monthly_usd

    @property
    def is_set(self) -> bool:
        return any(getattr(self, name) is not None for name in LIMIT_FIELDS)


class BudgetCounter(models.Model):
    """A team's judge usage in one day or month (UTC) and what workers have reserved of it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    period = models.CharField(max_length=5, choices=BudgetPeriod.choices)
    starts_on = models.DateField()
    # Settled usage: the recorded tokens and cost of the evaluations judged in the period.
    # Calls whose cost is unknown add tokens but no USD.
    tokens = models.BigIntegerField(default=0)
    usd = models.FloatField(default=0.0)
    # Estimates of the calls in flight (the live BudgetHold rows).
    reserved_tokens = models.BigIntegerField(default=0)
    reserved_usd = models.FloatField(default=0.0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["team", "period", "starts_on"], name="budget_counter_one_per_period"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.period} from {self.starts_on}: {self.tokens} tokens"


class BudgetHold(models.Model):
    """What one worker reserved for the evaluations of one message it is judging."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    # The counters reserved on: the team's day and month (their ``starts_on``).
    day = models.DateField()
    month = models.DateField()
    tokens = models.BigIntegerField()
    usd = models.FloatField()
    expires_at = models.DateTimeField()

    class Meta:
        indexes = [
            # The budget beat task: holds of workers that died before settling.
            models.Index(fields=["expires_at"], name="budget_hold_expiry"),
        ]

    def __str__(self) -> str:
        return f"hold of {self.tokens} tokens until {self.expires_at}"
