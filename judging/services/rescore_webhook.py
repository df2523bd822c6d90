"""The webhook a re-score batch calls once when it ends.

Request: ``POST <webhook_url>`` with a JSON body ``{"event": "batch.finished", "batch": {...}}``
(the same fields as ``GET /api/batches/{id}``) and the headers

* ``X-Evalsite-Event: batch.finished``
* ``X-Evalsite-Delivery: <batch id>`` — the same on every retry: receivers dedupe on it;
* ``X-Evalsite-Signature: t=<unix seconds>,v1=<hex>`` where ``hex`` is
  HMAC-SHA256(team webhook secret, ``"<t>." + raw body``). Receivers recompute it, compare in
  constant time and refuse old timestamps.

Any 2xx answer is a delivery. Anything else (or no answer within EVALSITE_WEBHOOK_TIMEOUT) is
retried by the Celery task with exponential backoff, up to EVALSITE_WEBHOOK_MAX_RETRIES times;
the last error is kept on the batch. The URL goes through the outbound address guard
(evalsite.outbound) when the batch is created and again on every delivery, when the connection
is made; a refused URL is not retried.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from typing import Any

import httpx
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import F
from django.utils import timezone

from evalsite.outbound import OutboundRefused, Purpose, outbound_post
from judge_engine.redact import new_ref, tenant_error
from runs.models import RescoreBatch
from runs.selectors import batch_progress
from teams.services import team_webhook_secret

logger = logging.getLogger(__name__)


class WebhookFailed(Exception):
    """The receiver did not accept the delivery (retry later)."""


def webhook_signature(*, secret: str, body: bytes, timestamp: int) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def webhook_verify(*, secret: str, body: bytes, header: str, tolerance: float = 300) -> bool:
    """What a receiver does (also used by our tests): check the signature and its age."""
    try:
        parts = dict(p.split("=", 1) for p in header.split(","))
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        return False
    expected = webhook_signature(secret=secret, body=body, timestamp=timestamp)
    fresh = abs(time.time() - timestamp) <= tolerance
    return fresh and hmac.compare_digest(expected, header)


def _body(batch: RescoreBatch) -> bytes:
    payload = {"event": "batch.finished", "batch": batch_progress(batch=batch).as_json()}
    return json.dumps(payload, cls=DjangoJSONEncoder, separators=(",", ":")).encode()


def batch_webhook_deliver(*, batch_id: Any) -> bool:
    """POST the batch's end to its webhook. True when delivered now, False when there is
    nothing to do (no URL, not ended, already delivered); WebhookFailed to retry."""
    batch = RescoreBatch.objects.select_related("team").filter(pk=batch_id).first()
    if batch is None or not batch.webhook_url or batch.finished_at is None:
        return False
    if batch.webhook_delivered_at is not None:
        return False
    body = _body(batch)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "evalsite-webhook/1",
        "X-Evalsite-Event": "batch.finished",
        "X-Evalsite-Delivery": str(batch.pk),
        "X-Evalsite-Signature": webhook_signature(
            secret=team_webhook_secret(team=batch.team), body=body, timestamp=int(time.time())
        ),
    }
    RescoreBatch.objects.filter(pk=batch.pk).update(webhook_attempts=F("webhook_attempts") + 1)
    try:
        answer = outbound_post(
            batch.webhook_url, purpose=Purpose.WEBHOOK, content=body, headers=headers,
            timeout=settings.EVALSITE_WEBHOOK_TIMEOUT,
        )  # fmt: skip
    except OutboundRefused as exc:  # checked again: DNS may have changed since the batch began
        RescoreBatch.objects.filter(pk=batch.pk).update(
            webhook_error=f"not delivered: the webhook URL {exc}"[:2000]
        )
        return False
    except httpx.HTTPError as exc:
        _failed(batch, _transport_failure(batch, exc))
    if not 200 <= answer.status_code < 300:
        # The status only (with its standard phrase, not the receiver's): echoing what the
        # receiver wrote would let a webhook read a service.
        phrase = httpx.codes.get_reason_phrase(answer.status_code)
        _failed(batch, f"HTTP {answer.status_code} {phrase}".strip())
    RescoreBatch.objects.filter(pk=batch.pk, webhook_delivered_at__isnull=True).update(
        webhook_delivered_at=timezone.now(), webhook_error=""
    )
    return True


def _transport_failure(batch: RescoreBatch, exc: httpx.HTTPError) -> str:
    """What the team is told when no answer came: the kind of failure, never the exception's
    text (an OSError's may name server files); the log line has it under the same ref."""
    ref = new_ref()
    logger.warning("webhook of batch %s not delivered (ref %s): %r", batch.pk, ref, exc)
    if isinstance(exc, httpx.TimeoutException):
        kind = f"no answer within {settings.EVALSITE_WEBHOOK_TIMEOUT:g}s"
    elif isinstance(exc, httpx.ConnectError):
        kind = "could not connect to the receiver"
    elif isinstance(exc, httpx.RemoteProtocolError):
        kind = "the receiver's answer was not valid HTTP"
    else:
        kind = "the request failed"
    return f"{kind} (ref {ref})"


def _failed(batch: RescoreBatch, message: str) -> None:
    RescoreBatch.objects.filter(pk=batch.pk).update(webhook_error=tenant_error(message))
    raise WebhookFailed(message)


def webhook_backoff(retries: int) -> float:
    """Seconds before retry number ``retries + 1``: 1, 2, 4, … with the default base 2."""
    return min(3600.0, settings.EVALSITE_WEBHOOK_BACKOFF**retries)
