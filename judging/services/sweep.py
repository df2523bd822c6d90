"""The lease sweeper: nothing claimed by a dead worker or dropped by the broker stays stuck."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from evalsite.notify import evaluations_ended
from runs.models import Evaluation, Status
from runs.services.evaluations import evaluations_publish
from runs.services.rollups_evaluations import rollup_evaluations_ended

from .rescore_dispatch import batches_sweep
from .results import run_refresh

logger = logging.getLogger(__name__)

# A publish that failed leaves enqueued_at empty; give the on_commit publish this long first.
UNSENT_GRACE = timedelta(seconds=5)


@dataclass(frozen=True)
class SweepReport:
    expired: int
    failed: int
    resent: int
    dispatched: int = 0


def evaluations_sweep(*, now=None) -> SweepReport:
    """Re-queue running evaluations whose lease expired (or fail them past the attempt limit)
    and re-send queued ones the broker never delivered. Every step is a compare-and-set, so
    concurrent sweepers and late messages do no harm."""
    now = now or timezone.now()
    expired, failed = _expire_leases(now)
    resent = _resend_queued(now)
    # Re-score batches: refill their windows and end the ones whose work is all done, in case a
    # worker died between finishing an evaluation and doing so itself.
    dispatched = batches_sweep(now=now)
    if expired or failed or resent or dispatched:
        logger.info(
            "sweep: %s lease(s) expired, %s failed, %s resent, %s released from batches",
            expired, failed, resent, dispatched,
        )  # fmt: skip
    return SweepReport(expired=expired, failed=failed, resent=resent, dispatched=dispatched)


def _expire_leases(now) -> tuple[int, int]:
    stale = Evaluation.objects.filter(status=Status.RUNNING, lease_expires_at__lt=now)
    failed = 0
    requeued: list[str] = []
    for row in stale.values("id", "run_id", "attempts", "lease_token")[:1000]:
        guard = Evaluation.objects.filter(
            id=row["id"], status=Status.RUNNING, lease_token=row["lease_token"]
        )
        with transaction.atomic():
            if row["attempts"] >= settings.EVALSITE_MAX_ATTEMPTS:
                n = guard.update(
                    status=Status.FAILED,
                    lease_token=None,
                    finished_at=now,
                    error=f"worker lost the evaluation {row['attempts']} times (lease expired)",
                )
                failed += n
                if n:
                    rollup_evaluations_ended(ids=[row["id"]], finished_at=now)
                    evaluations_ended([row["id"]])
            else:
                n = guard.update(
                    status=Status.QUEUED,
                    lease_token=None,
                    lease_expires_at=None,
                    enqueued_at=None,
                    not_before=None,
                )
                if n:
                    requeued.append(str(row["id"]))
            if n:
                run_refresh(row["run_id"])
    if requeued:
        evaluations_publish(
            requeued
        )  # straight back to the broker; the next sweep retries a failed send
    return len(requeued), failed


def evaluations_resend_after_outage(*, before: float) -> int:
    """After the broker came back: send again every queued evaluation sent before ``before``
    (seconds since the epoch) or never sent, which a broker that lost its data no longer
    holds. A copy it still holds becomes a duplicate the compare-and-set claim ignores. The
    number sent."""
    now = timezone.now()
    cutoff = datetime.fromtimestamp(before, tz=UTC)
    ready = Q(not_before__isnull=True) | Q(not_before__lte=now)
    sent_before = Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=cutoff)
    ids = list(
        Evaluation.objects.filter(ready, sent_before, status=Status.QUEUED, held=False)
        .order_by("created_at")
        .values_list("id", flat=True)[:50_000]
    )
    return evaluations_publish([str(i) for i in ids]) if ids else 0


def _resend_queued(now) -> int:
    ready = Q(not_before__isnull=True) | Q(not_before__lte=now)
    unsent = Q(enqueued_at__isnull=True, created_at__lt=now - UNSENT_GRACE)
    lost = Q(enqueued_at__lt=now - timedelta(seconds=settings.EVALSITE_REQUEUE_AFTER))
    ids = list(
        # Held rows belong to the re-score dispatcher, which releases them a window at a time.
        Evaluation.objects.filter(ready, unsent | lost, status=Status.QUEUED, held=False)
        .order_by("created_at")
        .values_list("id", flat=True)[:5000]
    )
    return evaluations_publish([str(i) for i in ids]) if ids else 0
