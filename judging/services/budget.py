"""Judge budgets: admit a worker's claimed evaluations against the team's budget, settle the
usage they recorded, and queue over-budget evaluations again when there is room.

The rule: a team may start judging while its settled usage plus what is reserved for the calls
in flight is below every limit it set (daily and monthly, tokens and USD, UTC periods). One
message's evaluations are admitted or refused together. Each process reserves slices of the
remaining budget on the team's period counters (``budget_counter_one_per_period``) with one
conditional UPDATE and draws messages from them in memory (judging.services.budget_slices), so
concurrent workers see each other's reservations and a budget is overrun by at most what the
calls in flight take beyond their estimates. Refused evaluations wait as ``over_budget``
(never failed); ``budgets_resume`` (the budget beat task, and every save of a budget) queues
them again once there is room. A reservation (``BudgetHold``) expires with the lease of the
evaluations it covers: a killed worker's is given back by ``budget_holds_expire``.

Usage is counted from the evaluations' recorded ``prompt_tokens``, ``completion_tokens`` and
``cost``; a call whose cost litellm does not know adds tokens but nothing to the USD figure.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from evalsite import rawsql
from evalsite.errors import FieldErrors
from evalsite.notify import evaluations_ended
from runs.models import AgentRun, Evaluation, Status
from runs.models.budget import LIMIT_FIELDS, BudgetCounter, BudgetHold, JudgeBudget
from runs.services.evaluations import evaluations_publish
from runs.services.run_state import runs_refresh
from teams.models import Team

from .budget_counters import evaluations_usage, hold_release
from .budget_slices import (
    Slice,
    counter,
    counter_row,
    period_starts,
    recorded_usage,
    slice_draw,
    slice_return,
    usd_per_token,
)
from .budget_wait import reached_limits
from .estimates import ANSWER_TOKENS_OVERHEAD, CHARS_PER_TOKEN

logger = logging.getLogger(__name__)


class BudgetValidationError(FieldErrors):
    pass


class Claimed(Protocol):
    """What judging.services.execute.Claim offers: the claimed row, its lease token, its plan."""

    @property
    def evaluation(self) -> Evaluation: ...

    @property
    def token(self) -> uuid.UUID: ...

    @property
    def plan(self) -> Any: ...


@dataclass
class Admission:
    """Which claims may be judged (the others are already parked over budget), and the holds
    to settle once they are written."""

    admitted: list[bool]
    # (the slice each team's claims drew from, the tokens they drew, their evaluations)
    holds: list[tuple[Slice, int, list[uuid.UUID]]] = field(default_factory=list)


# --- Admission (the worker's hot path) -------------------------------------------------------


def budget_admit(claims: Sequence[Claimed]) -> Admission | None:
    """Draw the claims' estimated usage from this process's slices of their teams' budgets
    (judging.services.budget_slices); park the claims of a team whose budget is reached as
    ``over_budget``. None when no claim's team has a budget (one query, nothing drawn)."""
    team_ids = {c.evaluation.team_id for c in claims}
    budgets = [b for b in rawsql.instances_in(JudgeBudget, "team_id", list(team_ids)) if b.is_set]
    if not budgets:
        return None
    admission = Admission(admitted=[True] * len(claims))
    now = timezone.now()
    for budget in budgets:
        mine = [i for i, c in enumerate(claims) if c.evaluation.team_id == budget.team_id]
        need = sum(_estimate(claims[i]) for i in mine)
        drawn = slice_draw(budget, need, now)
        if drawn is None:
            _park([claims[i] for i in mine])
            for i in mine:
                admission.admitted[i] = False
        else:
            admission.holds.append((drawn, need, [claims[i].evaluation.id for i in mine]))
    return admission


def _estimate(claim: Claimed) -> int:
    """The tokens the claim's calls will likely take: what the team's evaluations took on
    average lately in this process, else a quarter of the run's characters per call (cheap on
    purpose: the bound on an overrun is the calls in flight, whatever the estimate)."""
    average = _tokens_per_evaluation.get(claim.evaluation.team_id)
    if average is not None:
        return average
    run = claim.evaluation.run
    chars = len(run.task_text) + len(run.system_text) + len(run.output_text)
    return chars // CHARS_PER_TOKEN + ANSWER_TOKENS_OVERHEAD


