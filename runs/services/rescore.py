"""Re-scoring: batches of new rubric evaluations over stored runs.

A batch re-judges a set of runs (one run, a list, or the runs list's filters) against a rubric
version (the current one unless named), optionally with another judge model. It never changes
old evaluations: it adds new ones, which reuse every stored verdict whose key still matches
(SCORING.md "Verdict reuse"; done by services.execute) unless the batch is forced.

Lifecycle: ``queued`` → ``running`` (its first evaluations are released) → ``completed``,
``completed_with_failures`` or ``cancelled``; ``finished_at`` is set once no evaluation of the
batch is pending, and the webhook (if any) fires then, once.

Fairness: a batch's evaluations are created *held* (``Evaluation.held``): not in the broker.
The dispatcher releases at most ``batch.window`` (EVALSITE_BATCH_WINDOW at creation) of a
batch's evaluations at a time and tops the batch up as its evaluations end (by half windows),
so every active batch keeps about the same number of messages in flight: batches interleave with each other and with freshly ingested runs (which
go straight to the broker) instead of being served first-come. The sweeper never sends held
rows; it calls ``batches_sweep`` to refill windows and end batches a dead worker left behind.

Creating and estimating live here; releasing, ending and cancelling in rescore_dispatch (all
re-exported here); the webhook in rescore_webhook.

Concurrency: creating evaluations relies on the ``evaluation_one_pending_per_version_judge``
constraint (a run never gets two pending evaluations for one version and judge, whatever races);
releasing, cancelling and ending are compare-and-set updates.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, OperationalError, transaction
from django.db.models import QuerySet

from evalsite.errors import Conflict, FieldErrors, TooManyRequests
from rubrics.models import Rubric, RubricVersion
from runs.scoring import Criterion as CriterionSpec
from runs.scoring import JudgeConfig, verdict_key
from teams.models import Team

from ..models import (
    PENDING_STATUSES,
    AgentRun,
    CriterionVerdict,
    Evaluation,
    Kind,
    RescoreBatch,
    Status,
)
from .estimates import rubric_call_tokens
from .evaluations import evaluation_build, judge_config_for
from .execute import judge_for, version_criteria
from .rescore_dispatch import (
    batch_cancel,
    batch_dispatch,
    batch_evaluation_finished,
    batch_finish_if_done,
    batches_sweep,
)

logger = logging.getLogger(__name__)

__all__ = [
    "Estimate",
    "RescoreScope",
    "RescoreValidationError",
    "TooManyBatches",
    "batch_cancel",
    "batch_create",
    "batch_dispatch",
    "batch_estimate",
    "batch_evaluation_finished",
    "batch_finish_if_done",
    "batches_sweep",
    "estimate_needs_confirmation",
    "run_rescore",
    "run_rescore_estimate",
]
CHUNK = 500  # ids per IN (...) clause: well under SQLite's variable limit


class IdempotencyConflict(Conflict, ValueError):
    """The idempotency key already names a batch made for another request."""

    def __init__(self, key: str, batch: RescoreBatch) -> None:
        super().__init__(
            f"Idempotency-Key {key!r} was already used for a different re-score request "
            f"(batch {batch.pk}); use a new key for a new request",
            extra={"batch_id": str(batch.pk)},
        )
        self.batch = batch


class TooManyBatches(TooManyRequests):
    """The team already has EVALSITE_TEAM_MAX_ACTIVE_BATCHES unfinished re-score batches."""

    retry_after = 30

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"this team already has {limit} re-score batches running or queued "
            f"(EVALSITE_TEAM_MAX_ACTIVE_BATCHES={limit}): wait for one to finish or cancel one",
            limit=limit,
        )


class RescoreValidationError(FieldErrors):
    """Invalid re-score request; ``errors`` maps each field to a message a person can act on."""


@dataclass(frozen=True)
class RescoreScope:
    """Which runs a batch re-scores: explicit ``runs`` (ids of the team, any rubric), else the
    runs of the batch's rubric narrowed by the runs list's filters (all combine with AND)."""

    runs: tuple[uuid.UUID, ...] | None = None
    version: int | None = None  # the run's current result is on this version number
    failed_only: bool = False  # the run's current result did not pass
    criterion: str | None = None  # the current verdict on this criterion key is unsatisfied
    since: datetime | None = None  # created at or after
    until: datetime | None = None  # created before

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["runs"] = [str(r) for r in self.runs] if self.runs is not None else None
        for name in ("since", "until"):
            out[name] = out[name].isoformat() if out[name] else None
        return out


@dataclass(frozen=True)
class Estimate:
    """What a batch will cost, computed the way execution will decide it (same judge config,
    same verdict keys, same reuse lookup). ``judge_calls`` and ``criterion_judgements`` are
    exact when nothing fails and no other work lands meanwhile; tokens are approximate (prompt
    characters / 4 plus a completion allowance per criterion); ``cost`` is None when litellm
    has no price for the model."""

    runs: int
    judge_calls: int
    criterion_judgements: int
    criteria_reused: int
    prompt_tokens: int
    completion_tokens: int
    tokens: int
    cost: float | None
    model: str
    skipped_pending: int = 0  # runs left out: an evaluation for this version and judge is pending

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Plan:
    """Per run: how many criteria go to the judge and what the calls look like."""

    run_ids: list[Any] = field(default_factory=list)
    calls: int = 0
    judged: int = 0
    reused: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


# --- Scope --------------------------------------------------------------------------------------


def _target_version(rubric: Rubric, number: int | None) -> RubricVersion:
    if number is not None:
        found = RubricVersion.objects.filter(rubric=rubric, number=number).first()
        if found is None:
            raise RescoreValidationError({"target_version": f"rubric has no version {number}"})
        return found
    if rubric.current_version_id is None:
        raise RescoreValidationError({"rubric": "this rubric has no criteria yet"})
    return RubricVersion.objects.get(pk=rubric.current_version_id)


def _scope_runs(team: Team, rubric: Rubric, scope: RescoreScope) -> QuerySet[AgentRun]:
    if scope.runs is not None:
        return AgentRun.objects.filter(team=team, pk__in=scope.runs)
    from pydantic import ValidationError

    from ..selectors import RunFilters, runs_matching

    try:
        filters = RunFilters(
            rubric=str(rubric.pk),
            version=scope.version,
            passed=False if scope.failed_only else None,
            failing_criterion=scope.criterion,
            since=scope.since,
            until=scope.until,
        )
    except ValidationError as exc:
        names = {"failing_criterion": "criterion_id"}
        raise RescoreValidationError(
            {names.get(str(e["loc"][0]), str(e["loc"][0])): e["msg"] for e in exc.errors()}
        ) from exc
    return runs_matching(team=team, filters=filters)


def _scope_run_ids(team: Team, rubric: Rubric, scope: RescoreScope) -> list[Any]:
    """The scope's run ids, oldest first; errors name the field at fault."""
    if scope.runs is not None and not scope.runs:
        raise RescoreValidationError({"runs": "give at least one run id"})
    if scope.runs is not None and scope != RescoreScope(runs=scope.runs):
        raise RescoreValidationError({"runs": "give either run ids or filters, not both"})
    ids = list(
        _scope_runs(team, rubric, scope)
        .order_by("created_at", "id")
        .values_list("id", flat=True)[: settings.EVALSITE_RESCORE_MAX_RUNS + 1]
    )
    if scope.runs is not None:
        missing = len(set(scope.runs)) - len(ids)
        if missing:
            raise RescoreValidationError(
                {"runs": f"{missing} of these ids name no run of this team"}
            )
    if len(ids) > settings.EVALSITE_RESCORE_MAX_RUNS:
        limit = settings.EVALSITE_RESCORE_MAX_RUNS
        raise RescoreValidationError(
            {
                "runs": f"more than {limit:,} runs match: narrow the filters (EVALSITE_RESCORE_MAX_RUNS)"
            }
        )
    return ids


