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

Creating lives here; the scope and target version in rescore_scope, estimating in
rescore_estimate, releasing, ending and cancelling in rescore_dispatch (all re-exported here);
the webhook in rescore_webhook.

Concurrency: creating evaluations relies on the ``evaluation_one_pending_per_version_judge``
constraint (a run never gets two pending evaluations for one version and judge, whatever races);
releasing, cancelling and ending are compare-and-set updates.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, OperationalError, transaction

from evalsite.errors import Conflict, TooManyRequests
from evalsite.outbound import Purpose, outbound_field_errors
from judge_engine import JudgeConfig
from rubrics.models import Rubric, RubricVersion
from runs.models import AgentRun, Evaluation, Kind, RescoreBatch, Status
from runs.services.evaluations import evaluation_build
from teams.models import Team

from .rescore_dispatch import (
    batch_cancel,
    batch_dispatch,
    batch_evaluation_finished,
    batch_finish_if_done,
    batches_sweep,
)
from .rescore_estimate import (
    Estimate,
    batch_estimate,
    batch_judge,
    estimate_from,
    judge_clean,
    plan_build,
    run_rescore_estimate,
    version_specs,
)
from .rescore_scope import (
    RescoreScope,
    RescoreValidationError,
    chunks,
    run_rubric,
    scope_run_ids,
    version_for,
)

logger = logging.getLogger(__name__)

__all__ = [
    "Estimate",
    "IdempotencyConflict",
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
    "run_rescore",
    "run_rescore_estimate",
]


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
    if errors := outbound_field_errors(url, field="webhook_url", purpose=Purpose.WEBHOOK):
        raise RescoreValidationError(errors)
    return url


def _insert_evaluations(
    batch: RescoreBatch, run_ids: Sequence[Any], version: RubricVersion, judge: str
) -> list[Any]:
    """One held evaluation per run; a run with a pending twin is skipped by the database
    constraint. Returns the run ids that got one. Run rows are not written here (see
    _mark_runs_queued): a long transaction holding them would block workers writing results
    for the same runs, and deadlock with them."""
    rubric = batch.rubric
    prices = batch.team.judge_prices
    for chunk in chunks(run_ids):
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
                    prices=prices,
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
    for chunk in chunks(sorted(run_ids)):
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
    version = version_for(rubric, target_version)
    model_override = judge_clean(judge)
    judge_config = batch_judge(rubric, model_override, team.judge_prices)
    url = _clean_webhook(webhook_url)
    run_ids = scope_run_ids(team, rubric, scope)
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
        rescore_active_check(row["team"])
        batch = RescoreBatch.objects.create(**row)
        version, force = row["rubric_version"], row["force"]
        queued = _insert_evaluations(batch, run_ids, version, model_override)
        criteria = version_specs(version)
        plan = plan_build(
            batch.team_id, queued, criteria, judge_config, batch.rubric.strategy, force
        )
        estimate = estimate_from(plan, judge_config, len(run_ids) - len(queued))
        batch.estimate = estimate.as_json()
        batch.total = len(queued)
        batch.save(update_fields=["estimate", "total"])
        _mark_runs_queued(queued)
        batch_id = batch.pk
        transaction.on_commit(lambda: rescore_after_create(batch_id), robust=True)
    return batch, True


def rescore_active_check(team: Team) -> None:
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


def rescore_after_create(batch_id: Any) -> None:
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
    return batch_create(
        team=run.team, rubric=run_rubric(run, rubric), scope=RescoreScope(runs=(run.pk,)),
        target_version=target_version, judge=judge, force=force,
        idempotency_key=idempotency_key, webhook_url=webhook_url, user=user,
    )  # fmt: skip