# team id -> tokens per evaluation of its last settled message: sizes token reservations.
_tokens_per_evaluation: dict[Any, int] = {}


def _park(claims: Sequence[Claimed]) -> None:
    """running → over_budget, under the claims' lease (nothing was asked of the judge, so the
    attempt does not count). Waiting score calls are told at once (they answer 202)."""
    ids = [c.evaluation.id for c in claims]
    tokens = {c.token for c in claims}
    rubric_of = {c.evaluation.run_id: c.evaluation.run.rubric_id for c in claims}
    with transaction.atomic():
        # Lock order: runs, then their evaluations, as every writer does.
        run_ids = sorted(rubric_of, key=str)
        list(AgentRun.objects.select_for_update(no_key=True).filter(pk__in=run_ids).values("pk"))
        Evaluation.objects.filter(id__in=ids, status=Status.RUNNING, lease_token__in=tokens).update(
            status=Status.OVER_BUDGET,
            attempts=F("attempts") - 1,
            lease_token=None,
            lease_expires_at=None,
            enqueued_at=None,
            not_before=None,
        )
        runs_refresh(rubric_of)
        evaluations_ended(ids)


def budget_settle(
    admission: Admission, recorded: dict[Any, tuple[int, float | None] | None] | None = None
) -> None:
    """Return the messages' estimates to their slices with what their evaluations recorded
    (``recorded``: evaluation id -> the usage this attempt wrote, None where it wrote none;
    read from the evaluations when not given, e.g. after a crash); where that gave back room
    of a nearly reached budget, queue the team's parked work again (another process's unused
    slice may have been what parked it)."""
    for drawn, need, ids in admission.holds:
        rows = _usage_rows(ids, recorded)
        tokens, usd, priced = 0, 0.0, 0
        for used, cost in rows:
            tokens += used
            if cost is not None:
                usd += cost
                priced += used
        team_id = drawn.held.team_id
        if priced:
            usd_per_token[team_id] = usd / priced
        if tokens:
            _tokens_per_evaluation[team_id] = tokens // len(rows)
        if slice_return(drawn, need, tokens, usd) and (
            Evaluation.objects.filter(team_id=team_id, status=Status.OVER_BUDGET).exists()
        ):
            budgets_resume(team_id=team_id)


def _usage_rows(
    ids: list[uuid.UUID], recorded: dict[Any, tuple[int, float | None] | None] | None
) -> list[tuple[int, float | None]]:
    if recorded is None:
        return [(p + c, cost) for p, c, cost in evaluations_usage(ids)]
    return [usage for i in ids if (usage := recorded.get(i)) is not None]


def _release(hold: BudgetHold) -> bool:
    """Delete an expired hold and take its reservation off its counters (once: a hold its
    process settled meanwhile is not given back again)."""
    with transaction.atomic():
        return hold_release(hold, 0, 0.0)


# --- Beat: expiry and resuming ---------------------------------------------------------------


def budget_holds_expire(*, now: datetime | None = None) -> int:
    """Give back the reservations of workers that never settled them (killed mid-call)."""
    now = now or timezone.now()
    expired = list(BudgetHold.objects.filter(expires_at__lt=now)[:1000])
    return sum(_release(hold) for hold in expired)


def budget_has_room(budget: JudgeBudget | None, *, now: datetime) -> bool:
    """Whether the team may start judging now (the admission rule, read without reserving)."""
    return not reached_limits(budget, now=now)


def budgets_resume(*, team_id: Any = None, now: datetime | None = None) -> int:
    """Queue over-budget evaluations again for each team with room (at most
    EVALSITE_BUDGET_RESUME_MAX per team per call, oldest first); the number queued. Their
    re-score batches resume with them: the dispatcher counts over-budget work as in flight."""
    now = now or timezone.now()
    waiting = Evaluation.objects.filter(status=Status.OVER_BUDGET)
    if team_id is not None:
        waiting = waiting.filter(team_id=team_id)
    team_ids = set(waiting.values_list("team_id", flat=True).distinct())
    budgets = {b.team_id: b for b in JudgeBudget.objects.filter(team_id__in=team_ids)}
    queued = 0
    for team in team_ids:
        if budget_has_room(budgets.get(team), now=now):
            queued += _requeue(waiting.filter(team_id=team))
    return queued


