"""Bulk ingest: many runs in one transaction, all or nothing."""

from __future__ import annotations

from typing import Any, NamedTuple

from django.db import transaction
from pydantic import ValidationError

from evalsite.errors import AppError
from teams.models import Team

from ..models import AgentRun, Evaluation
from ..payloads import RunPayload
from .ingest import RunConflict, RunValidationError
from .ingest_many import runs_ingest_many

MAX_BULK_RUNS = 1000


class BulkValidationError(AppError, ValueError):
    """Some items are invalid and nothing was stored. ``errors`` lists
    ``{"index": i, "field": "output" | None, "message": ...}`` for every problem found
    (answered as ``extra.errors``, a 422 in the error shape: items are not body fields)."""

    status = 422

    def __init__(self, errors: list[dict[str, Any]], total: int) -> None:
        bad = len({e["index"] for e in errors})
        super().__init__(
            f"{bad} of {total} runs are invalid; nothing was stored", extra={"errors": errors}
        )
        self.errors = errors


class BulkItem(NamedTuple):
    """One item's run, whether this item created it, and the evaluations this call stored
    for it (queued, no verdicts yet) when this call created it (at this item or an earlier
    one naming the same run); None for a run that existed before the call."""

    run: AgentRun
    created: bool
    stored: list[Evaluation] | None


def runs_ingest_bulk(*, team: Team, items: list[Any]) -> list[BulkItem]:
    """Ingest every item like run_ingest does, in one transaction, one BulkItem per item in
    order. Any invalid item stores nothing and raises BulkValidationError listing the errors
    of every item. Items with the same external_id and content map to one run."""
    if len(items) > MAX_BULK_RUNS:
        error = {
            "index": None,
            "field": "runs",
            "message": f"at most {MAX_BULK_RUNS:,} runs per call",
        }
        raise BulkValidationError([error], len(items))
    payloads, errors = _parse(items)
    stored: dict[Any, list[Evaluation]] = {}
    with transaction.atomic():
        results, failures = runs_ingest_many(
            team=team, payloads=[p for _, p in payloads], stored=stored
        )
        for position, exc in failures:
            errors.extend(_item_errors(payloads[position][0], exc))
        if errors:
            # Discards the rows and their on_commit enqueues alike.
            transaction.set_rollback(True)
    if errors:
        raise BulkValidationError(sorted(errors, key=lambda e: e["index"]), len(items))
    return [BulkItem(run, created, stored.get(run.pk)) for run, created in results]


def _parse(items: list[Any]) -> tuple[list[tuple[int, RunPayload]], list[dict[str, Any]]]:
    payloads: list[tuple[int, RunPayload]] = []
    errors: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        try:
            payloads.append((index, RunPayload.model_validate(item)))
        except ValidationError as exc:
            errors.extend(
                {"index": index, "field": _field(e["loc"]) or None, "message": e["msg"]}
                for e in exc.errors()
            )
    return payloads, errors


def _field(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _item_errors(index: int, exc: Exception) -> list[dict[str, Any]]:
    if isinstance(exc, RunValidationError):
        return [{"index": index, "field": f, "message": m} for f, m in exc.errors.items()]
    field = "external_id" if isinstance(exc, RunConflict) else None
    return [{"index": index, "field": field, "message": str(exc)}]
