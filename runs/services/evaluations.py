"""Creating and enqueueing evaluations."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any
from uuid import UUID

from celery import signature
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from rubrics.judging import judge_config_for
from rubrics.models import AlignmentMode, Rubric, RubricVersion

from ..models import AgentRun, Evaluation, Kind, RescoreBatch, Status

logger = logging.getLogger(__name__)

# The tasks that judge evaluations (runs/tasks.py), sent by name: tasks import services, never
# the other way round. A signature by name publishes through the registered task where
# runs.tasks is loaded (workers), else through send_task; the worker applies the task's own
# options (time limits, acks_late) either way.
EVALUATE_TASK = "runs.tasks.evaluate"
EVALUATE_MANY_TASK = "runs.tasks.evaluate_many"


def evaluation_build(
    *,
    run: AgentRun,
    kind: str,
    rubric: Rubric | None = None,
    version: RubricVersion | None = None,
    inline_criteria: list[dict[str, Any]] | None = None,
    alignment_mode: str = "",
    judge_model: str = "",
    batch: RescoreBatch | None = None,
    force: bool = False,
    held: bool = False,
    judge_view: str = "",
    prices: Mapping[str, Any] | None = None,
) -> Evaluation:
    """A queued evaluation with its scoring parameters frozen, unsaved: ingest, re-scoring and
    calibration bulk-insert these, and the caller enqueues them. ``prices``: the team's judge
    price table (Team.judge_prices), frozen with the judge when it prices this model."""
    config = judge_config_for(rubric, model=judge_model, prices=prices)
    if kind == Kind.ALIGNMENT:
        mode = alignment_mode or (rubric.alignment_mode if rubric else AlignmentMode.BOTH)
    else:
        mode = ""
    # What the judge sees: ``judge_view`` when given (POST /api/score), else the version's view
    # (an alignment evaluation, and inline criteria replacing a rubric's, take the rubric's
    # current version's); rubric-less runs see the final view.
    seen = version or (rubric.current_version if rubric else None)
    return Evaluation(
        team_id=run.team_id,
        run=run,
        kind=kind,
        rubric=rubric,
        rubric_version=version if kind == Kind.RUBRIC else None,
        inline_criteria=inline_criteria if kind == Kind.RUBRIC and version is None else None,
        batch=batch,
        force=force,
        judge_model=config["model"],
        judge_config=config,
        scale=rubric.scale if rubric else 1.0,
        strategy=rubric.strategy if rubric else "batched",
        alignment_mode=mode,
        alignment_weights=rubric.alignment_weights if rubric else None,
        judge_view=judge_view or (seen.judge_view if seen is not None else "final"),
        run_token_budget=seen.run_token_budget if seen is not None else None,
        held=held,
    )


# A publish of more evaluations than one run has (rubric + alignment) is bulk work.
LIVE_MAX = 2


def evaluations_enqueue(ids: Iterable[UUID | str], *, bulk: bool | None = None) -> None:
    """Send each evaluation to the broker once the current transaction commits: on the bulk
    lane when ``bulk`` (None: when there are more than one run's worth), else on the live lane
    (settings.task_lanes).

    A broker that is down loses nothing: the rows stay queued with no ``enqueued_at`` and the
    sweeper sends them when the broker is back.
    """
    id_list = [str(i) for i in ids]
    lane_bulk = len(id_list) > LIVE_MAX if bulk is None else bulk
    if id_list:
        transaction.on_commit(lambda: evaluations_publish(id_list, bulk=lane_bulk))


def lane(*, bulk: bool) -> str:
    default = settings.CELERY_TASK_DEFAULT_QUEUE
    return f"{default}.bulk" if bulk else default


def evaluations_publish(
    ids: list[str], countdown: float | None = None, *, bulk: bool = True
) -> int:
    """Send the evaluations, EVALSITE_TASK_BATCH to a message (a worker judges one message's
    evaluations concurrently), on the bulk lane unless ``bulk`` is False; the number sent."""
    size = max(1, settings.EVALSITE_TASK_BATCH)
    queue = lane(bulk=bulk)
    sent: list[str] = []
    for start in range(0, len(ids), size):
        chunk = ids[start : start + size]
        try:
            if len(chunk) == 1:
                task = signature(EVALUATE_TASK, args=[chunk[0]])
            else:
                task = signature(EVALUATE_MANY_TASK, args=[chunk])
            task.apply_async(countdown=countdown, queue=queue)
        except Exception:  # noqa: BLE001 - any broker failure: the sweeper retries later
            logger.warning("broker unreachable; %d evaluation(s) stay queued", len(ids) - len(sent))
            break
        sent.extend(chunk)
    if sent:
        Evaluation.objects.filter(id__in=sent, status=Status.QUEUED).update(
            enqueued_at=timezone.now()
        )
    return len(sent)


def evaluation_publish_later(evaluation_id: str, countdown: float) -> None:
    """A retry or deferral: the bulk lane (it is not a new run)."""
    evaluations_publish([evaluation_id], countdown=countdown)
