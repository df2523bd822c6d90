"""Synchronous scoring (POST /api/score): store the run like any other, then wait for its
evaluations to end: told by the notification channel (evalsite/notify.py), or judged right
here in the web process (inline) through the worker's own claim, judge and write path."""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.conf import settings
from django.db import transaction

from evalsite import dbpool
from evalsite.errors import Conflict, TooManyRequests
from evalsite.notify import wait_for_ends
from evalsite.ratelimit import backend
from rubrics.services import criteria_from_any, criteria_validate
from runs.models import PENDING_STATUSES, AgentRun, Evaluation, Kind, Status
from runs.payloads import RunPayload
from runs.selectors import Scored, evaluations_for_run, evaluations_pending
from runs.services.evaluations import evaluation_build, evaluations_enqueue
from runs.services.ingest import NothingToScore, RunValidationError, run_store, version_evaluation
from teams.models import Team

from ..liveness import worker_missing_for
from .execute import Outcome
from .inline import InlineSlot, inline_finished, inline_reserve, score_inline

logger = logging.getLogger(__name__)


class ScoreBusy(TooManyRequests):
    """The team already has EVALSITE_SCORE_MAX_WAITING calls waiting for their results."""

    retry_after = 2

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"this team already has {limit} POST /api/score calls waiting for results "
            f"(EVALSITE_SCORE_MAX_WAITING={limit}): retry after {self.retry_after} s, or send "
            "runs with POST /api/runs and poll them",
            limit=limit,
        )


@contextlib.contextmanager
def score_waiting_slot(*, team: Team, timeout: float) -> Iterator[None]:
    """Hold one of the team's EVALSITE_SCORE_MAX_WAITING places for a waiting score call
    (shared by every web process; a place whose process died frees itself after the wait's
    ``timeout``). Raises ScoreBusy, storing nothing, when all are taken; 0 turns the cap off.
    A store that cannot be reached lets the call through (logged), as the request limit does."""
    limit = settings.EVALSITE_SCORE_MAX_WAITING
    key = f"evalsite:score-waiting:{team.pk}"
    token = _hold(key, limit, ttl=timeout + 30) if limit > 0 else ""
    if token is None:
        raise ScoreBusy(limit)
    try:
        yield
    finally:
        if token:
            _release(key, token)


def _hold(key: str, limit: int, ttl: float) -> str | None:
    try:
        return backend().hold(key, limit, ttl=ttl)
    except Exception:  # noqa: BLE001 - fail open, loudly
        logger.exception("rate-limit store unavailable; not capping waiting score calls")
        return ""


def _release(key: str, token: str) -> None:
    try:
        backend().release(key, token)
    except Exception:  # noqa: BLE001 - the place expires with its ttl anyway
        logger.exception("could not give back a waiting score place; it expires on its own")


class ScoreConflict(Conflict, ValueError):
    """The external_id names a run that was scored with other inline criteria."""

    def __init__(self, run: AgentRun) -> None:
        super().__init__(
            f"external_id {run.external_id!r} already names a run scored with other criteria",
            extra={"run_id": str(run.id)},
        )
        self.run = run


@dataclass
class Submitted:
    """A stored score call: the run, the evaluations that decide its score, whether this
    process judges them (``judging``: already started on an inline thread), and whether they
    are a ``stored`` result (the external_id's run from an earlier call, not judged again)."""

    run: AgentRun
    evaluations: list[Evaluation]
    here: bool = False
    judging: Future[list[Outcome]] | None = None
    stored: bool = False


def score_submit(
    *,
    team: Team,
    payload: RunPayload,
    criteria: Any = None,
    judge_view: str = "",
    inline: bool = False,
    fresh: bool = False,
) -> Submitted:
    """Ingest the run (``criteria``, a list of {description, required} or text, replaces the
    rubric's) and return it with the evaluations that decide its score.

    With ``inline`` (or no worker seen for EVALSITE_SCORE_INLINE_WHEN_NO_WORKER seconds) and a
    free inline thread, a new run's evaluations are stored claimed by this call and their
    judging starts at once (judging.services.inline); otherwise they are queued for the workers.

    Raises RunValidationError, storing nothing, when nothing would be scored (no criteria, no
    rubric with criteria, alignment off). The same external_id and content again returns the stored run
    and its evaluations (``stored``), or with ``fresh`` judges it again (score_rejudge); other
    inline criteria under that external_id raise ScoreConflict.
    """
    parsed = _inline(criteria)
    here = _judge_here(inline)
    slot = inline_reserve() if here else None
    token = uuid.uuid4() if slot is not None else None
    try:
        run, created, built = run_store(
            team=team,
            payload=payload,
            inline_criteria=parsed,
            judge_view=judge_view,
            claim=token,
            scored_only=True,
        )
        evaluations = built if built is not None else evaluations_for_run(run=run)
        if not created and parsed is not None and not _scored_with(evaluations, parsed):
            raise ScoreConflict(run)
        if not evaluations:  # a run stored before by POST /api/runs with nothing to score
            raise NothingToScore()
        if fresh and not created:
            evaluations = score_rejudge(team=team, run=run, evaluations=evaluations)
    except BaseException:
        if slot is not None:
            slot.release()
        raise
    judging = _start(slot, created, evaluations, token)
    return Submitted(run, evaluations, here, judging, stored=not created and not fresh)


def _start(
    slot: InlineSlot | None, created: bool, evaluations: list[Evaluation], token: Any
) -> Future[list[Outcome]] | None:
    if slot is None:
        return None
    if not created:  # a stored run: its evaluations are the queue's (score_await claims them)
        slot.release()
        return None
    return slot.start(evaluations=evaluations, token=token)


