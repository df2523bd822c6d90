"""Re-score batches: one, a page of them, and their progress (judging.services.rescore)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, Sum

from evalsite.pagination import cursor_encode, page_size
from teams.models import Team

from ..models import (
    Evaluation,
    RescoreBatch,
    Status,
)
from .filters import rubric_q
from .keyset import after_cursor


@dataclass(frozen=True)
class BatchProgress:
    """A batch as its progress bar and the API show it.

    ``counts`` has every evaluation status (held evaluations count as queued); ``progress`` is
    the share of evaluations that ended (0..1, 1 for an empty batch); ``actual`` sums what the
    ended evaluations really did, to compare with ``estimate``; ``failures`` are the newest
    failed evaluations with their messages (at most FAILURES_SHOWN)."""

    batch: RescoreBatch
    counts: dict[str, int]
    total: int
    done: int
    progress: float
    actual: dict[str, Any]
    failures: list[dict[str, Any]]

    @property
    def finished(self) -> bool:
        return self.batch.finished_at is not None

    def as_json(self) -> dict[str, Any]:
        b = self.batch
        return {
            "id": str(b.id),
            "status": b.status,
            "rubric_id": str(b.rubric_id),
            "rubric_version": b.rubric_version.number,
            "judge_model": b.judge_model,
            "force": b.force,
            "scope": b.scope,
            "total": self.total,
            "counts": self.counts,
            "done": self.done,
            "progress": self.progress,
            "estimate": b.estimate,
            "actual": self.actual,
            "failures": self.failures,
            "created_at": b.created_at.isoformat(),
            "started_at": b.started_at.isoformat() if b.started_at else None,
            "finished_at": b.finished_at.isoformat() if b.finished_at else None,
            "cancelled_at": b.cancelled_at.isoformat() if b.cancelled_at else None,
            "webhook_url": b.webhook_url,
            "webhook_delivered_at": (
                b.webhook_delivered_at.isoformat() if b.webhook_delivered_at else None
            ),
            "webhook_error": b.webhook_error,
        }


FAILURES_SHOWN = 50
BATCH_FINAL = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)


def batch_get(*, team: Team, batch_id: Any) -> RescoreBatch | None:
    """One re-score batch of the team (with its rubric and version), or None."""
    try:
        key = uuid.UUID(str(batch_id))
    except ValueError:
        return None
    return (
        RescoreBatch.objects.select_related("rubric", "rubric_version")
        .filter(team=team, pk=key)
        .first()
    )


@dataclass(frozen=True)
class BatchPage:
    items: list[RescoreBatch]
    next_cursor: str | None


def batches_list(
    *,
    team: Team,
    status: str | None = None,
    rubric: str | None = None,
    cursor: str | None = None,
    limit: int | None = None,
) -> BatchPage:
    """The team's batches, newest first (keyset on created_at, id); one query. ``rubric`` is an
    id or slug; ``cursor`` is the previous page's ``next_cursor``."""
    size = page_size(limit)
    qs = RescoreBatch.objects.filter(team=team).select_related("rubric", "rubric_version")
    if status:
        qs = qs.filter(status=status)
    if rubric:
        qs = qs.filter(rubric_q("rubric", rubric))
    if cursor:
        qs = qs.filter(after_cursor(cursor))
    rows = list(qs.order_by("-created_at", "-id")[: size + 1])
    items = rows[:size]
    more = len(rows) > size
    last = items[-1] if more else None
    return BatchPage(
        items=items,
        next_cursor=cursor_encode(last.created_at.isoformat(), last.id) if last else None,
    )


def batch_progress(*, batch: RescoreBatch) -> BatchProgress:
    """Counts, progress, actual usage and failures of one batch: two queries."""
    return batches_progress(batches=[batch], with_failures=True)[batch.pk]


def batches_progress(
    *, batches: list[RescoreBatch], with_failures: bool = False
) -> dict[Any, BatchProgress]:
    """Progress of several batches (a list page) in one query, plus one for failures."""
    stats: dict[Any, dict[str, Any]] = {b.pk: _empty_stats() for b in batches}
    rows = (
        Evaluation.objects.filter(batch_id__in=list(stats))
        .values("batch_id", "status")
        .annotate(
            n=Count("id"),
            calls=Sum("judge_calls"),
            judged=Sum("criteria_judged"),
            reused=Sum("criteria_reused"),
            prompt=Sum("prompt_tokens"),
            completion=Sum("completion_tokens"),
            spent=Sum("cost"),
            unpriced=Count("id", filter=Q(cost__isnull=True, judge_calls__gt=0)),
        )
    )
    for row in rows:
        _add_row(stats[row["batch_id"]], row)
    failures = _batch_failures(batches[0]) if with_failures and len(batches) == 1 else []
    return {b.pk: _progress(b, stats[b.pk], failures) for b in batches}


def _empty_stats() -> dict[str, Any]:
    return {
        "counts": {s: 0 for s in Status.values},
        "judge_calls": 0,
        "criterion_judgements": 0,
        "criteria_reused": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost": None,
        "unpriced": 0,
    }


def _add_row(stats: dict[str, Any], row: Any) -> None:
    stats["counts"][row["status"]] = row["n"]
    stats["judge_calls"] += row["calls"] or 0
    stats["criterion_judgements"] += row["judged"] or 0
    stats["criteria_reused"] += row["reused"] or 0
    stats["prompt_tokens"] += row["prompt"] or 0
    stats["completion_tokens"] += row["completion"] or 0
    stats["unpriced"] += row["unpriced"] or 0
    if row["spent"] is not None:
        stats["cost"] = (stats["cost"] or 0.0) + row["spent"]


def _batch_failures(batch: RescoreBatch) -> list[dict[str, Any]]:
    rows = (
        Evaluation.objects.filter(batch=batch, status=Status.FAILED)
        .order_by("-finished_at")
        .values_list("id", "run_id", "error")[:FAILURES_SHOWN]
    )
    return [{"evaluation_id": str(e), "run_id": str(r), "error": err} for e, r, err in rows]


def _progress(batch: RescoreBatch, stats: dict[str, Any], failures: list) -> BatchProgress:
    counts = stats.pop("counts")
    total = sum(counts.values())
    done = sum(counts[s] for s in BATCH_FINAL)
    actual = stats | {"tokens": stats["prompt_tokens"] + stats["completion_tokens"]}
    return BatchProgress(
        batch=batch, counts=counts, total=total, done=done,
        progress=done / total if total else 1.0, actual=actual, failures=failures,
    )  # fmt: skip
