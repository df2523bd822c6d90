"""Error texts stored before the storing side cleaned them: the same cleaning, once, in place.

Everything written since goes through judge_engine.redact.tenant_error when it is stored; rows
written earlier may still hold a traceback, a server path or a long text. `manage.py
redact_errors` runs this; it is idempotent (a clean text is left as it is).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from judge_engine.redact import tenant_error

from ..models import Evaluation, RescoreBatch

CHUNK = 500


@dataclass(frozen=True)
class Redacted:
    evaluations: int
    batches: int


def _clean_calls(calls: list[Any]) -> list[Any]:
    return [
        {**c, "error": tenant_error(c["error"])} if isinstance(c, dict) and c.get("error") else c
        for c in calls
    ]


def _evaluations_redact() -> int:
    changed = 0
    rows = Evaluation.objects.only("id", "error", "calls").order_by("pk")
    batch: list[Evaluation] = []
    for e in rows.iterator(chunk_size=CHUNK):
        error, calls = tenant_error(e.error), _clean_calls(e.calls or [])
        if error != e.error or calls != (e.calls or []):
            e.error, e.calls = error, calls
            batch.append(e)
        if len(batch) >= CHUNK:
            changed += _save(batch)
    return changed + _save(batch)


def _save(rows: list[Evaluation]) -> int:
    with transaction.atomic():
        Evaluation.objects.bulk_update(rows, ["error", "calls"])
    done = len(rows)
    rows.clear()
    return done


def _batches_redact() -> int:
    changed = 0
    for batch in RescoreBatch.objects.exclude(webhook_error="").only("id", "webhook_error"):
        clean = tenant_error(batch.webhook_error)
        if clean != batch.webhook_error:
            changed += RescoreBatch.objects.filter(pk=batch.pk).update(webhook_error=clean)
    return changed


def stored_errors_redact() -> Redacted:
    """Clean every stored evaluation error, judge call error and webhook error; returns how
    many rows changed."""
    return Redacted(evaluations=_evaluations_redact(), batches=_batches_redact())
