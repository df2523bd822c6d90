"""Judging's Celery tasks: parse ids, call one service. All state changes are compare-and-set.

Their names keep the ``runs.tasks.`` prefix they had before judging became its own app, so a
message queued by an older release (or a beat schedule) still finds its task."""

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections

from runs.services.evaluations import EVALUATE_MANY_TASK, EVALUATE_TASK

from .services.budget import budget_holds_expire, budgets_resume
from .services.fair import evaluations_execute_fairly
from .services.rescore_dispatch import BATCH_WEBHOOK_TASK
from .services.rescore_webhook import WebhookFailed, batch_webhook_deliver, webhook_backoff
from .services.sweep import evaluations_sweep

# Both evaluation tasks: acknowledged once the work has ended, redelivered if the worker dies.
EVALUATION_TASK = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "ignore_result": True,
    # Time limits are enforced by the judge timeout inside (thread pools cannot kill a task);
    # under prefork these also bound a stuck task.
    "soft_time_limit": settings.EVALSITE_TASK_TIME_LIMIT,
    "time_limit": settings.EVALSITE_TASK_TIME_LIMIT + 30,
    # Transient judge failures re-queue through the database (see services.execute), so
    # Celery itself never retries: a retry here could not be deduplicated.
    "max_retries": 0,
}


@shared_task(name=EVALUATE_TASK, **EVALUATION_TASK)
def evaluate(evaluation_id: str) -> dict[str, int]:
    """One evaluation (a single run's): see evaluate_many."""
    return _execute_fairly([evaluation_id])


@shared_task(name=EVALUATE_MANY_TASK, **EVALUATION_TASK)
def evaluate_many(evaluation_ids: list[str]) -> dict[str, int]:
    """Several evaluations in one message (bulk ingest, re-score): judged concurrently, each
    claimed and written exactly as alone; a team over its share of the worker's threads has
    its evaluations parked instead (judging.fair_worker). The message is acknowledged when this
    thread is done. Outcomes counted by status."""
    return _execute_fairly(list(evaluation_ids))


def _execute_fairly(evaluation_ids: list[str]) -> dict[str, int]:
    close_old_connections()
    try:
        return dict(evaluations_execute_fairly(evaluation_ids=evaluation_ids))
    finally:
        close_old_connections()


@shared_task(name="runs.tasks.sweep", ignore_result=True, time_limit=120)
def sweep() -> dict:
    report = evaluations_sweep()
    return {
        "expired": report.expired,
        "failed": report.failed,
        "resent": report.resent,
        "dispatched": report.dispatched,
    }


@shared_task(name="runs.tasks.budgets_tick", ignore_result=True, time_limit=120)
def budgets_tick() -> dict:
    """Judge budgets: give back reservations of dead workers, then queue over-budget work of
    teams with room again (a new day or month; a raised budget already did at its save)."""
    return {"released": budget_holds_expire(), "resumed": budgets_resume()}


@shared_task(
    name=BATCH_WEBHOOK_TASK,
    bind=True,
    acks_late=True,
    ignore_result=True,
    time_limit=settings.EVALSITE_WEBHOOK_TIMEOUT + 30,
    max_retries=settings.EVALSITE_WEBHOOK_MAX_RETRIES,
)
def batch_webhook(self, batch_id: str) -> bool:
    """Tell a re-score batch's webhook that it ended; retried with exponential backoff."""
    try:
        return batch_webhook_deliver(batch_id=batch_id)
    except WebhookFailed as exc:
        raise self.retry(exc=exc, countdown=webhook_backoff(self.request.retries)) from exc
