"""Re-score batches after creation: releasing held work a window at a time, ending, cancelling.

See judging.services.rescore for the lifecycle and the fairness rule. Every state change here is a
compare-and-set or runs under the batch's row lock, so a duplicate call, a concurrent worker or
the sweeper doing the same thing at once does no harm.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from celery import signature
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from evalsite.notify import evaluations_ended
from runs.hooks import batch_ended_hooks
from runs.models import PENDING_STATUSES, AgentRun, BatchStatus, Evaluation, RescoreBatch, Status
from runs.services.evaluations import evaluations_enqueue
from runs.services.rollups_evaluations import rollup_evaluations_ended
from runs.services.run_state import run_refresh

from .rescore_scope import chunks

logger = logging.getLogger(__name__)

BATCH_WEBHOOK_TASK = "runs.tasks.batch_webhook"


def batch_dispatch(*, batch_id: Any) -> int:
    """Release held evaluations of one batch until ``batch.window`` of them are in the broker
    or running; they are published when this commits. Returns how many were released.

    The batch row is locked while counting, so concurrent top-ups never exceed the window."""
    with transaction.atomic():
        batch = (
            RescoreBatch.objects.select_for_update()
            .filter(pk=batch_id, finished_at__isnull=True, cancelled_at__isnull=True)
            .first()
        )
        if batch is None:
            return 0
        mine = Evaluation.objects.filter(batch_id=batch_id)
        outstanding = mine.filter(held=False, status__in=PENDING_STATUSES).count()
        room = batch.window - outstanding
        if room <= 0:
            return 0
        ids = list(
            mine.filter(held=True, status=Status.QUEUED)
            .order_by("created_at", "id")
            .values_list("id", flat=True)[:room]
        )
        if not ids:
            return 0
        released = mine.filter(pk__in=ids, held=True, status=Status.QUEUED).update(held=False)
        if batch.status == BatchStatus.QUEUED:
            RescoreBatch.objects.filter(pk=batch_id, status=BatchStatus.QUEUED).update(
                status=BatchStatus.RUNNING, started_at=timezone.now()
            )
        evaluations_enqueue(ids)
    return released


def batch_finish_if_done(*, batch_id: Any) -> bool:
    """End the batch when none of its evaluations is pending (compare-and-set: once). Safe to
    call any time from anywhere; True when the batch is (now) finished."""
    if Evaluation.objects.filter(batch_id=batch_id, status__in=PENDING_STATUSES).exists():
        return False
    batch = RescoreBatch.objects.filter(pk=batch_id).only("finished_at", "cancelled_at").first()
    if batch is None:
        return False
    if batch.finished_at is not None:
        return True
    failed = Evaluation.objects.filter(batch_id=batch_id, status=Status.FAILED).exists()
    if batch.cancelled_at is not None:
        status = BatchStatus.CANCELLED
    else:
        status = BatchStatus.COMPLETED_WITH_FAILURES if failed else BatchStatus.COMPLETED
    now = timezone.now()
    with transaction.atomic():
        ended = RescoreBatch.objects.filter(pk=batch_id, finished_at__isnull=True).update(
            status=status, finished_at=now
        )
        RescoreBatch.objects.filter(pk=batch_id, started_at__isnull=True).update(started_at=now)
        if ended:
            transaction.on_commit(lambda: _send_webhook(batch_id), robust=True)
            for hook in batch_ended_hooks():  # e.g. a comparison's publishing gate (reviews)
                transaction.on_commit(partial(hook, batch_id), robust=True)
    return True


def batch_evaluation_finished(*, batch_id: Any) -> None:
    """Called by the worker after an evaluation of the batch ended (results.py, on commit):
    end the batch after its last evaluation, else refill its window once half of it is free.

    Refilling by half windows takes the batch lock once per window/2 evaluations instead of
    once per evaluation (on SQLite every lock is the database's single write lock)."""
    window = RescoreBatch.objects.filter(pk=batch_id).values_list("window", flat=True).first()
    if window is None:
        return
    pending = Evaluation.objects.filter(batch_id=batch_id, status__in=PENDING_STATUSES).aggregate(
        released=Count("id", filter=Q(held=False)), held=Count("id", filter=Q(held=True))
    )
    if not pending["released"] and not pending["held"]:
        batch_finish_if_done(batch_id=batch_id)
    elif pending["held"] and pending["released"] <= window // 2:
        batch_dispatch(batch_id=batch_id)


def batch_cancel(*, batch: RescoreBatch) -> RescoreBatch:
    """Cancel queued work (compare-and-set: a claimed evaluation is left to finish); the batch
    is ``cancelled`` at once and ends when its running evaluations have finished. Cancelling
    an ended batch changes nothing."""
    now = timezone.now()
    with transaction.atomic():
        changed = RescoreBatch.objects.filter(
            pk=batch.pk, finished_at__isnull=True, cancelled_at__isnull=True
        ).update(status=BatchStatus.CANCELLED, cancelled_at=now)
    if changed:
        _cancel_queued(batch.pk, now)
        batch_finish_if_done(batch_id=batch.pk)
    batch.refresh_from_db()
    return batch


def _cancel_queued(batch_id: Any, now: datetime) -> int:
    # Work waiting over the judge budget is not started either: it is cancelled too.
    waiting = [Status.QUEUED, Status.OVER_BUDGET]
    queued = Evaluation.objects.filter(batch_id=batch_id, status__in=waiting)
    rows = list(queued.values_list("id", "run_id"))
    with transaction.atomic():  # the cancel and its count in the rollup: both or neither
        cancelled = queued.update(
            status=Status.CANCELLED, held=False, not_before=None, finished_at=now,
            error="cancelled with its re-score batch",
        )  # fmt: skip
        rollup_evaluations_ended(ids=[row_id for row_id, _ in rows], finished_at=now)
    evaluations_ended([row_id for row_id, _ in rows])  # anyone waiting on them: they ended
    _refresh_runs([run_id for _, run_id in rows])
    return cancelled


def _refresh_runs(run_ids: Iterable[Any]) -> None:
    """Recompute the runs' denormalised status, each under its row lock like results.py."""
    for chunk in chunks(sorted(set(run_ids), key=str)):
        with transaction.atomic():
            list(
                AgentRun.objects.select_for_update(no_key=True)
                .filter(pk__in=chunk)
                .order_by("pk")
                .values_list("pk")
            )
            for run_id in chunk:
                run_refresh(run_id)


def batches_sweep(*, now: datetime | None = None) -> int:
    """The sweeper's share: for every unfinished batch, cancel what a cancel left queued (a
    lease expired after it), end it if nothing is pending, else refill its window; resend
    webhooks a broker outage dropped. Returns how many evaluations were released."""
    now = now or timezone.now()
    released = 0
    unfinished = RescoreBatch.objects.filter(finished_at__isnull=True).order_by("created_at")
    for batch_id, cancelled_at in unfinished.values_list("id", "cancelled_at"):
        if cancelled_at is not None:
            _cancel_queued(batch_id, now)
        if not batch_finish_if_done(batch_id=batch_id):
            released += batch_dispatch(batch_id=batch_id)
    _resend_webhooks(now)
    return released


# --- Webhook ------------------------------------------------------------------------------------


def _send_webhook(batch_id: Any) -> None:
    if RescoreBatch.objects.filter(pk=batch_id).exclude(webhook_url="").exists():
        # By name: tasks import services, never the other way round.
        signature(BATCH_WEBHOOK_TASK, args=(str(batch_id),)).apply_async()


def _resend_webhooks(now: datetime) -> None:
    """A webhook whose first message the broker never got: send it again after a minute."""
    lost = RescoreBatch.objects.filter(
        finished_at__lt=now - timedelta(seconds=60),
        webhook_delivered_at__isnull=True,
        webhook_attempts=0,
    ).exclude(webhook_url="")
    for batch_id in lost.values_list("id", flat=True)[:100]:
        try:
            _send_webhook(batch_id)
        except Exception:  # noqa: BLE001 - broker still down: the next sweep tries again
            logger.warning("could not enqueue the webhook of batch %s", batch_id)
            return
