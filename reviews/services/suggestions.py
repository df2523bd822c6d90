"""Suggested criterion edits: asked of the judge model when reviewers keep disagreeing with it.

``suggestions_request`` checks that a criterion has enough disagreeing labels (the rubric's own
threshold, else EVALSITE_SUGGEST_MIN_LABELS) and that the team's judge budget has room, stores a
pending suggestion with the runs it rests on, and queues ``reviews.tasks.suggestion_generate``.
The task (``suggestion_generate``) asks the judge outside any transaction, validates the answer
(judge_engine.suggest), and writes the edit, or the reason it failed, in one short transaction
with the tokens and cost it took, which count against the team's budget like evaluations do
(judging.services.budget_slices.usage_record; recounts read them through a usage source).

Nothing is applied by itself: ``suggestion_accept`` puts the edit into a draft version and starts
a comparison of the current version with it on the labelled runs, in one transaction (a refused
draft or comparison leaves nothing behind); publishing goes through the publishing gate.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from celery import signature
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from evalsite.errors import Conflict, FieldErrors
from judge_engine import JudgeCall, JudgeError, TransientJudgeError
from judge_engine.redact import tenant_error
from judge_engine.suggest import SuggestedEdit, suggest_edit, suggest_messages
from judging.judge_runtime import run_judged
from judging.services.budget import budget_for
from judging.services.budget_slices import usage_record
from judging.services.budget_wait import reached_limits
from rubrics.judging import judge_config_for, judge_for
from rubrics.models import Criterion, Rubric
from runs.models import Evaluation
from teams.models import Team

from ..models import Suggestion, SuggestionStatus
from ..selectors.suggestions import (
    disagreement_run_ids,
    disagreements_by_criterion,
    disagreements_for_prompt,
)

logger = logging.getLogger(__name__)

SUGGEST_TASK = "reviews.tasks.suggestion_generate"
# A task that took a suggestion and died (killed worker) leaves it pending: after this long a
# redelivery may take it again. Longer than the task's time limit.
STALE_SECONDS = 600
# Criteria one request without a criterion_id asks about.
MAX_PER_REQUEST = 10


class SuggestionValidationError(FieldErrors):
    """A suggestion cannot be asked or applied as requested; ``errors`` names the field."""


class SuggestionConflict(Conflict):
    """The suggestion's state (or the rubric's) does not allow the action."""


# --- Asking ----------------------------------------------------------------------------------


def budget_problem(team_id: Any, now: datetime) -> str:
    reached = reached_limits(budget_for(team=Team(pk=team_id)), now=now)
    if not reached:
        return ""
    periods = " and ".join(sorted({r.period for r in reached}))
    return (
        f"the team's judge budget is reached (this {periods}'s limit): raise it in team "
        "settings or ask again when the period ends"
    )


def _targets(rubric: Rubric, criterion_id: str | None) -> list[str]:
    rows = disagreements_by_criterion(rubric=rubric)
    if not rows:
        raise SuggestionValidationError({"rubric": "this rubric has no criteria yet"})
    if criterion_id is not None:
        row = next((r for r in rows if r.key == criterion_id), None)
        if row is None:
            number = rubric.current_version.number  # type: ignore[union-attr]
            raise SuggestionValidationError(
                {"criterion_id": f"no criterion {criterion_id!r} in v{number}, the current version"}
            )
        if not row.enough:
            raise SuggestionValidationError(
                {
                    "criterion_id": f"{row.key} has {row.disagreeing} label"
                    f"{'s' if row.disagreeing != 1 else ''} that disagree with the judge; "
                    f"{row.needed} are needed before an edit is suggested"
                }
            )
        return [row.key]
    # The most disputed first, at most MAX_PER_REQUEST: one request queues a bounded number of
    # judge calls.
    ranked = sorted((r for r in rows if r.enough), key=lambda r: -r.disagreeing)
    enough = [r.key for r in ranked[:MAX_PER_REQUEST]]
    if not enough:
        counts = ", ".join(f"{r.key}: {r.disagreeing}" for r in rows)
        raise SuggestionValidationError(
            {
                "criterion_id": f"no criterion has {rows[0].needed} labels that disagree with "
                f"the judge yet ({counts}): review more runs first"
            }
        )
    return enough


def suggestions_request(
    *, team: Team, rubric: Rubric, criterion_id: str | None = None, user: Any = None
) -> list[Suggestion]:
    """Ask for an edit of the criterion (or of the criteria with enough disagreeing labels, the
    most disputed MAX_PER_REQUEST): pending suggestions, queued once this commits. A criterion whose suggestion is still
    pending answers that one again. Errors name the field (422) or the budget (409)."""
    if problem := budget_problem(team.pk, timezone.now()):
        raise SuggestionConflict(problem)
    keys = _targets(rubric, criterion_id)
    version = rubric.current_version
    out = []
    with transaction.atomic():
        for criterion in Criterion.objects.filter(version=version, key__in=keys).order_by(
            "position"
        ):
            out.append(_pending(team, rubric, criterion, user))
    return out


def _pending(team: Team, rubric: Rubric, criterion: Criterion, user: Any) -> Suggestion:
    found = Suggestion.objects.filter(
        rubric=rubric, version_id=criterion.version_id, criterion_key=criterion.key,
        status=SuggestionStatus.PENDING,
    ).first()  # fmt: skip
    if found is not None:
        return found
    suggestion = Suggestion.objects.create(
        team=team, rubric=rubric, version_id=criterion.version_id, criterion_key=criterion.key,
        criterion_text=criterion.description, created_by=user,
        evidence=disagreement_run_ids(rubric=rubric, criterion=criterion),
        judge_config=judge_config_for(rubric, prices=team.judge_prices),
    )  # fmt: skip
    transaction.on_commit(lambda: _enqueue(suggestion.pk), robust=True)
    return suggestion


def _enqueue(suggestion_id: Any) -> None:
    try:
        signature(SUGGEST_TASK, args=[str(suggestion_id)]).apply_async()
    except Exception:  # noqa: BLE001 - any broker failure: say so on the suggestion
        logger.warning("broker unreachable: suggestion %s not queued", suggestion_id)
        _finish(suggestion_id, error="could not be queued (the broker is unreachable): ask again")


# --- Generating (the worker's task) ----------------------------------------------------------


def _take(suggestion_id: Any, now: datetime) -> Suggestion | None:
    """Compare-and-set: a pending suggestion nobody is asking about (or whose asker died)."""
    stale = now - timedelta(seconds=STALE_SECONDS)
    taken = (
        Suggestion.objects.filter(pk=suggestion_id, status=SuggestionStatus.PENDING)
        .filter(Q(started_at__isnull=True) | Q(started_at__lt=stale))
        .update(started_at=now)
    )
    if not taken:
        return None
    return Suggestion.objects.select_related("version").get(pk=suggestion_id)


def _usage(calls: list[JudgeCall]) -> tuple[int, int, float | None]:
    prompt = sum(c.prompt_tokens or 0 for c in calls)
    completion = sum(c.completion_tokens or 0 for c in calls)
    costs = [c.cost for c in calls if c.cost is not None]
    return prompt, completion, (sum(costs) if costs else None)


def _finish(
    suggestion_id: Any,
    *,
    edit: SuggestedEdit | None = None,
    error: str = "",
    calls: list[JudgeCall] | None = None,
    model: str = "",
) -> None:
    """Write the edit (ready) or the error (failed), and the usage, in one transaction. A
    suggestion no longer pending (dismissed meanwhile) keeps its state; its usage still counts."""
    now = timezone.now()
    prompt, completion, cost = _usage(calls or [])
    fields: dict[str, Any] = {"finished_at": now, "judge_model": model[:200]}
    if calls:
        fields |= {"prompt_tokens": prompt, "completion_tokens": completion, "cost": cost}
    if edit is not None:
        fields |= {"status": SuggestionStatus.READY, "kind": edit.kind, "text": edit.text}
        fields |= {"rationale": edit.rationale, "error": ""}
    else:
        fields |= {"status": SuggestionStatus.FAILED, "error": error[:2000]}
    with transaction.atomic():
        row = Suggestion.objects.select_for_update().filter(pk=suggestion_id).first()
        if row is None:
            return
        if row.status != SuggestionStatus.PENDING:
            fields = {k: v for k, v in fields.items() if k not in ("status", "kind", "text")}
            fields = {k: v for k, v in fields.items() if k not in ("rationale", "error")}
        Suggestion.objects.filter(pk=suggestion_id).update(**fields)
        if prompt + completion or cost:
            usage_record(row.team_id, prompt + completion, cost, now=now)


def suggestion_generate(*, suggestion_id: Any, final_attempt: bool = True) -> str | None:
    """Ask the judge for the pending suggestion's edit; the status written (None: not taken).
    A transient judge failure is raised again for the task to retry, unless ``final_attempt``."""
    now = timezone.now()
    suggestion = _take(suggestion_id, now)
    if suggestion is None:
        return None
    if problem := budget_problem(suggestion.team_id, now):
        _finish(suggestion.pk, error=problem)
        return SuggestionStatus.FAILED
    items = disagreements_for_prompt(suggestion=suggestion)
    if not items:
        _finish(suggestion.pk, error="the reviewers no longer disagree with the judge on its runs")
        return SuggestionStatus.FAILED
    config = judge_for(Evaluation(judge_config=suggestion.judge_config))
    messages = suggest_messages(
        criterion=suggestion.criterion_text,
        others=list(
            Criterion.objects.filter(version=suggestion.version)
            .exclude(key=suggestion.criterion_key)
            .order_by("position")
            .values_list("description", flat=True)
        ),
        instructions=suggestion.version.instructions,
        disagreements=items,
        token_budget=_token_budget(),
    )
    return _ask(suggestion, config, messages, final_attempt)


def _token_budget() -> int:
    return max(1000, int(settings.EVALSITE_SUGGEST_TOKEN_BUDGET))


def _ask(suggestion: Suggestion, config: Any, messages: list[dict], final_attempt: bool) -> str:
    timeout = config.timeout * (config.retries + 2) * (config.repair_retries + 1) + 5
    try:
        edit, calls = run_judged(suggest_edit(config, messages), timeout=timeout)
    except TransientJudgeError as exc:
        if not final_attempt:  # the task retries with backoff: let a redelivery take it
            Suggestion.objects.filter(pk=suggestion.pk).update(started_at=None)
            raise
        _finish(suggestion.pk, error=tenant_error(exc.message), calls=exc.calls, model=config.model)
        return SuggestionStatus.FAILED
    except JudgeError as exc:
        _finish(suggestion.pk, error=tenant_error(exc.message), calls=exc.calls, model=config.model)
        return SuggestionStatus.FAILED
    except TimeoutError:
        _finish(suggestion.pk, error="the judge did not answer in time", model=config.model)
        return SuggestionStatus.FAILED
    _finish(suggestion.pk, edit=edit, calls=calls, model=config.model)
    return SuggestionStatus.READY
