"""Budget slices: a process reserves a slice of a team's remaining budget at once and admits its
messages from it in memory, so the team's counter rows are written once per slice instead of
twice per message (judging.services.budget holds the rules; docs/budgets.md the user's view).

A slice is one ``BudgetHold`` row: ``tokens`` (and the USD they likely cost) reserved on the
team's day and month counters by one conditional UPDATE, granted only while both are below
every limit, under the counters' row locks. Messages draw their estimate from it under a lock
and add the usage they recorded to it. A slice retires when it cannot cover the next message,
after ``EVALSITE_BUDGET_SLICE_SECONDS``, when the UTC day changes or when the team's budget is
saved; it is settled (its hold deleted, its reservation taken off the counters and its usage
added, in one transaction) when its last message is: a process with nothing in flight for a
team holds nothing of its budget.

Size: a quarter of the room under the tightest limit, at most ``EVALSITE_BUDGET_SLICE_TOKENS``,
at least the message that asks. So slices never reserve past a limit, except the one message
that finds less room than it needs (as a message-sized reservation would), and a budget is
overrun only by what the calls in flight take beyond their estimates.
"""

from __future__ import annotations

import threading
import time as monotonic
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Sum

from runs.models import Evaluation
from runs.models.budget import BudgetCounter, BudgetPeriod, JudgeBudget

from .budget_counters import Held, counters_reserve, hold_insert, hold_release

# --- Periods and counters --------------------------------------------------------------------


def period_starts(now: datetime) -> dict[str, date]:
    today = now.astimezone(UTC).date()
    return {BudgetPeriod.DAY: today, BudgetPeriod.MONTH: today.replace(day=1)}


def period_bounds(period: str, starts_on: date) -> tuple[datetime, datetime]:
    start = datetime.combine(starts_on, time.min, tzinfo=UTC)
    if period == BudgetPeriod.DAY:
        return start, start + timedelta(days=1)
    following = (starts_on.replace(day=28) + timedelta(days=4)).replace(day=1)
    return start, datetime.combine(following, time.min, tzinfo=UTC)


UsageSource = Callable[[Any, datetime, datetime], tuple[int, float]]
"""Takes (team id, start, end) and answers the (tokens, USD) of the team's judge calls made
outside evaluations that ended in [start, end): reviews' suggested edits register one."""

_usage_sources: list[UsageSource] = []


def usage_source_register(source: UsageSource) -> None:
    """Count ``source``'s judge usage whenever a period's usage is counted from the records
    (a new counter, a saved budget). Registering the same function again changes nothing."""
    if source not in _usage_sources:
        _usage_sources.append(source)


