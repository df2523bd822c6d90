"""Telling a rule's webhook that an alert fired or resolved.

Request: ``POST <webhook_url>`` with the headers of the re-score webhooks
(judging.services.rescore_webhook): ``X-Evalsite-Event: alert.fired`` or ``alert.resolved``,
``X-Evalsite-Delivery: <alert id>.<event>`` (the same on every retry: receivers dedupe on it)
and ``X-Evalsite-Signature: t=<unix seconds>,v1=<hex>``, the HMAC-SHA256 of ``"<t>." + body``
with the team's webhook signing secret. The body is ``{"event", "alert": {...}}`` for the
``json`` format, or ``{"text": "..."}`` (what Slack's incoming webhooks take) for ``slack``.

Any 2xx answer is a delivery; anything else, or no answer within EVALSITE_WEBHOOK_TIMEOUT, is
retried by the Celery task with exponential backoff up to EVALSITE_WEBHOOK_MAX_RETRIES times.
Every attempt is logged as an AlertDelivery. The outbound address guard (evalsite.outbound, with
EVALSITE_WEBHOOK_ALLOW_PRIVATE) resolves the host again on each attempt and connects only to an
address it checked.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import httpx
from celery import signature
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder

from evalsite.outbound import OutboundRefused, Purpose, outbound_post
from judge_engine.redact import new_ref, tenant_error
from judging.services.rescore_webhook import WebhookFailed, webhook_signature
from teams.services import team_webhook_secret

from ..models_alerts import Alert, AlertDelivery, WebhookFormat

logger = logging.getLogger(__name__)

ALERT_DELIVER_TASK = "reviews.tasks.alert_deliver"


def alert_notify(*, alert_id: Any, event: str) -> None:
    """Queue the webhook delivery of an alert's event, if its rule has a webhook. A broker
    that is down is logged, never raised: alerts must not break what evaluates them."""
    has_hook = Alert.objects.filter(pk=alert_id).exclude(rule__webhook_url="").exists()
    if not has_hook:
        return
    try:
        signature(ALERT_DELIVER_TASK, args=[str(alert_id), event]).apply_async()
    except Exception:  # noqa: BLE001 - any broker failure
        logger.warning("broker unreachable: alert %s %s not delivered", alert_id, event)


def alert_payload(alert: Alert, event: str) -> dict[str, Any]:
    rule = alert.rule
    runs = f"{settings.EVALSITE_PUBLIC_URL}/runs/?{alert.runs_query}" if alert.runs_query else ""
    if rule.webhook_format == WebhookFormat.SLACK:
        head = "Resolved" if event == "resolved" else "Alert"
        link = f" <{runs}|runs>" if runs else ""
        return {"text": f"{head}: {alert.message}{link}"}
    return {
        "event": f"alert.{event}",
        "alert": {
            "id": str(alert.pk),
            "rule_id": str(rule.pk),
            "kind": rule.kind,
            "rubric_id": str(rule.rubric_id) if rule.rubric_id else None,
            "criterion_key": rule.criterion_key or None,
            "threshold": rule.threshold,
            "value": alert.value,
            "message": alert.message,
            "run_ids": alert.run_ids,
            "runs_url": runs or None,
            "fired_at": alert.fired_at,
            "resolved_at": alert.resolved_at,
        },
    }


def alert_deliver(*, alert_id: Any, event: str, attempt: int = 1) -> bool:
    """POST the event to the rule's webhook. True when delivered, False when there is
    nothing to deliver (no alert, no URL, refused address); WebhookFailed to retry."""
    alert = Alert.objects.select_related("rule", "team").filter(pk=alert_id).first()
    if alert is None or not alert.rule.webhook_url:
        return False
    url = alert.rule.webhook_url
    body = json.dumps(
        alert_payload(alert, event), cls=DjangoJSONEncoder, separators=(",", ":")
    ).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "evalsite-webhook/1",
        "X-Evalsite-Event": f"alert.{event}",
        "X-Evalsite-Delivery": f"{alert.pk}.{event}",
        "X-Evalsite-Signature": webhook_signature(
            secret=team_webhook_secret(team=alert.team), body=body, timestamp=int(time.time())
        ),
    }
    try:
        answer = outbound_post(
            url, purpose=Purpose.WEBHOOK, content=body, headers=headers,
            timeout=settings.EVALSITE_WEBHOOK_TIMEOUT,
        )  # fmt: skip
    except OutboundRefused as exc:
        _log(alert, event, attempt, error=f"not delivered: the webhook URL {exc}")
        return False
    except httpx.HTTPError as exc:
        message = _transport_failure(alert, exc)
        _log(alert, event, attempt, error=message)
        raise WebhookFailed(message) from exc
    if not 200 <= answer.status_code < 300:
        phrase = httpx.codes.get_reason_phrase(answer.status_code)
        message = f"HTTP {answer.status_code} {phrase}".strip()
        _log(alert, event, attempt, status=answer.status_code, error=message)
        raise WebhookFailed(message)
    _log(alert, event, attempt, status=answer.status_code, ok=True)
    return True


def _transport_failure(alert: Alert, exc: httpx.HTTPError) -> str:
    """The kind of failure, never the exception's text (it may name server files); the log
    line has it under the same ref."""
    ref = new_ref()
    logger.warning("alert %s webhook not delivered (ref %s): %r", alert.pk, ref, exc)
    if isinstance(exc, httpx.TimeoutException):
        kind = f"no answer within {settings.EVALSITE_WEBHOOK_TIMEOUT:g}s"
    elif isinstance(exc, httpx.ConnectError):
        kind = "could not connect to the receiver"
    else:
        kind = "the request failed"
    return f"{kind} (ref {ref})"


def _log(
    alert: Alert, event: str, attempt: int, *, status: int | None = None, ok: bool = False,
    error: str = "",
) -> None:  # fmt: skip
    AlertDelivery.objects.create(
        alert=alert,
        event=event,
        attempt=attempt,
        status_code=status,
        ok=ok,
        error=tenant_error(error) if error else "",
    )
