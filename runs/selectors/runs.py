"""Runs: the list (filtered keyset pages), one run, and its live status cell."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from django.db.models import OuterRef, Subquery
from django.db.models.functions import Substr

from evalsite.pagination import page_size
from teams.models import Team

from ..models import (
    AgentRun,
    Evaluation,
    Kind,
)
from .filters import RunFilters, runs_matching
from .keyset import after_cursor, cursor_of

PREVIEW_CHARS = 280
# Columns a list never needs (each may hold up to EVALSITE_MAX_RUN_BYTES).
HEAVY_RUN_FIELDS = (
    "input",
    "output",
    "request_context",
    "metadata",
    "task_text",
    "output_text",
    "system_text",
)


def _judged(kind: str, field: str) -> Subquery:
    current = Evaluation.objects.filter(run=OuterRef("pk"), kind=kind, is_current=True)
    return Subquery(current.order_by("-created_at").values(field)[:1])


# The judge's own result beside the run's (human-adjusted) one: the current evaluations' values,
# read by runs.schemas for ``adjusted`` and ``judge`` (each a lookup on eval_run_newest).
JUDGED = {
    "judge_passed": lambda: _judged(Kind.RUBRIC, "passed"),
    "judge_score": lambda: _judged(Kind.RUBRIC, "score"),
    "judge_alignment_score": lambda: _judged(Kind.ALIGNMENT, "score"),
}


def with_judged(qs: Any) -> Any:
    return qs.annotate(**{name: make() for name, make in JUDGED.items()})


@dataclass(frozen=True)
class RunPage:
    items: Sequence[AgentRun]
    next_cursor: str | None


def runs_list(
    *,
    team: Team,
    filters: RunFilters,
    cursor: str | None = None,
    limit: int | None = None,
    sort: Literal["newest", "oldest"] = "newest",
) -> RunPage:
    """One page of a team's runs, newest first, and the cursor of the next page (or None).

    ``sort`` is ``newest`` (default) or ``oldest`` first. Keyset pagination on (created_at, id):
    pages stay stable while new runs arrive and cost the
    same at any depth. Always one query whatever the page size. Rows carry ``rubric`` and
    ``current_version`` (joined) and the annotations ``task_preview`` and ``output_preview``
    (the first 280 characters); the heavy columns (input, output, request_context, metadata and
    the extracted texts) are deferred — read them only on a single run (see run_get).

    ``cursor`` is the ``next_cursor`` of the previous page with the same filters; a cursor we did
    not produce raises evalsite.pagination.InvalidCursor. ``limit`` is clamped to
    1..EVALSITE_PAGE_SIZE_MAX (default 50).

    Rows answer their result through ``AgentRun.result`` (judge_engine.rules.run_result); the
    ``passed`` filter follows the same rule (runs.selectors.filters).
    """
    size = page_size(limit)
    qs = runs_matching(team=team, filters=filters)
    oldest = sort == "oldest"
    if cursor:
        qs = qs.filter(after_cursor(cursor, oldest=oldest))
    rows = list(
        with_judged(qs.select_related("rubric", "current_version"))
        .defer(*HEAVY_RUN_FIELDS)
        .annotate(
            task_preview=Substr("task_text", 1, PREVIEW_CHARS),
            output_preview=Substr("output_text", 1, PREVIEW_CHARS),
        )
        .order_by(*(("created_at", "id") if oldest else ("-created_at", "-id")))[: size + 1]
    )
    items = rows[:size]
    more = len(rows) > size
    return RunPage(items=items, next_cursor=cursor_of(items[-1]) if more else None)


def run_get(*, team: Team, run_id: Any) -> AgentRun | None:
    """One run of the team with its rubric and current version, or None."""
    try:
        key = uuid.UUID(str(run_id))
    except ValueError:
        return None
    return with_judged(
        AgentRun.objects.select_related("rubric", "current_version").filter(team=team, pk=key)
    ).first()


def run_status_cell(*, team: Team, run_id: Any) -> AgentRun | None:
    """The few columns of the live status cell, with the judge's own result (one query)."""
    try:
        key = uuid.UUID(str(run_id))
    except ValueError:
        return None
    return (
        with_judged(AgentRun.objects.filter(team=team, pk=key))
        .only("id", "status", "passed", "score", "alignment_score", "current_version__number")
        .select_related("current_version")
        .first()
    )
