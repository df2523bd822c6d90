"""Verdicts in the team's own tracing: an outbox of finished evaluations, drained by a task.

The judging path only enqueues: ``otel_export_enqueue`` runs inside the transaction that
stores the verdicts (judging/services/results.py) and adds one ``OtelExportItem`` row per
evaluation of a team with an export, so the row exists exactly when the verdicts do (a worker
killed before the commit stored neither). After the commit it asks for a drain (one Celery
message on the bulk lane, at most one a second per process); a beat task drains every
EVALSITE_OTEL_EXPORT_INTERVAL seconds as well, so a lost message or a broker that was down
delays the export, never loses it.

``otel_exports_drain`` claims a team's due rows (compare-and-set, with a lease a dead worker's
claim outlives), turns them into ``gen_ai.evaluation.result`` events (export_events.py) and
sends them in one OTLP request (export_send.py). Delivery is AT LEAST ONCE: a row is deleted
only after the receiver's 2xx, so a worker dying between the answer and the delete, or an
answer lost to a timeout, sends those events again (each names its ``evalsite.evaluation.id``
to deduplicate on); nothing is sent twice otherwise. A failure worth retrying (5xx, 408, 429,
no connection, no answer) puts the rows back with exponential backoff
(EVALSITE_OTEL_EXPORT_BACKOFF seconds, doubled per attempt, at most an hour) until
EVALSITE_OTEL_EXPORT_MAX_ATTEMPTS; another answer (a 4xx, a redirect, an address the guard
refuses) gives up on them at once. Either way the team's export records the error and its
time, and events given up on are counted (``failed_events``).

Bounded: EVALSITE_OTEL_EXPORT_BATCH evaluations a request, EVALSITE_OTEL_EXPORT_MAX_BATCHES
requests a drain, EVALSITE_OTEL_EXPORT_MAX_PENDING rows a team: beyond it the oldest are dropped
unsent and counted (``dropped_evaluations``, with an error saying so).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from celery import signature
from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from teams.crypto import SecretUnreadable
from teams.models import OtelExport, Team
from teams.otel_export import otel_export_headers

from ..services.evaluations import lane
from .export_events import evaluation_events
from .export_send import Outcome, otlp_send
from .models import OtelExportItem

logger = logging.getLogger(__name__)

DRAIN_TASK = "runs.tasks.otel_export_drain"
BACKOFF_MAX = 3600.0
KICK_DELAY = 1.0  # seconds: evaluations finishing together go in one request


def otel_export_enqueue(*, evaluations: Iterable[tuple[Any, Any]]) -> int:
    """Owe these (team id, evaluation id) to their teams' endpoints: call inside the
    transaction that stores their verdicts. One read of which teams export, one insert."""
    pairs = list(evaluations)
    if not pairs:
        return 0
    teams = {team_id for team_id, _ in pairs}
    exporting = set(OtelExport.objects.filter(team_id__in=teams).values_list("team_id", flat=True))
    rows = [OtelExportItem(team_id=t, evaluation_id=e) for t, e in pairs if t in exporting]
    if rows:
        OtelExportItem.objects.bulk_create(rows)
        transaction.on_commit(otel_export_kick, robust=True)
    return len(rows)


_kick_lock = threading.Lock()
_next_drain = 0.0  # monotonic time of the drain this process last asked for


def otel_export_kick(countdown: float = KICK_DELAY) -> None:
    """Ask for a drain in ``countdown`` seconds, unless this process already asked for one
    that has not run yet and runs no later. A broker that is down: the beat drain sends."""
    global _next_drain
    at = time.monotonic() + countdown
    with _kick_lock:
        if time.monotonic() < _next_drain <= at:
            return
        _next_drain = at
    try:
        signature(DRAIN_TASK).apply_async(countdown=countdown, queue=lane(bulk=True))
    except Exception:  # noqa: BLE001 - any broker failure: the beat drain sends them later
        logger.warning("broker unreachable; verdict exports wait for the next beat drain")


@dataclass
class DrainReport:
    sent_events: int = 0
    failed_requests: int = 0
    dropped: int = 0
    more: bool = False


def otel_exports_drain(*, now: datetime | None = None) -> DrainReport:
    """Send what is due, one team's batch a request, at most EVALSITE_OTEL_EXPORT_MAX_BATCHES
    requests; ``more`` when rows were still due at the end (drain again)."""
    now = now or timezone.now()
    report = DrainReport(dropped=_trim(now))
    _orphans_delete()
    for _ in range(max(1, settings.EVALSITE_OTEL_EXPORT_MAX_BATCHES)):
        claimed = _claim_next(now)
        if claimed is None:
            return report
        _send(claimed, now, report)
    report.more = _due(now).exists()
    return report


@dataclass
class _Claimed:
    team_id: Any
    token: uuid.UUID
    rows: list[OtelExportItem]


def _free(now: datetime) -> Q:
    return Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)


def _due(now: datetime):
    return OtelExportItem.objects.filter(_free(now), next_attempt_at__lte=now)


def _claim_next(now: datetime) -> _Claimed | None:
    """The rows due of the team whose oldest due row is oldest, claimed by this drain (two
    drains may pick the same rows; the compare-and-set gives each row to one)."""
    due = _due(now)
    team_id = due.order_by("next_attempt_at", "id").values_list("team_id", flat=True).first()
    if team_id is None:
        return None
    size = max(1, settings.EVALSITE_OTEL_EXPORT_BATCH)
    ids = list(due.filter(team_id=team_id).order_by("id").values_list("id", flat=True)[:size])
    token = uuid.uuid4()
    lease = timedelta(seconds=settings.EVALSITE_OTEL_EXPORT_TIMEOUT + 60)
    due.filter(id__in=ids).update(claim=token, claimed_until=now + lease)
    rows = list(OtelExportItem.objects.filter(claim=token).order_by("id"))
    return _Claimed(team_id, token, rows)


def _send(claimed: _Claimed, now: datetime, report: DrainReport) -> None:
    export = OtelExport.objects.filter(team_id=claimed.team_id).first()
    if export is None or not claimed.rows:  # the export was removed meanwhile
        OtelExportItem.objects.filter(claim=claimed.token).delete()
        return
    events = evaluation_events(evaluation_ids=[row.evaluation_id for row in claimed.rows])
    counts = {row.id: len(events.get(row.evaluation_id, [])) for row in claimed.rows}
    records = [r for row in claimed.rows for r in events.get(row.evaluation_id, [])]
    if not records:  # evaluations deleted since (retention): nothing left to say
        OtelExportItem.objects.filter(claim=claimed.token).delete()
        return
    try:
        headers = otel_export_headers(export=export)
    except SecretUnreadable:
        outcome = Outcome(False, "the stored headers cannot be decrypted: save them again")
    else:
        outcome = otlp_send(
            records=records, protocol=export.protocol, endpoint=export.endpoint,
            headers=headers, timeout=settings.EVALSITE_OTEL_EXPORT_TIMEOUT,
        )  # fmt: skip
    if outcome.ok:
        _sent(claimed, now, len(records))
        report.sent_events += len(records)
    else:
        _failed(claimed, now, outcome, counts)
        report.failed_requests += 1


def _sent(claimed: _Claimed, now: datetime, events: int) -> None:
    with transaction.atomic():
        OtelExportItem.objects.filter(claim=claimed.token).delete()
        OtelExport.objects.filter(team_id=claimed.team_id).update(
            last_success_at=now, sent_events=F("sent_events") + events
        )


def _failed(claimed: _Claimed, now: datetime, outcome: Outcome, counts: dict[Any, int]) -> None:
    limit = settings.EVALSITE_OTEL_EXPORT_MAX_ATTEMPTS
    give_up = [r for r in claimed.rows if not outcome.retry or r.attempts + 1 >= limit]
    retry = [r for r in claimed.rows if r not in give_up]
    attempts = max((r.attempts + 1 for r in retry), default=0)
    delay = export_backoff(attempts)
    logger.warning(
        "verdict export of team %s failed (%s); %d evaluation(s) retried, %d given up",
        claimed.team_id, outcome.error, len(retry), len(give_up),
    )  # fmt: skip
    with transaction.atomic():
        OtelExportItem.objects.filter(id__in=[r.id for r in retry], claim=claimed.token).update(
            attempts=F("attempts") + 1,
            next_attempt_at=now + timedelta(seconds=delay),
            claim=None,
            claimed_until=None,
        )
        OtelExportItem.objects.filter(id__in=[r.id for r in give_up]).delete()
        OtelExport.objects.filter(team_id=claimed.team_id).update(
            last_error=outcome.error[:2000],
            last_error_at=now,
            failed_events=F("failed_events") + sum(counts[r.id] for r in give_up),
        )
    if retry:
        transaction.on_commit(lambda: otel_export_kick(delay + KICK_DELAY), robust=True)


def export_backoff(attempts: int) -> float:
    """Seconds before attempt ``attempts + 1``: the base doubled per attempt, at most an hour."""
    base = settings.EVALSITE_OTEL_EXPORT_BACKOFF
    return min(BACKOFF_MAX, base * 2 ** max(0, attempts - 1))


def _trim(now: datetime) -> int:
    """Drop the oldest unclaimed rows of each team beyond EVALSITE_OTEL_EXPORT_MAX_PENDING,
    counted on its export with an error saying so; the number dropped."""
    cap = settings.EVALSITE_OTEL_EXPORT_MAX_PENDING
    over = (
        OtelExportItem.objects.values("team_id")
        .annotate(n=Count("id"))
        .filter(n__gt=cap)
        .values_list("team_id", "n")
    )
    dropped = 0
    for team_id, count in list(over):
        oldest = OtelExportItem.objects.filter(_free(now), team_id=team_id).order_by("id")
        ids = list(oldest.values_list("id", flat=True)[: count - cap])
        with transaction.atomic():
            gone, _ = OtelExportItem.objects.filter(id__in=ids).delete()
            OtelExport.objects.filter(team_id=team_id).update(
                dropped_evaluations=F("dropped_evaluations") + gone,
                last_error=(
                    f"{gone:,} evaluation(s) dropped unsent, oldest first: more than "
                    f"{cap:,} were waiting (EVALSITE_OTEL_EXPORT_MAX_PENDING)"
                ),
                last_error_at=now,
            )
        logger.warning("verdict export of team %s: %d oldest evaluation(s) dropped", team_id, gone)
        dropped += gone
    return dropped


def _orphans_delete() -> None:
    """Rows of teams whose export was removed (teams cannot reach this table)."""
    OtelExportItem.objects.exclude(team_id__in=OtelExport.objects.values("team_id")).delete()


def otel_export_status(*, team: Team) -> dict[str, Any] | None:
    """The team's export as its settings show it (None: it has none); headers by name only."""
    export = OtelExport.objects.filter(team=team).first()
    if export is None:
        return None
    return {
        "endpoint": export.endpoint,
        "protocol": export.protocol,
        "header_names": export.header_names,
        "pending": OtelExportItem.objects.filter(team=team).count(),
        "sent_events": export.sent_events,
        "failed_events": export.failed_events,
        "dropped_evaluations": export.dropped_evaluations,
        "last_success_at": export.last_success_at,
        "last_error": export.last_error,
        "last_error_at": export.last_error_at,
    }
