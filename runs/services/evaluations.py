"""Creating and enqueueing evaluations."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from rubrics.models import AlignmentMode, Rubric, RubricVersion

from ..models import AgentRun, Evaluation, Kind, RescoreBatch, Status

logger = logging.getLogger(__name__)


def judge_config_for(rubric: Rubric | None, *, model: str = "") -> dict[str, Any]:
    """The judge an evaluation is frozen with: model and parameters, and the id of the rubric's
    judge connection when it has one (never a key: runs.services.judges reads the key, and the
    connection's address, when the evaluation is judged)."""
    params = {k: v for k, v in (rubric.judge_params if rubric else {}).items() if v is not None}
    params.pop("api_base", None)  # rubrics no longer carry one (rubrics/judging.py)
    connection = rubric.judge_connection if rubric else None
    config: dict[str, Any] = {"timeout": settings.EVALSITE_JUDGE_TIMEOUT}
    if connection is not None:
        config.update(connection.params)
        config["model"] = model or rubric.judge_model or connection.model  # type: ignore[union-attr]
        config["connection"] = str(connection.pk)
    else:
        chosen = model or (rubric.judge_model if rubric else "")
        config["model"] = chosen or settings.EVALSITE_JUDGE_MODEL
        # The deployment's own address, written by the server (teams never write this).
        config["api_base"] = settings.EVALSITE_JUDGE_API_BASE or None
    config.update(params)
    return config


def evaluation_create(
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
) -> Evaluation:
    """A queued evaluation with its scoring parameters frozen; the caller enqueues it."""
    evaluation = evaluation_build(
        run=run,
        kind=kind,
        rubric=rubric,
        version=version,
        inline_criteria=inline_criteria,
        alignment_mode=alignment_mode,
        judge_model=judge_model,
        batch=batch,
        force=force,
    )
    evaluation.save(force_insert=True)
    return evaluation


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
) -> Evaluation:
    """The unsaved evaluation ``evaluation_create`` would store (re-scoring bulk-inserts these)."""
    config = judge_config_for(rubric, model=judge_model)
    if kind == Kind.ALIGNMENT:
        mode = alignment_mode or (rubric.alignment_mode if rubric else AlignmentMode.BOTH)
    else:
        mode = ""
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
        transaction.on_commit(lambda: _publish(id_list, bulk=lane_bulk))


def lane(*, bulk: bool) -> str:
    default = settings.CELERY_TASK_DEFAULT_QUEUE
    return f"{default}.bulk" if bulk else default


def _publish(ids: list[str], countdown: float | None = None, *, bulk: bool = True) -> int:
    """Send the evaluations, EVALSITE_TASK_BATCH to a message (a worker judges one message's
    evaluations concurrently), on the bulk lane unless ``bulk`` is False; the number sent."""
    from ..tasks import evaluate, evaluate_many

    size = max(1, settings.EVALSITE_TASK_BATCH)
    queue = lane(bulk=bulk)
    sent: list[str] = []
    for start in range(0, len(ids), size):
        chunk = ids[start : start + size]
        try:
            if len(chunk) == 1:
                evaluate.apply_async(args=[chunk[0]], countdown=countdown, queue=queue)
            else:
                evaluate_many.apply_async(args=[chunk], countdown=countdown, queue=queue)
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
    _publish([evaluation_id], countdown=countdown)
