"""The judge budget's counter and hold writes (judging.services.budget_slices draws from them): each
a compare-and-set through the ORM, so two workers never reserve past a limit together."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from django.db.models import F, Q

from runs.models import Evaluation
from runs.models.budget import BudgetCounter, BudgetHold, BudgetPeriod


@dataclass(frozen=True)
class Held:
    """A reservation (a BudgetHold row) as the worker that made it knows it."""

    pk: uuid.UUID
    team_id: Any
    day: date
    month: date
    tokens: int
    usd: float


def _periods(team_id: Any, day: date, month: date, limits: dict[str, tuple]) -> Any:
    """The team's day and month counters, each only while below ``limits`` (period -> (max
    tokens, max usd), None for no limit), for an UPDATE's WHERE."""
    below = Q()
    for period, starts_on in ((BudgetPeriod.DAY, day), (BudgetPeriod.MONTH, month)):
        clause = Q(period=period, starts_on=starts_on)
        max_tokens, max_usd = limits.get(period, (None, None))
        if max_tokens is not None:
            clause &= Q(tokens_taken__lt=max_tokens)
        if max_usd is not None:
            clause &= Q(usd_taken__lt=max_usd)
        below |= clause
    return (
        BudgetCounter.objects.alias(
            tokens_taken=F("tokens") + F("reserved_tokens"), usd_taken=F("usd") + F("reserved_usd")
        )
        .filter(team_id=team_id)
        .filter(below)
    )


def counters_reserve(
    team_id: Any, day: date, month: date, limits: dict[str, tuple], tokens: int, usd: float
) -> int:
    """Add the reservation to the counters that are below their limits: how many were (2 is
    an admission)."""
    return _periods(team_id, day, month, limits).update(
        reserved_tokens=F("reserved_tokens") + tokens, reserved_usd=F("reserved_usd") + usd
    )


def hold_insert(held: Held, expires_at: datetime) -> None:
    BudgetHold.objects.create(
        id=held.pk,
        team_id=held.team_id,
        day=held.day,
        month=held.month,
        tokens=held.tokens,
        usd=held.usd,
        expires_at=expires_at,
    )


def hold_release(held: Any, tokens: int, usd: float) -> bool:
    """Delete the hold; take its reservation off its counters if it was still there, and add
    ``tokens`` and ``usd`` as used. Call inside a transaction. Whether the hold was there."""
    deleted, _ = BudgetHold.objects.filter(pk=held.pk).delete()
    if not deleted and not (tokens or usd):
        return False
    back_tokens, back_usd = (held.tokens, held.usd) if deleted else (0, 0.0)
    _periods(held.team_id, held.day, held.month, {}).update(
        tokens=F("tokens") + tokens,
        usd=F("usd") + usd,
        reserved_tokens=F("reserved_tokens") - back_tokens,
        reserved_usd=F("reserved_usd") - back_usd,
    )
    return bool(deleted)


def evaluations_usage(ids: list[uuid.UUID]) -> list[tuple[int, int, float | None]]:
    """(prompt tokens, completion tokens, cost) each of these evaluations recorded."""
    if not ids:
        return []
    rows = Evaluation.objects.filter(id__in=ids).values_list(
        "prompt_tokens", "completion_tokens", "cost"
    )
    return list(rows)
