"""Evaluate: claim with compare-and-set, judge outside any transaction, write in one.

Every write is guarded by the lease token taken at claim time, so a worker that lost its lease
(killed, paused, or too slow) can never overwrite or duplicate a newer attempt's result.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, NamedTuple

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from evalsite import dbpool
from evalsite.ratelimit import judge_admit, limit_for
from judge_engine import (
    JudgeError,
    PermanentJudgeError,
    ScoringInputError,
    TransientJudgeError,
)
from judge_engine.fairshare import TENANT
from judge_engine.redact import internal_error, new_ref, tenant_error
from judge_engine.types import Usage
from judging.judge_runtime import claim_room, run_judged
from runs.models import AgentRun, Evaluation, Kind, Status
from runs.services.evaluations import evaluation_publish_later, evaluations_enqueue
from runs.services.groupcommit import GroupCommit

from .budget import budget_admit, budget_settle
from .estimates import evaluation_plan
from .plans import Plan, alignment_scoring, plans_read, rubric_scoring
from .results import (
    Finished,
    Written,
    record_failure,
    record_many,
    run_refresh,
    runs_refresh,
)
from .stranded import DATABASE_AWAY, stranded

logger = logging.getLogger(__name__)

# A verdict waiting for its database is written at most this long before its lease runs out.
RECORD_MARGIN = timedelta(seconds=30)
FIRST_DELAY = 0.5  # then doubled up to 5 s between tries


@dataclass(frozen=True)
class Outcome:
    # "skipped", "succeeded", "failed", "retrying", "deferred", "lost_lease", "over_budget"
    status: str
    retry_in: float | None = None
    # What this attempt wrote as the evaluation's usage: (tokens, cost; None when unknown).
    usage: tuple[int, float | None] | None = None
    # "succeeded": what was stored (judging.services.results.Written), for a caller that answers
    # with it (POST /api/score judged inline) instead of reading it back.
    written: Written | None = field(default=None, compare=False, repr=False)


def _recorded(calls: list[Any]) -> tuple[int, float | None]:
    usage = Usage.from_calls(calls)
    return usage.prompt_tokens + usage.completion_tokens, usage.cost if calls else None


class Claim(NamedTuple):
    evaluation: Evaluation
    token: uuid.UUID
    plan: Plan


def evaluation_claim(*, evaluation_id: str) -> Claim | None:
    """queued → running, once: a duplicate or early message claims nothing.

    Concurrent claims in one process go to the database together (group commit)."""
    return _claims.submit(str(evaluation_id))


def evaluations_claim(ids: list[str]) -> list[Claim | None]:
    """Claim several evaluations with one compare-and-set (each at most once, even when its
    id is given twice), load them with their runs and look up their reusable verdicts: four
    statements for any number."""
    wanted: dict[uuid.UUID, int] = {}
    for i, raw in enumerate(ids):
        try:
            wanted.setdefault(uuid.UUID(str(raw)), i)
        except ValueError:
            continue  # not an evaluation id: nothing to claim
    out: list[Claim | None] = [None] * len(ids)
    if not wanted:
        return out
    now = timezone.now()
    token = uuid.uuid4()  # the guard is (id, token): one token serves the whole group
    stranded.claiming(token, [str(i) for i in wanted])  # the commit may be lost with the database
    # One transaction: if any statement fails (say a deadlock with a writer locking the same
    # runs in another order), nothing is claimed and the group is retried id by id.
    with transaction.atomic():
        claimed = (
            Evaluation.objects.filter(id__in=list(wanted), status=Status.QUEUED)
            .filter(Q(not_before__isnull=True) | Q(not_before__lte=now))
            .update(
                status=Status.RUNNING,
                attempts=F("attempts") + 1,
                lease_token=token,
                lease_expires_at=now + timedelta(seconds=settings.EVALSITE_LEASE_SECONDS),
                started_at=now,
            )
        )
        if not claimed:
            return out
        rows = list(
            Evaluation.objects.select_related("run", "rubric_version").filter(
                id__in=list(wanted), lease_token=token
            )
        )
        AgentRun.objects.filter(pk__in={e.run_id for e in rows}, status=Status.QUEUED).update(
            status=Status.RUNNING
        )
        plans = plans_read(rows)  # inside: a failing lookup must not leave claims nobody judges
    for evaluation, plan in zip(rows, plans, strict=True):
        out[wanted[evaluation.id]] = Claim(evaluation, token, plan)
    return out


_claims: GroupCommit[str, Claim | None] = GroupCommit(evaluations_claim)


def evaluation_execute(*, evaluation_id: str) -> Outcome:
    """Run one evaluation end to end. Safe to call for any id, any number of times."""
    claim = evaluation_claim(evaluation_id=evaluation_id)
    if claim is None:
        return Outcome("skipped")
    return _execute([claim])[0]


def evaluations_execute(*, evaluation_ids: list[str], team: str = "") -> list[Outcome]:
    """evaluation_execute for several evaluations (one broker message): one claim for all,
    their judge calls concurrently on the shared loop (within the process's limit of calls in
    flight), their results written together. Each ends exactly as it would alone. ``team``
    (the evaluations' team id) is whose share of the process's claim room they take."""
    ids = [str(i) for i in evaluation_ids]
    outcomes: list[Outcome] = []
    while len(outcomes) < len(ids):
        with claim_room(len(ids) - len(outcomes), team) as room:
            claims = evaluations_claim(ids[len(outcomes) : len(outcomes) + room])
            done = iter(_execute([c for c in claims if c is not None]))
            outcomes += [Outcome("skipped") if c is None else next(done) for c in claims]
    return outcomes


def evaluations_execute_claimed(
    *, evaluations: list[Evaluation], token: uuid.UUID
) -> list[Outcome]:
    """Judge and write evaluations stored already claimed by the caller with ``token``
    (runs.services.ingest.run_store): the claim's plan, judge and lease-guarded write, exactly
    as for evaluations claimed from the queue. A plan that cannot be read hands them to the
    workers (queued again, this attempt not counted), as a failed claim would leave them."""
    try:
        plans = plans_read(evaluations)
    except Exception:  # noqa: BLE001 - a worker tries again, and records what fails for good
        logger.exception("could not plan %s; handing them to the workers", evaluations)
        _hand_back(evaluations, token)
        return [Outcome("deferred") for _ in evaluations]
    return _execute([Claim(e, token, p) for e, p in zip(evaluations, plans, strict=True)])


def _hand_back(evaluations: list[Evaluation], token: uuid.UUID) -> None:
    with transaction.atomic():
        ids = [e.id for e in evaluations]
        returned = Evaluation.objects.filter(
            id__in=ids, status=Status.RUNNING, lease_token=token
        ).update(
            status=Status.QUEUED,
            attempts=F("attempts") - 1,
            lease_token=None,
            lease_expires_at=None,
            started_at=None,
        )
        if returned:
            runs_refresh({e.run_id: e.run.rubric_id for e in evaluations})
            evaluations_enqueue(ids)


def _execute(claims: list[Claim]) -> list[Outcome]:
    """Judge the claims the teams' judge budgets admit (judging.services.budget); the others
    wait as over budget."""
    admission = budget_admit(claims)
    if admission is None:
        return _judge_and_write(claims)
    admitted = [c for c, ok in zip(claims, admission.admitted, strict=True) if ok]
    judged: list[Outcome] | None = None
    try:
        judged = _judge_and_write(admitted)
    finally:
        recorded = None
        if judged is not None:
            recorded = {c.evaluation.id: o.usage for c, o in zip(admitted, judged, strict=True)}
        budget_settle(admission, recorded)
    done = iter(judged)
    return [next(done) if ok else Outcome("over_budget") for ok in admission.admitted]


def _judge_and_write(claims: list[Claim]) -> list[Outcome]:
    outcomes: dict[int, Outcome] = {}
    judging: list[tuple[int, Claim]] = []
    for i, claim in enumerate(claims):
        try:
            wait = _rate_wait(claim)
        except Exception as exc:  # noqa: BLE001 - ended below like any crash
            outcomes[i] = _crashed(claim, exc)
            continue
        if wait > 0:
            outcomes[i] = _defer(claim.evaluation, claim.token, wait)
        else:
            judging.append((i, claim))
    if judging:
        dbpool.release()  # the judge answers in seconds: no connection held meanwhile
    results = run_judged(_judge_all([claim for _, claim in judging])) if judging else []
    finished: list[tuple[int, Finished]] = []
    for (i, claim), result in zip(judging, results, strict=True):
        if isinstance(result, BaseException):
            outcomes[i] = _failed(claim, result)
        else:
            finished.append(
                (i, Finished(claim.evaluation, claim.token, result, claim.plan.criteria_ids))
            )
    if finished:
        written = _record_when_database_answers([job for _, job in finished])
        for (i, job), ok in zip(finished, written, strict=True):
            outcomes[i] = (
                Outcome("succeeded", usage=_recorded(job.result.calls), written=job.written)
                if ok
                else Outcome("lost_lease")
            )
    return [outcomes[i] for i in range(len(claims))]


def _record_when_database_answers(jobs: list[Finished]) -> list[bool]:
    """record_many, tried again while the database is away (a restart) until the claims'
    lease is about to run out: the verdicts are paid for, and a write after the lease would be
    a no-op anyway. Past that the error ends the unit (judging.services.stranded gives it back)."""
    leases = [j.evaluation.lease_expires_at for j in jobs if j.evaluation.lease_expires_at]
    until = min(leases) - RECORD_MARGIN if leases else timezone.now()
    delay = FIRST_DELAY
    while True:
        try:
            return record_many(jobs)
        except DATABASE_AWAY:
            if connection.in_atomic_block or timezone.now() + timedelta(seconds=delay) > until:
                raise
            if delay == FIRST_DELAY:
                logger.warning("database away: %d verdict(s) wait to be written", len(jobs))
        time.sleep(delay)  # the database restarts: nothing else to do but wait for it
        close_old_connections()  # drops the broken connection: the next try opens a fresh one
        delay = min(2 * delay, 5.0)


async def _judge_all(claims: list[Claim]) -> list[Any]:
    """Every claim's scoring, concurrently; each item the result or the exception raised."""
    return await asyncio.gather(*(_score(claim) for claim in claims), return_exceptions=True)


async def _score(claim: Claim) -> Any:
    evaluation, _, plan = claim
    TENANT.set(str(evaluation.team_id))  # this task's judge requests count as its team's
    if evaluation.kind == Kind.RUBRIC:
        return await rubric_scoring(
            run=evaluation.run,
            judge=plan.judge,
            criteria=plan.criteria,
            scale=evaluation.scale,
            strategy=evaluation.strategy,
            reuse=plan.reuse,
            shown=plan.shown,
            instructions=plan.instructions,
            examples=plan.examples,
        )
    return await alignment_scoring(evaluation, plan.judge, plan.shown)


def _failed(claim: Claim, exc: BaseException) -> Outcome:
    evaluation, token, _ = claim
    if isinstance(exc, TransientJudgeError):
        return _transient(evaluation, token, exc)
    if isinstance(exc, PermanentJudgeError | ScoringInputError | JudgeError):
        calls = getattr(exc, "calls", [])
        if record_failure(evaluation, token, str(exc), calls):
            return Outcome("failed", usage=_recorded(calls))
        return Outcome("lost_lease")
    if not isinstance(exc, Exception):
        raise exc  # KeyboardInterrupt, SystemExit, cancellation: not ours to swallow
    return _crashed(claim, exc)


def _crashed(claim: Claim, exc: BaseException) -> Outcome:
    """A bug of ours must still end the evaluation, not strand it. The team sees only a ref;
    the log line with the traceback carries the same ref."""
    ref = new_ref()
    logger.error("evaluation %s crashed (ref %s)", claim.evaluation.id, ref, exc_info=exc)
    record_failure(claim.evaluation, claim.token, internal_error(ref), [])
    return Outcome("failed")


def _rate_wait(claim: Claim) -> float:
    """Wait for the judge model's shared rate limit (evalsite.ratelimit); the seconds still to
    wait when that is longer than EVALSITE_RATE_MAX_WAIT. A limiter that is down lets the
    call through: the judge's own 429s are still handled as transient errors."""
    evaluation, _, plan = claim
    judge = plan.judge
    try:
        if limit_for(judge.model).unlimited:
            return 0.0  # the default: spend no CPU planning the call
        if plan.shown is not None and not plan.shown.has_output:
            return 0.0  # no output at all: scored without a judge call
        if evaluation.kind == Kind.RUBRIC:
            need = evaluation_plan(evaluation, judge, plan.criteria, plan.reuse)
        else:
            need = evaluation_plan(evaluation, judge)
        return judge_admit(model=judge.model, requests=need.requests, tokens=need.tokens)
    except Exception:  # noqa: BLE001 - fail open, loudly
        logger.exception("rate limiter unavailable for %s; calling the judge anyway", judge.model)
        return 0.0


def _defer(evaluation: Evaluation, token: uuid.UUID, wait: float) -> Outcome:
    """The model's rate limit is spent: hand the evaluation back for later without counting
    this as an attempt (nothing was asked of the judge)."""
    now = timezone.now()
    requeued = Evaluation.objects.filter(
        id=evaluation.id, status=Status.RUNNING, lease_token=token
    ).update(
        status=Status.QUEUED,
        attempts=F("attempts") - 1,
        lease_token=None,
        lease_expires_at=None,
        not_before=now + timedelta(seconds=wait),
        enqueued_at=now,
    )
    if not requeued:
        return Outcome("lost_lease")
    evaluation_publish_later(str(evaluation.id), countdown=wait)
    return Outcome("deferred", retry_in=wait)


def _transient(evaluation: Evaluation, token: uuid.UUID, exc: TransientJudgeError) -> Outcome:
    attempts = evaluation.attempts  # loaded after the claim incremented it
    if attempts >= settings.EVALSITE_MAX_ATTEMPTS:
        message = f"judge still unavailable after {attempts} attempts: {exc}"
        record_failure(evaluation, token, message, exc.calls)
        return Outcome("failed")
    delay = max(exc.retry_after or 0.0, min(2.0**attempts, 300.0))
    now = timezone.now()
    with transaction.atomic():
        requeued = Evaluation.objects.filter(
            id=evaluation.id, status=Status.RUNNING, lease_token=token
        ).update(
            status=Status.QUEUED,
            lease_token=None,
            lease_expires_at=None,
            not_before=now + timedelta(seconds=delay),
            enqueued_at=now,
            error=tenant_error(f"attempt {attempts} failed, retrying in {delay:.0f}s: {exc}"),
        )
        if requeued:
            run_refresh(evaluation.run_id)
    if not requeued:
        return Outcome("lost_lease")
    evaluation_publish_later(str(evaluation.id), countdown=delay)
    return Outcome("retrying", retry_in=delay)
