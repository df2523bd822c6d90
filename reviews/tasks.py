"""Celery tasks of reviews: alert rules evaluated on a beat schedule, webhook deliveries."""

from celery import shared_task
from django.conf import settings

from judging.services.rescore_webhook import WebhookFailed, webhook_backoff

from .services.alert_delivery import ALERT_DELIVER_TASK, alert_deliver
from .services.alerts import alerts_evaluate
from .services.retention import retention_enforce


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