def _chunks(items: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _pending_run_ids(run_ids: Sequence[Any], version: RubricVersion, model: str) -> set[Any]:
    """Runs that already have a queued or running evaluation for this version and judge."""
    found: set[Any] = set()
    for chunk in _chunks(run_ids):
        found.update(
            Evaluation.objects.filter(
                run_id__in=chunk,
                kind=Kind.RUBRIC,
                rubric_version=version,
                judge_model=model,
                status__in=PENDING_STATUSES,
                calibration=False,  # consistency checks may judge a run many times at once
            ).values_list("run_id", flat=True)
        )
    return found


# --- Estimate -----------------------------------------------------------------------------------


def _judge(rubric: Rubric, model: str) -> JudgeConfig:
    """The JudgeConfig execution will build for an evaluation created with this judge."""
    judge = judge_for(Evaluation(judge_config=judge_config_for(rubric, model=model)))
    if judge.unusable:  # e.g. another provider's model without a judge connection
        raise RescoreValidationError({"judge": judge.unusable})
    if not judge.model:
        raise RescoreValidationError(
            {
                "judge": "no judge model configured: name one, set the rubric's, or EVALSITE_JUDGE_MODEL"
            }
        )
    return judge


def _criteria(version: RubricVersion) -> list[CriterionSpec]:
    return version_criteria(version.pk)[0]


def _known_keys(team_id: Any, keys: set[str]) -> set[str]:
    """Keys with a stored verdict execution would reuse (same lookup as execute._reusable)."""
    known: set[str] = set()
    for chunk in _chunks(sorted(keys)):
        known.update(
            CriterionVerdict.objects.filter(
                team_id=team_id, verdict_key__in=chunk, evaluation__status=Status.SUCCEEDED
            )
            .values_list("verdict_key", flat=True)
            .distinct()
        )
    return known


def _plan(
    team_id: Any,
    run_ids: Sequence[Any],
    criteria: list[CriterionSpec],
    judge: JudgeConfig,
    strategy: str,
    force: bool,
) -> _Plan:
    plan = _Plan(run_ids=list(run_ids))
    for chunk in _chunks(run_ids):
        texts = list(
            AgentRun.objects.filter(pk__in=chunk).values_list(
                "task_text", "system_text", "output_text"
            )
        )
        keyed = [
            (t, [verdict_key(judge, c.description, t[0], t[1], t[2]) for c in criteria])
            for t in texts
        ]
        known = set() if force else _known_keys(team_id, {k for _, ks in keyed for k in ks})
        for (task, system, output), keys in keyed:
            remaining = [c for c, k in zip(criteria, keys, strict=True) if k not in known]
            plan.reused += len(criteria) - len(remaining)
            plan.judged += len(remaining)
            groups = [remaining] if strategy != "independent" else [[c] for c in remaining]
            for group in groups if remaining else []:
                prompt, completion = rubric_call_tokens(judge, group, task, system, output)
                plan.calls += 1
                plan.prompt_tokens += prompt
                plan.completion_tokens += completion
    return plan


def _cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """litellm's price for these tokens, or None when it does not know the model."""
    if not prompt_tokens and not completion_tokens:
        return 0.0
    import litellm

    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
    except Exception:  # noqa: BLE001 - litellm raises assorted errors for unknown models
        return None
    return float(prompt_cost + completion_cost)


def _estimate(plan: _Plan, model: str, skipped: int) -> Estimate:
    return Estimate(
        runs=len(plan.run_ids),
        judge_calls=plan.calls,
        criterion_judgements=plan.judged,
        criteria_reused=plan.reused,
        prompt_tokens=plan.prompt_tokens,
        completion_tokens=plan.completion_tokens,
        tokens=plan.prompt_tokens + plan.completion_tokens,
        cost=_cost(model, plan.prompt_tokens, plan.completion_tokens),
        model=model,
        skipped_pending=skipped,
    )


def _clean_judge(judge: str | None) -> str:
    judge = (judge or "").strip()
    if len(judge) > 200 or any(ch.isspace() for ch in judge):
        raise RescoreValidationError({"judge": "a litellm model string, e.g. openai/gpt-4o-mini"})
    return judge


def batch_estimate(
    *,
    team: Team,
    rubric: Rubric,
    scope: RescoreScope | None = None,
    target_version: int | None = None,
    judge: str | None = None,
    force: bool = False,
) -> Estimate:
    """What ``batch_create`` with the same arguments would queue and spend; writes nothing."""
    version = _target_version(rubric, target_version)
    judge_config = _judge(rubric, _clean_judge(judge))
    run_ids = _scope_run_ids(team, rubric, scope or RescoreScope())
    pending = _pending_run_ids(run_ids, version, judge_config.model)
    todo = [r for r in run_ids if r not in pending]
    plan = _plan(team.pk, todo, _criteria(version), judge_config, rubric.strategy, force)
    return _estimate(plan, judge_config.model, skipped=len(pending))


def estimate_needs_confirmation(*, team: Team, estimate: Estimate) -> bool:
    """Whether the UI asks before starting: the estimated cost is above the team's threshold
    (Team.confirm_cost_above). An unknown cost (a model litellm has no price for) never asks."""
    return estimate.cost is not None and estimate.cost > float(team.confirm_cost_above)


# --- Create -------------------------------------------------------------------------------------


def _clean_webhook(url: str | None) -> str:
    url = (url or "").strip()
    if not url:
        return ""
    try:
        URLValidator(schemes=["http", "https"])(url)
    except DjangoValidationError as exc:
        raise RescoreValidationError({"webhook_url": "must be an http(s) URL"}) from exc
    if len(url) > 200:
        raise RescoreValidationError({"webhook_url": "at most 200 characters"})
    from .rescore_webhook import webhook_refusal

    if (refusal := webhook_refusal(url, resolve=False)) is not None:
        raise RescoreValidationError({"webhook_url": refusal})
    return url


def _insert_evaluations(
    batch: RescoreBatch, run_ids: Sequence[Any], version: RubricVersion, judge: str
) -> list[Any]:
    """One held evaluation per run; a run with a pending twin is skipped by the database
    constraint. Returns the run ids that got one. Run rows are not written here (see
    _mark_runs_queued): a long transaction holding them would block workers writing results
    for the same runs, and deadlock with them."""
    rubric = batch.rubric
    for chunk in _chunks(run_ids):
        runs = AgentRun.objects.filter(pk__in=chunk).only("id", "team_id")
        Evaluation.objects.bulk_create(
            [
                evaluation_build(
                    run=run,
                    kind=Kind.RUBRIC,
                    rubric=rubric,
                    version=version,
                    judge_model=judge,
                    batch=batch,
                    force=batch.force,
                    held=True,
                )  # fmt: skip
                for run in runs
            ],
            ignore_conflicts=True,
        )
    return list(
        Evaluation.objects.filter(batch=batch)
        .order_by("created_at")
        .values_list("run_id", flat=True)
    )


def _mark_runs_queued(run_ids: list[Any]) -> None:
    """The runs list shows a batch's runs as queued until their evaluations end. Last in the
    creating transaction, and never waiting for a run a worker is writing (its own refresh
    of the run sees the new evaluation): a transaction holding many runs while waiting for
    one more deadlocks with workers taking the same runs in another order."""
    for chunk in _chunks(sorted(run_ids)):
        free = (
            AgentRun.objects.select_for_update(no_key=True, skip_locked=True)
            .filter(pk__in=chunk)
            .exclude(status=Status.RUNNING)
            .values_list("pk", flat=True)
        )
        AgentRun.objects.filter(pk__in=list(free)).exclude(status=Status.RUNNING).update(
            status=Status.QUEUED
        )


def batch_create(
    *,
    team: Team,
    rubric: Rubric,
    scope: RescoreScope | None = None,
    target_version: int | None = None,
    judge: str | None = None,
    force: bool = False,
    idempotency_key: str | None = None,
    webhook_url: str | None = "",
    user: Any = None,
) -> tuple[RescoreBatch, bool]:
    """Create a batch and its held evaluations, estimate it, and release its first window once
    the transaction commits. Returns (batch, created): an ``idempotency_key`` this team used
    before with the same request returns that batch unchanged (IdempotencyConflict when
    it was used for another request). Runs that already have a pending evaluation for the
    same version and judge are skipped (counted in ``estimate.skipped_pending``)."""
    scope = scope or RescoreScope()
    key = (idempotency_key or "").strip()[:200] or None
    asked = _request_hash(rubric, scope, target_version, judge, force, webhook_url)
    if key:
        existing = RescoreBatch.objects.filter(team=team, idempotency_key=key).first()
        if existing is not None:
            return _same_request(key, existing, asked), False
    version = _target_version(rubric, target_version)
    model_override = _clean_judge(judge)
    judge_config = _judge(rubric, model_override)
    url = _clean_webhook(webhook_url)
    run_ids = _scope_run_ids(team, rubric, scope)
    row = dict(
        team=team, rubric=rubric, rubric_version=version, judge_model=judge_config.model,
        force=force, scope=scope.as_json() | {"target_version": version.number},
        idempotency_key=key, request_hash=asked, webhook_url=url, created_by=user,
        window=max(1, settings.EVALSITE_BATCH_WINDOW),
    )  # fmt: skip
    for attempt in range(1, CREATE_ATTEMPTS + 1):
        try:
            return _create(row, run_ids, model_override, judge_config)
        except OperationalError as exc:
            # A worker writing results for some of these runs at the same moment can deadlock
            # with marking them queued (PostgreSQL fails one side): nothing was stored, again.
            if attempt == CREATE_ATTEMPTS or not _is_deadlock(exc):
                raise
        except IntegrityError:
            # Another request with the same idempotency key won the race: its batch.
            existing = (
                RescoreBatch.objects.filter(team=team, idempotency_key=key).first() if key else None
            )
            if existing is None:
                raise
            return _same_request(key or "", existing, asked), False
    raise AssertionError("unreachable")  # pragma: no cover


CREATE_ATTEMPTS = 3


def _is_deadlock(exc: OperationalError) -> bool:
    return getattr(exc.__cause__, "sqlstate", None) == "40P01"


def _create(
    row: dict[str, Any], run_ids: list[Any], model_override: str, judge_config: JudgeConfig
) -> tuple[RescoreBatch, bool]:
    """The batch_create transaction: the batch (``row``), its held evaluations, its estimate."""
    with transaction.atomic():
        _check_active_batches(row["team"])
        batch = RescoreBatch.objects.create(**row)
        version, force = row["rubric_version"], row["force"]
        queued = _insert_evaluations(batch, run_ids, version, model_override)
        criteria = _criteria(version)
        plan = _plan(batch.team_id, queued, criteria, judge_config, batch.rubric.strategy, force)
        estimate = _estimate(plan, judge_config.model, len(run_ids) - len(queued))
        batch.estimate = estimate.as_json()
        batch.total = len(queued)
        batch.save(update_fields=["estimate", "total"])
        _mark_runs_queued(queued)
        batch_id = batch.pk
        transaction.on_commit(lambda: _after_create(batch_id), robust=True)
    return batch, True


def _check_active_batches(team: Team) -> None:
    """Refuse a new batch while the team has EVALSITE_TEAM_MAX_ACTIVE_BATCHES unfinished ones
    (0: no cap). The team's row lock makes concurrent creations count one after another
    (PostgreSQL; SQLite writes one at a time anyway); NO KEY, so rows that merely refer to
    the team (runs, verdicts) are still written meanwhile."""
    limit = settings.EVALSITE_TEAM_MAX_ACTIVE_BATCHES
    if limit <= 0:
        return
    list(Team.objects.select_for_update(no_key=True).filter(pk=team.pk).values_list("pk"))
    if RescoreBatch.objects.filter(team=team, finished_at__isnull=True).count() >= limit:
        raise TooManyBatches(limit)


def _request_hash(
    rubric: Rubric,
    scope: RescoreScope,
    target_version: int | None,
    judge: str | None,
    force: bool,
    webhook_url: str | None,
) -> str:
    asked = {
        "rubric": str(rubric.pk) if rubric is not None else None,
        "scope": scope.as_json(),
        "target_version": target_version,
        "judge": (judge or "").strip(),
        "force": force,
        "webhook_url": (webhook_url or "").strip(),
    }
    return hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()


def _same_request(key: str, batch: RescoreBatch, asked: str) -> RescoreBatch:
    """The batch a repeated request gets back; IdempotencyConflict when the key was used for
    another request (batches from before request hashes existed match any request)."""
    if batch.request_hash and batch.request_hash != asked:
        raise IdempotencyConflict(key, batch)
    return batch


def _after_create(batch_id: Any) -> None:
    if not batch_finish_if_done(batch_id=batch_id):
        batch_dispatch(batch_id=batch_id)


def run_rescore(
    *,
    run: AgentRun,
    rubric: Rubric | None = None,
    target_version: int | None = None,
    judge: str | None = None,
    force: bool = False,
    idempotency_key: str | None = None,
    webhook_url: str | None = "",
    user: Any = None,
) -> tuple[RescoreBatch, bool]:
    """Re-score one run (against its own rubric unless another is given) as a batch of one."""
    rubric = rubric or run.rubric
    if rubric is None:
        raise RescoreValidationError({"rubric": "this run has no rubric: name one"})
    return batch_create(
        team=run.team, rubric=rubric, scope=RescoreScope(runs=(run.pk,)),
        target_version=target_version, judge=judge, force=force,
        idempotency_key=idempotency_key, webhook_url=webhook_url, user=user,
    )  # fmt: skip


def run_rescore_estimate(
    *,
    run: AgentRun,
    rubric: Rubric | None = None,
    target_version: int | None = None,
    judge: str | None = None,
    force: bool = False,
) -> Estimate:
    rubric = rubric or run.rubric
    if rubric is None:
        raise RescoreValidationError({"rubric": "this run has no rubric: name one"})
    return batch_estimate(
        team=run.team, rubric=rubric, scope=RescoreScope(runs=(run.pk,)),
        target_version=target_version, judge=judge, force=force,
    )  # fmt: skip
