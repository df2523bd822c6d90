"""Celery tasks of reviews: alert rules evaluated on a beat schedule, webhook deliveries,
suggested criterion edits asked of the judge."""

from celery import shared_task
from django.conf import settings

from judge_engine import TransientJudgeError
from judging.services.rescore_webhook import WebhookFailed, webhook_backoff

from .services.alert_delivery import ALERT_DELIVER_TASK, alert_deliver
from .services.alerts import alerts_evaluate
from .services.retention import retention_enforce
from .services.suggestions import STALE_SECONDS, SUGGEST_TASK, suggestion_generate


@shared_task(name="reviews.tasks.alerts_evaluate", ignore_result=True, time_limit=120)
def alerts_evaluate_task() -> dict[str, int]:
    report = alerts_evaluate()
    return {"fired": report.fired, "resolved": report.resolved}


@shared_task(
    name=ALERT_DELIVER_TASK,
    bind=True,
    acks_late=True,
    ignore_result=True,
    time_limit=settings.EVALSITE_WEBHOOK_TIMEOUT + 30,
    max_retries=settings.EVALSITE_WEBHOOK_MAX_RETRIES,
)
def alert_deliver_task(self, alert_id: str, event: str) -> bool:
    """Tell a rule's webhook that an alert fired or resolved; retried with backoff."""
    try:
        return alert_deliver(alert_id=alert_id, event=event, attempt=self.request.retries + 1)
    except WebhookFailed as exc:
        raise self.retry(exc=exc, countdown=webhook_backoff(self.request.retries)) from exc


@shared_task(name="reviews.tasks.retention_enforce", ignore_result=True, time_limit=900)
def retention_enforce_task() -> dict[str, int]:
    """Delete runs past their team's retention, in bounded batches (the next tick goes on)."""
    report = retention_enforce()
    return {"deleted": report.deleted, "batches": report.batches}


@shared_task(
    name=SUGGEST_TASK,
    bind=True,
    acks_late=True,
    ignore_result=True,
    time_limit=STALE_SECONDS - 60,
    max_retries=3,
)
def suggestion_generate_task(self, suggestion_id: str) -> str | None:
    """Ask the judge for a suggested criterion edit; transient judge failures retry with
    backoff, the last one marks the suggestion failed."""
    final = self.request.retries >= self.max_retries
    try:
        return suggestion_generate(suggestion_id=suggestion_id, final_attempt=final)
    except TransientJudgeError as exc:
        countdown = exc.retry_after or 5 * 2**self.request.retries
        raise self.retry(exc=exc, countdown=min(countdown, 120)) from exc
