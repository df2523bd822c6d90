"""Synchronous scoring (POST /api/score): store the run like any other, then wait for its
evaluations to end: told by the notification channel (runs/services/notify.py), or judged right
here in the web process (inline) through the worker's own claim, judge and write path."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from evalsite.errors import Conflict, TooManyRequests
from rubrics.services import criteria_from_any, criteria_validate
from teams.models import Team

from ..liveness import worker_missing_for
from ..models import AgentRun, Evaluation, Kind
from ..payloads import RunPayload
from ..ratelimit import backend
from ..selectors import evaluations_for_run
from .execute import Outcome, evaluations_execute
from .ingest import RunValidationError, run_ingest
from .notify import wait_for_evaluations

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


def score_submit(
    *, team: Team, payload: RunPayload, criteria: Any = None, judge_view: str = ""
) -> tuple[AgentRun, list[Evaluation]]:
    """Ingest the run (``criteria``, a list of {description, required} or text, replaces the
    rubric's) and return it with the evaluations that decide its score.

    Raises RunValidationError, storing nothing, when nothing would be scored (no criteria, no
    rubric with criteria, alignment off). The same external_id and content again returns the stored run
    and its evaluations; other inline criteria under that external_id raise ScoreConflict.
    """
    inline = _inline(criteria)
    # One transaction, so a run with nothing to score is not stored either.
    with transaction.atomic():
        run, created = run_ingest(
            team=team, payload=payload, inline_criteria=inline, judge_view=judge_view
        )
        evaluations = evaluations_for_run(run=run)
        if not created and inline is not None and not _scored_with(evaluations, inline):
            raise ScoreConflict(run)
        if not evaluations:
            raise RunValidationError(
                {
                    "criteria": "nothing to score: give criteria, a rubric with criteria, or alignment"
                }
            )
    return run, evaluations


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


def score_await(
    *, team: Team, evaluation_ids: list[Any], timeout: float, inline: bool = False
) -> bool:
    """Wait until every evaluation is final (succeeded, failed or cancelled); False when
    ``timeout`` seconds pass first. With ``inline`` (or when no worker was seen for
    EVALSITE_SCORE_INLINE_WHEN_NO_WORKER seconds) this process judges them first. A transient
    judge failure re-queues an evaluation, which keeps this waiting until the retry ends or
    time runs out."""
    deadline = time.monotonic() + timeout
    if _judge_here(inline) and score_inline(
        team=team, evaluation_ids=evaluation_ids, deadline=deadline
    ):
        return True
    return wait_for_evaluations(evaluation_ids, timeout=deadline - time.monotonic())


def _judge_here(inline: bool) -> bool:
    if inline:
        return True
    after = settings.EVALSITE_SCORE_INLINE_WHEN_NO_WORKER
    return after > 0 and worker_missing_for(after)


# --- Inline judging ----------------------------------------------------------------------------
# The evaluations were also sent to the broker as usual: whoever claims one first (a
# compare-and-set) judges it, the other skips it, and the lease guards the write. Judging runs in
# a small pool of this process's threads, not in the request's, so the request can answer 202
# when its time runs out while the judging goes on and is stored as a worker's would be.

_pool: ThreadPoolExecutor | None = None
_places: threading.BoundedSemaphore | None = None
_pool_lock = threading.Lock()
FINAL_OUTCOMES = ("succeeded", "failed")


def _inline_pool() -> tuple[ThreadPoolExecutor, threading.BoundedSemaphore]:
    global _pool, _places
    with _pool_lock:
        if _pool is None or _places is None:
            size = max(1, settings.EVALSITE_SCORE_INLINE_MAX)
            _pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="inline-judge")
            _places = threading.BoundedSemaphore(size)
        return _pool, _places


def score_inline(*, team: Team, evaluation_ids: list[Any], deadline: float) -> bool:
    """Judge the evaluations in this process (claim, judge, write: runs.services.execute);
    True when all of them ended here before ``deadline`` (time.monotonic()). False when a
    worker claimed one first, a judge failure was transient, every inline place of this process
    is taken (EVALSITE_SCORE_INLINE_MAX), or time ran out (the judging then goes on): the
    caller then waits for the evaluations' ends."""
    pool, places = _inline_pool()
    if not places.acquire(blocking=False):
        return False
    ids = [str(i) for i in evaluation_ids]
    try:
        future: Future[list[Outcome]] = pool.submit(_execute_inline, ids, str(team.pk), places)
    except BaseException:
        places.release()
        raise
    try:
        outcomes = future.result(timeout=max(0.0, deadline - time.monotonic()))
    except FutureTimeout:
        return False
    except Exception:  # noqa: BLE001 - the evaluations stay queued for a worker
        logger.exception("inline judging failed; waiting for a worker instead")
        return False
    return all(o.status in FINAL_OUTCOMES for o in outcomes)


def _execute_inline(ids: list[str], team_id: str, places: threading.BoundedSemaphore):
    try:
        return evaluations_execute(evaluation_ids=ids, team=team_id)
    finally:
        # A pool thread outlives the request: it keeps no database connection between jobs.
        connection.close()
        places.release()