def score_rejudge(*, team: Team, run: AgentRun, evaluations: list[Evaluation]) -> list[Evaluation]:
    """A stored run judged again (``fresh``), as a re-score judges it: a new evaluation of each
    kind it is scored with (its rubric's current version, or the same inline criteria in the
    same view; its alignment), queued for the workers; the earlier evaluations stay in its
    history, and verdicts whose criterion, content and judge are unchanged are reused
    (SCORING.md "Verdict reuse"). An evaluation still pending (a call that ran out of time)
    is being judged now: it is the one awaited, none is added. Returns the run's newest
    evaluations (a concurrent fresh call's twin, when the pending constraint kept ours out)."""
    if any(e.status in PENDING_STATUSES for e in evaluations):
        return evaluations
    built = [
        _again(run, e, team.judge_prices)
        for e in evaluations
        if e.kind == Kind.ALIGNMENT or e.rubric_id == run.rubric_id
    ]
    with transaction.atomic():
        Evaluation.objects.bulk_create(built, ignore_conflicts=True)
        ids = list(
            Evaluation.objects.filter(pk__in=[e.pk for e in built]).values_list("pk", flat=True)
        )
        AgentRun.objects.filter(pk=run.pk).exclude(status=Status.RUNNING).update(
            status=Status.QUEUED
        )
        evaluations_enqueue(ids, bulk=False)
    return evaluations_for_run(run=run)


def _again(run: AgentRun, stored: Evaluation, prices: Any) -> Evaluation:
    """A new evaluation of ``run`` judging what ``stored`` judged, on today's rubric version."""
    rubric = stored.rubric
    if stored.kind == Kind.ALIGNMENT:
        return evaluation_build(
            run=run, kind=Kind.ALIGNMENT, rubric=rubric, alignment_mode=stored.alignment_mode,
            prices=prices,
        )  # fmt: skip
    if stored.inline_criteria is not None:
        return evaluation_build(
            run=run, kind=Kind.RUBRIC, rubric=rubric, inline_criteria=stored.inline_criteria,
            judge_view=stored.judge_view, prices=prices,
        )  # fmt: skip
    if rubric is not None and rubric.current_version_id:
        return version_evaluation(run=run, rubric=rubric, prices=prices)
    return evaluation_build(
        run=run, kind=Kind.RUBRIC, rubric=rubric, version=stored.rubric_version, prices=prices
    )


def _inline(criteria: Any) -> list[dict[str, Any]] | None:
    if criteria is None:
        return None
    parsed = criteria_from_any(criteria)
    if not parsed:
        raise RunValidationError({"criteria": "give at least one criterion"})
    criteria_validate(parsed)
    return [{"description": c.description, "required": c.required} for c in parsed]


def _scored_with(evaluations: list[Evaluation], inline: list[dict[str, Any]]) -> bool:
    rubric = [e for e in evaluations if e.kind == Kind.RUBRIC]
    return any(e.inline_criteria == inline for e in rubric)


class Awaited(NamedTuple):
    """How a wait ended: ``finished`` when every evaluation is final; ``scored``, the answer's
    rows, when this process judged them all successfully and has what it stored (else the
    caller reads them: runs.selectors.evaluations_scored)."""

    finished: bool
    scored: Scored | None = None


def wait_for_evaluations(ids: list[Any], timeout: float) -> bool:
    """Wait until every evaluation is final (evalsite/notify.py tells of ends); False when
    ``timeout`` seconds pass first."""
    return wait_for_ends(ids, timeout, lambda waiting: evaluations_pending(ids=waiting) > 0)


def score_await(*, team: Team, submitted: Submitted, timeout: float) -> Awaited:
    """Wait until every evaluation is final (succeeded, failed or cancelled), or ``timeout``
    seconds pass (not finished). When this process judges them (``submitted.here``) it waits
    for its own judging first; a stored run's evaluations it claims from the queue. A
    transient judge failure re-queues an evaluation, which keeps this waiting until the retry
    ends or time runs out."""
    deadline = time.monotonic() + timeout
    ids = [e.id for e in submitted.evaluations]
    outcomes = None
    dbpool.release()  # the judging runs on other threads: no connection held while it does
    if submitted.judging is not None:
        outcomes = inline_finished(submitted.judging, deadline)
    elif submitted.here:
        outcomes = score_inline(team=team, evaluation_ids=ids, deadline=deadline)
    if outcomes is not None:
        return Awaited(True, _scored(outcomes))
    return Awaited(wait_for_evaluations(ids, timeout=deadline - time.monotonic()))


def _scored(outcomes: list[Outcome]) -> Scored | None:
    """The answer's rows as the inline judging stored them, when every evaluation succeeded
    (ordered as evaluations_scored orders them)."""
    written = [o.written for o in outcomes]
    if not written or any(w is None for w in written):
        return None
    rows = sorted(
        (w for w in written if w is not None),
        key=lambda w: (w.evaluation.created_at, w.evaluation.kind),
    )
    return Scored(
        [w.evaluation for w in rows],
        {w.evaluation.id: w.verdicts for w in rows if w.evaluation.kind == Kind.RUBRIC},
        {w.evaluation.id: w.breakdowns for w in rows if w.evaluation.kind == Kind.ALIGNMENT},
    )


def _judge_here(inline: bool) -> bool:
    if inline:
        return True
    after = settings.EVALSITE_SCORE_INLINE_WHEN_NO_WORKER
    return after > 0 and worker_missing_for(after)