def _requeue(waiting: Any) -> int:
    rows = list(
        waiting.order_by("created_at").values("id", "run_id", "run__rubric_id")[
            : settings.EVALSITE_BUDGET_RESUME_MAX
        ]
    )
    ids = [r["id"] for r in rows]
    with transaction.atomic():
        run_ids = sorted({r["run_id"] for r in rows}, key=str)
        list(AgentRun.objects.select_for_update(no_key=True).filter(pk__in=run_ids).values("pk"))
        moved = Evaluation.objects.filter(id__in=ids, status=Status.OVER_BUDGET).update(
            status=Status.QUEUED, enqueued_at=None
        )
        runs_refresh({r["run_id"]: r["run__rubric_id"] for r in rows})
    if moved:
        evaluations_publish([str(i) for i in ids])  # a failed send is resent by the sweeper
    return moved


# --- Setting a budget ------------------------------------------------------------------------


def budget_for(*, team: Team) -> JudgeBudget:
    """The team's budget (unsaved and without limits when it never set one)."""
    return JudgeBudget.objects.filter(team=team).first() or JudgeBudget(team=team)


def budget_update(*, team: Team, **limits: Any) -> JudgeBudget:
    """Set the team's four limits (None: no limit). Negative or non-finite values are a
    FieldErrors naming the field. Usage of the current periods is counted again from the
    evaluations, and over-budget work resumes at commit if the new budget has room."""
    errors = {}
    for name in LIMIT_FIELDS:
        value = limits.get(name)
        if value is not None and (not math.isfinite(value) or value < 0):
            errors[name] = "must be a number, 0 or more (leave it empty for no limit)"
    unknown = set(limits) - set(LIMIT_FIELDS)
    errors.update({name: "is not a budget limit" for name in sorted(unknown)})
    if errors:
        raise BudgetValidationError(errors)
    budget, _ = JudgeBudget.objects.update_or_create(
        team=team, defaults={name: limits.get(name) for name in LIMIT_FIELDS}
    )
    _recount(team.pk, timezone.now())
    transaction.on_commit(lambda: budgets_resume(team_id=team.pk), robust=True)
    return budget


def _recount(team_id: Any, now: datetime) -> None:
    """Usage is settled only while a team has a budget: count the current periods again."""
    for period, starts_on in period_starts(now).items():
        counter_row(team_id, period, starts_on)
        tokens, usd = recorded_usage(team_id, period, starts_on)
        counter(team_id, period, starts_on).update(tokens=tokens, usd=usd)


def budget_usage(*, team: Team, now: datetime | None = None) -> list[dict[str, Any]]:
    """For each period with a limit: its usage (settled, and reserved for calls in flight)
    against the limits, for the home page and GET /api/usage."""
    budget = JudgeBudget.objects.filter(team=team).first()
    if budget is None or not budget.is_set:
        return []
    now = now or timezone.now()
    out = []
    for period, starts_on in period_starts(now).items():
        max_tokens, max_usd = budget.limits(period)
        if max_tokens is None and max_usd is None:
            continue
        row = counter_row(team.pk, period, starts_on)
        out.append(
            {
                "period": str(period),
                "starts_on": starts_on,
                "tokens": row.tokens,
                "usd": row.usd,
                "reserved_tokens": max(row.reserved_tokens, 0),
                "token_limit": max_tokens,
                "usd_limit": max_usd,
                "token_percent": _percent(row.tokens, max_tokens),
                "usd_percent": _percent(row.usd, max_usd),
                "reached": _reached(row, budget, period),
            }
        )
    return out


def _percent(used: float, limit: float | None) -> float | None:
    if limit is None:
        return None
    if limit <= 0:
        return 100.0
    return round(min(used / limit, 1.0) * 100, 1)


def _reached(row: BudgetCounter, budget: JudgeBudget, period: str) -> bool:
    max_tokens, max_usd = budget.limits(period)
    over_tokens = max_tokens is not None and row.tokens + row.reserved_tokens >= max_tokens
    over_usd = max_usd is not None and row.usd + row.reserved_usd >= max_usd
    return over_tokens or over_usd
