"""Evaluations ready to serialise: the newest per run, one, by ids, and how many pend."""

from __future__ import annotations

import uuid
from typing import Any, NamedTuple

from django.db.models import Prefetch, QuerySet

from teams.models import Team

from ..models import (
    AgentRun,
    AlignmentBreakdown,
    CriterionVerdict,
    Evaluation,
    Kind,
    Status,
)


def _evaluations() -> QuerySet[Evaluation]:
    """Evaluations ready to serialise: version, verdicts and alignment rows in 3 more queries."""
    return (
        Evaluation.objects.select_related("rubric_version")
        .defer("calls")
        .prefetch_related(
            Prefetch("verdicts", queryset=CriterionVerdict.objects.order_by("position")),
            Prefetch("alignment", queryset=AlignmentBreakdown.objects.order_by("perspective")),
        )
    )


def evaluations_latest_for_runs(*, run_ids: list[Any]) -> dict[Any, list[Evaluation]]:
    """For each run, its newest evaluation per (kind, rubric) — queued or final — with verdicts
    and alignment prefetched. Four queries whatever the number of runs."""
    if not run_ids:
        return {}
    rows = (
        Evaluation.objects.filter(run_id__in=run_ids, calibration=False)
        .order_by("-created_at")
        .values_list("id", "run_id", "kind", "rubric_id")
    )
    latest: dict[tuple, Any] = {}
    for evaluation_id, run_id, kind, rubric_id in rows:
        latest.setdefault((run_id, kind, rubric_id), evaluation_id)
    out: dict[Any, list[Evaluation]] = {run_id: [] for run_id in run_ids}
    for evaluation in _evaluations().filter(id__in=latest.values()).order_by("created_at", "kind"):
        out.setdefault(evaluation.run_id, []).append(evaluation)
    return out


def evaluations_for_run(*, run: AgentRun) -> list[Evaluation]:
    """The run's newest evaluation per (kind, rubric), oldest first, ready to serialise."""
    return evaluations_latest_for_runs(run_ids=[run.pk])[run.pk]


def evaluation_get(*, team: Team, evaluation_id: Any) -> Evaluation | None:
    """One evaluation of the team, ready to serialise, or None."""
    try:
        key = uuid.UUID(str(evaluation_id))
    except ValueError:
        return None
    return _evaluations().filter(team=team, pk=key).first()


# What runs.schemas.score_out reads of an evaluation (a field left out would cost a query).
SCORED_FIELDS = (
    "id", "run_id", "kind", "status", "passed", "score", "reason", "error", "created_at",
    "user_score", "system_score", "band", "system_applicable", "user_applicable",
    "rubric_version", "rubric_version__number",
)  # fmt: skip


class Scored(NamedTuple):
    """Evaluations with their verdicts and alignment rows, by evaluation id."""

    evaluations: list[Evaluation]
    verdicts: dict[Any, list[CriterionVerdict]]
    breakdowns: dict[Any, list[AlignmentBreakdown]]


def evaluations_scored(*, ids: list[Any]) -> Scored:
    """Evaluations by id (any team: callers pass ids they own) with what a score answer
    (runs.schemas.score_out) reads: a rubric evaluation's verdicts, an alignment evaluation's
    breakdown, each read only when such an evaluation is there (one to three queries)."""
    rows = list(
        Evaluation.objects.filter(id__in=ids)
        .select_related("rubric_version")
        .only(*SCORED_FIELDS)
        .order_by("created_at", "kind")
    )
    verdicts: dict[Any, list[CriterionVerdict]] = {}
    breakdowns: dict[Any, list[AlignmentBreakdown]] = {}
    if rubric := [e.id for e in rows if e.kind == Kind.RUBRIC]:
        for v in CriterionVerdict.objects.filter(evaluation_id__in=rubric).order_by("position"):
            verdicts.setdefault(v.evaluation_id, []).append(v)
    if aligned := [e.id for e in rows if e.kind == Kind.ALIGNMENT]:
        for row in AlignmentBreakdown.objects.filter(evaluation_id__in=aligned).order_by(
            "perspective"
        ):
            breakdowns.setdefault(row.evaluation_id, []).append(row)
    return Scored(rows, verdicts, breakdowns)


def evaluations_pending(*, ids: list[Any]) -> int:
    """How many of these evaluations are not final yet (one cheap query, for waiting loops)."""
    return Evaluation.objects.filter(id__in=ids, status__in=[Status.QUEUED, Status.RUNNING]).count()
