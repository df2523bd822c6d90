"""A rubric's criteria drafted from the agent's system prompt (POST /api/rubrics/draft-from-prompt
and the New rubric page).

``criteria_draft`` checks the input (each error names its field), the team's judge budget (409,
as for suggested edits) and the drafts the team has in flight (at most
EVALSITE_DRAFT_MAX_IN_FLIGHT: 429 with Retry-After), records the request, asks the deployment's
judge once (judge_engine.draft: a bounded prompt and a validated answer), and answers the
criteria for a person to edit. Nothing is saved as a rubric here. The tokens the call took are
recorded on the request's row and added to the team's budget counters; recounts read them
through a usage source (``drafts_usage``). A judge that cannot be reached is a 503, an answer
that stays malformed after the repair re-ask a 502, both with the reason and no address.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from evalsite.errors import AppError, Conflict, FieldErrors, TooManyRequests
from judge_engine import JudgeCall, JudgeError, TransientJudgeError
from judge_engine.draft import (
    MAX_SYSTEM_PROMPT,
    DraftedCriteria,
    RunSample,
    draft_criteria,
    draft_messages,
)
from judge_engine.errors import InvalidJudgeOutput
from judge_engine.redact import tenant_error
from judging.judge_runtime import run_judged
from judging.services.budget_slices import usage_record
from rubrics.judging import judge_config_for, judge_for
from runs.models import AgentRun, Evaluation
from teams.models import Team

from ..models import CriteriaDraft, SuggestionStatus
from .suggestions import budget_problem

logger = logging.getLogger(__name__)

MAX_RUNS = 5
# A draft still pending after this long belonged to a process that died: it no longer counts
# toward the team's drafts in flight (longer than the judge call's own time limit).
STALE_SECONDS = 600


class DraftValidationError(FieldErrors):
    """The draft cannot be asked as requested; ``errors`` names the field."""


class JudgeUnavailable(AppError):
    """The judge could not be reached or kept failing (503): ask again later."""

    status = 503


class JudgeAnswerInvalid(AppError):
    """The judge answered, but not with usable criteria, even after the repair re-ask (502)."""

    status = 502


def _clean(system_prompt: Any, runs: Any) -> tuple[str, list[uuid.UUID]]:
    errors: dict[str, str] = {}
    text = system_prompt if isinstance(system_prompt, str) else ""
    if not isinstance(system_prompt, str) or not system_prompt.strip():
        errors["system_prompt"] = "paste the agent's system prompt (it must not be empty)"
    elif len(system_prompt) > MAX_SYSTEM_PROMPT:
        errors["system_prompt"] = (
            f"at most {MAX_SYSTEM_PROMPT:,} characters, not {len(system_prompt):,}"
        )
    ids: list[uuid.UUID] = []
    if len(runs) > MAX_RUNS:
        errors["runs"] = f"at most {MAX_RUNS} runs, not {len(runs)}"
    else:
        for i, raw in enumerate(runs):
            try:
                ids.append(uuid.UUID(str(raw)))
            except ValueError:
                errors[f"runs[{i}]"] = f"{str(raw)[:60]!r} is not a run id"
    if errors:
        raise DraftValidationError(errors)
    return text.strip(), list(dict.fromkeys(ids))


def _samples(team: Team, ids: Sequence[uuid.UUID]) -> list[RunSample]:
    found = {
        r.id: r
        for r in AgentRun.objects.filter(team=team, pk__in=list(ids)).only(
            "id", "task_text", "output_text"
        )
    }
    missing = [str(i) for i in ids if i not in found]
    if missing:
        raise DraftValidationError({"runs": f"no run {', '.join(missing)} in this team"})
    return [RunSample(task=found[i].task_text, output=found[i].output_text) for i in ids]


def _open(team: Team, user: Any, runs_shown: int, now: datetime) -> CriteriaDraft:
    """Record the request, unless the team already has its drafts in flight (429)."""
    limit = max(1, int(settings.EVALSITE_DRAFT_MAX_IN_FLIGHT))
    with transaction.atomic():
        Team.objects.select_for_update().filter(pk=team.pk).first()  # one counter at a time
        in_flight = CriteriaDraft.objects.filter(
            team=team,
            status=SuggestionStatus.PENDING,
            created_at__gte=now - timedelta(seconds=STALE_SECONDS),
        ).count()
        if in_flight >= limit:
            raise TooManyRequests(
                f"the team already has {in_flight} drafts being written; try again in a moment",
                limit=limit,
                retry_after=5,
            )
        return CriteriaDraft.objects.create(
            team=team, created_by=user if getattr(user, "pk", None) else None, runs_shown=runs_shown
        )


def _close(
    draft: CriteriaDraft,
    calls: list[JudgeCall],
    model: str,
    *,
    drafted: DraftedCriteria | None = None,
    error: str = "",
) -> None:
    now = timezone.now()
    prompt = sum(c.prompt_tokens or 0 for c in calls)
    completion = sum(c.completion_tokens or 0 for c in calls)
    costs = [c.cost for c in calls if c.cost is not None]
    fields: dict[str, Any] = {
        "status": SuggestionStatus.READY if drafted is not None else SuggestionStatus.FAILED,
        "criteria_count": len(drafted.criteria) if drafted is not None else 0,
        "error": error[:2000],
        "judge_model": model[:200],
        "finished_at": now,
    }
    if calls:
        fields |= {"prompt_tokens": prompt, "completion_tokens": completion}
        fields["cost"] = sum(costs) if costs else None
    with transaction.atomic():
        CriteriaDraft.objects.filter(pk=draft.pk).update(**fields)
        if prompt + completion or costs:
            usage_record(draft.team_id, prompt + completion, sum(costs) if costs else None, now=now)


def criteria_draft(
    *, team: Team, user: Any, system_prompt: Any, runs: Sequence[Any] = ()
) -> list[dict[str, Any]]:
    """The drafted criteria: ``[{"description", "required", "rationale"}]``, in the judge's
    order (demands first, as the prompt asks)."""
    text, ids = _clean(system_prompt, list(runs or []))
    samples = _samples(team, ids)
    now = timezone.now()
    if problem := budget_problem(team.pk, now):
        raise Conflict(problem)
    config = judge_for(Evaluation(judge_config=judge_config_for(None, prices=team.judge_prices)))
    messages = draft_messages(
        system_prompt=text,
        runs=samples,
        token_budget=max(1000, int(settings.EVALSITE_DRAFT_TOKEN_BUDGET)),
    )
    draft = _open(team, user, len(samples), now)
    timeout = config.timeout * (config.retries + 2) * (config.repair_retries + 1) + 5
    try:
        drafted, calls = run_judged(draft_criteria(config, messages), timeout=timeout)
    except InvalidJudgeOutput as exc:
        message = f"the judge's answer was not usable criteria: {tenant_error(exc.message)}"
        _close(draft, exc.calls, config.model, error=message)
        raise JudgeAnswerInvalid(message) from None
    except TransientJudgeError as exc:
        message = f"the judge could not be reached: {tenant_error(exc.message)}"
        _close(draft, exc.calls, config.model, error=message)
        raise JudgeUnavailable(message) from None
    except JudgeError as exc:
        message = f"the judge refused the request: {tenant_error(exc.message)}"
        _close(draft, exc.calls, config.model, error=message)
        raise JudgeUnavailable(message) from None
    except TimeoutError:
        _close(draft, [], config.model, error="the judge did not answer in time")
        raise JudgeUnavailable("the judge did not answer in time") from None
    except BaseException:
        _close(draft, [], config.model, error="the draft failed")
        raise
    _close(draft, calls, config.model, drafted=drafted)
    return [item.model_dump() for item in drafted.criteria]


def drafts_usage(team_id: Any, start: datetime, end: datetime) -> tuple[int, float]:
    """(tokens, USD) the team's drafts took that finished in [start, end): a usage source of
    the judge budget (registered in ReviewsConfig.ready)."""
    row = CriteriaDraft.objects.filter(
        team_id=team_id, finished_at__gte=start, finished_at__lt=end
    ).aggregate(prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens"), usd=Sum("cost"))
    return (row["prompt"] or 0) + (row["completion"] or 0), row["usd"] or 0.0