def recorded_usage(team_id: Any, period: str, starts_on: date) -> tuple[int, float]:
    """(tokens, USD) the team's evaluations that ended in the period recorded, and the judge
    calls of the registered usage sources."""
    start, end = period_bounds(period, starts_on)
    row = Evaluation.objects.filter(
        team_id=team_id, finished_at__gte=start, finished_at__lt=end
    ).aggregate(prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens"), usd=Sum("cost"))
    tokens, usd = (row["prompt"] or 0) + (row["completion"] or 0), row["usd"] or 0.0
    for source in _usage_sources:
        more_tokens, more_usd = source(team_id, start, end)
        tokens, usd = tokens + more_tokens, usd + more_usd
    return tokens, usd


def usage_record(team_id: Any, tokens: int, usd: float | None, *, now: datetime) -> None:
    """Add a judge call made outside evaluations (``usd`` None: cost unknown, tokens only) to
    the team's day and month counters, made first if missing (from the records, which already
    hold this call when its row is written first: then nothing is added twice)."""
    starts = period_starts(now)
    for period, starts_on in starts.items():
        if not counter(team_id, period, starts_on).exists():
            counter_create(team_id, period, starts_on)
            continue
        counter(team_id, period, starts_on).update(
            tokens=F("tokens") + tokens, usd=F("usd") + (usd or 0.0)
        )


def counter_create(team_id: Any, period: str, starts_on: date) -> None:
    """Make the period's counter with the usage already recorded in it (if nobody has)."""
    tokens, usd = recorded_usage(team_id, period, starts_on)
    try:
        with transaction.atomic():
            BudgetCounter.objects.create(
                team_id=team_id, period=period, starts_on=starts_on, tokens=tokens, usd=usd
            )
    except IntegrityError:  # another process made it first
        pass


def counter(team_id: Any, period: str, starts_on: date) -> Any:
    return BudgetCounter.objects.filter(team_id=team_id, period=period, starts_on=starts_on)


def counter_row(team_id: Any, period: str, starts_on: date) -> BudgetCounter:
    found = counter(team_id, period, starts_on).first()
    if found is None:
        counter_create(team_id, period, starts_on)
        found = counter(team_id, period, starts_on).get()
    return found


def _counters_locked(team_id: Any, starts: dict[str, date]) -> dict[str, BudgetCounter]:
    """The team's counters of these periods, made if missing, row-locked (inside a
    transaction) so that two slices are not sized from the same room."""

    def read() -> dict[str, BudgetCounter]:
        rows = BudgetCounter.objects.select_for_update().filter(
            team_id=team_id, starts_on__in=set(starts.values())
        )
        return {c.period: c for c in rows if c.starts_on == starts[c.period]}

    rows = read()
    if len(rows) < len(starts):
        for period, starts_on in starts.items():
            if period not in rows:
                counter_create(team_id, period, starts_on)
        rows = read()
    return rows


# --- Slices ----------------------------------------------------------------------------------

# team id -> USD per token of its last settled calls of known cost (sizes USD reservations).
usd_per_token: dict[Any, float] = {}


@dataclass(eq=False)
class Slice:
    held: Held
    budget_saved: datetime | None  # JudgeBudget.updated_at when it was granted
    retires_at: float  # time.monotonic()
    drawn: int = 0  # estimates of the messages admitted from it and not settled yet
    used_tokens: int = 0  # what its settled messages recorded
    used_usd: float = 0.0
    retired: bool = False
    tight: bool = False  # sized by the room left under a limit, not by the cap

    def covers(self, budget: JudgeBudget, need: int, starts: dict[str, date]) -> bool:
        return (
            not self.retired
            and monotonic.monotonic() < self.retires_at
            and self.held.day == starts[BudgetPeriod.DAY]
            and self.held.month == starts[BudgetPeriod.MONTH]
            and budget.updated_at == self.budget_saved
            and self.held.tokens - self.drawn - self.used_tokens >= need
        )


_lock = threading.Lock()
_active: dict[Any, Slice] = {}


def slice_draw(budget: JudgeBudget, need: int, now: datetime) -> Slice | None:
    """Draw ``need`` tokens for a message from this process's slice of the team's budget,
    taking a new slice when that one cannot cover it; None when the budget is reached."""
    starts = period_starts(now)
    team_id = budget.team_id
    with _lock:
        current = _active.get(team_id)
        if current is not None and current.covers(budget, need, starts):
            current.drawn += need
            return current
        if current is not None:
            # An active slice always has a message in flight (the last one settles it): the
            # one that ends last settles it.
            current.retired = True
            del _active[team_id]
        granted = _grant(budget, need, starts, now)
        if granted is not None:
            granted.drawn = need
            _active[team_id] = granted
    return granted


def slice_return(taken: Slice, need: int, tokens: int, usd: float) -> bool:
    """A message drawn from ``taken`` is over: give back its estimate, count what it used, and
    settle the slice if no message of it is in flight any more. Whether that gave back room
    of a budget that was nearly reached (work parked meanwhile may fit now)."""
    with _lock:
        taken.drawn -= need
        taken.used_tokens += tokens
        taken.used_usd += usd
        if taken.drawn > 0:
            return False
        taken.retired = True
        if _active.get(taken.held.team_id) is taken:
            del _active[taken.held.team_id]
    with transaction.atomic():
        hold_release(taken.held, taken.used_tokens, taken.used_usd)
    return taken.tight and taken.used_tokens < taken.held.tokens


def slices_forget() -> None:
    """Drop this process's slices without settling them (tests: a new database)."""
    with _lock:
        _active.clear()


def _grant(budget: JudgeBudget, need: int, starts: dict[str, date], now: datetime) -> Slice | None:
    team_id = budget.team_id
    day, month = starts[BudgetPeriod.DAY], starts[BudgetPeriod.MONTH]
    per_token = usd_per_token.get(team_id, 0.0)
    limits = {p: budget.limits(p) for p in starts}
    with transaction.atomic():
        room = _room(_counters_locked(team_id, starts), limits, per_token)
        if room <= 0:
            return None
        cap = settings.EVALSITE_BUDGET_SLICE_TOKENS
        tokens = max(need, min(cap, room // 4))
        usd = tokens * per_token
        if counters_reserve(team_id, day, month, limits, tokens, usd) != 2:
            transaction.set_rollback(True)
            return None
        held = Held(uuid.uuid4(), team_id, day, month, tokens, usd)
        hold_insert(held, now + timedelta(seconds=settings.EVALSITE_LEASE_SECONDS))
    return Slice(
        held=held,
        budget_saved=budget.updated_at,
        retires_at=monotonic.monotonic() + settings.EVALSITE_BUDGET_SLICE_SECONDS,
        tight=room < cap * 4,
    )


def _room(rows: dict[str, BudgetCounter], limits: dict[str, tuple], per_token: float) -> int:
    """Tokens left under the tightest limit (a USD limit in tokens at the team's recent price;
    with no known price, a USD limit not reached yet leaves the token cap as the room)."""
    room = settings.EVALSITE_BUDGET_SLICE_TOKENS * 4
    for period, (max_tokens, max_usd) in limits.items():
        row = rows[period]
        if max_tokens is not None:
            room = min(room, max_tokens - row.tokens - row.reserved_tokens)
        if max_usd is not None:
            left = max_usd - row.usd - row.reserved_usd
            if left <= 0:
                return 0
            if per_token > 0:
                room = min(room, max(int(left / per_token), 1))
    return room
