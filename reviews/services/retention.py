"""Deleting runs: one run (DELETE /api/runs/{id}, the run page) and the team's retention (a
beat task, in bounded batches).

A run is *protected* while it is in a golden set, labelled by a human (a verdict or alignment
label in effect) or the source of a judge example; deleting one needs ``force`` (owners) and
retention keeps it unless the team opted in (``Team.retention_delete_protected``).

Boundary: these functions delete runs and the rows that reference them (evaluations, verdicts,
alignment breakdowns, overrides, labels, review state, calibration items, tools). They never
write any table of aggregates (rollups): those count results over time and keep them.
Judge examples keep their stored excerpt (their ``run`` becomes NULL), as do OTLP spans.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from evalsite.errors import Conflict
from rubrics.models import CriterionExample
from runs.models import AgentRun
from teams.models import Team

from ..models import AlignmentLabel, ReviewerLabel, RunReview, VerdictLabel

# Why a run is protected, in the words a 409 and the run page use.
REASONS = {
    "golden": "it is in a rubric's golden set",
    "labelled": "a reviewer labelled it",
    "example": "a judge example was taken from it",
}


class RunProtected(Conflict):
    """The run is protected (``extra["reasons"]``): only an owner's ``force`` deletes it."""


def _golden() -> Exists:
    return Exists(RunReview.objects.filter(run=OuterRef("pk"), golden=True))


def _labelled() -> Q:
    return Q(Exists(VerdictLabel.objects.filter(run=OuterRef("pk")))) | Q(
        Exists(AlignmentLabel.objects.filter(run=OuterRef("pk")))
    )


def _example() -> Exists:
    return Exists(CriterionExample.objects.filter(run=OuterRef("pk")))


def _protected() -> Q:
    return Q(_golden()) | _labelled() | Q(_example())


def run_protection(*, run: AgentRun) -> list[str]:
    """The keys of REASONS that protect the run (empty: it is not protected). One query."""
    flags: Any = (
        AgentRun.objects.filter(pk=run.pk)
        .annotate(golden=_golden(), example=_example())
        .annotate(labelled=Exists(VerdictLabel.objects.filter(run=OuterRef("pk"))))
        .annotate(aligned=Exists(AlignmentLabel.objects.filter(run=OuterRef("pk"))))
        .values("golden", "example", "labelled", "aligned")
        .first()
    ) or {}
    reasons = []
    if flags.get("golden"):
        reasons.append("golden")
    if flags.get("labelled") or flags.get("aligned"):
        reasons.append("labelled")
    if flags.get("example"):
        reasons.append("example")
    return reasons


def runs_delete(*, run_ids: list[Any]) -> int:
    """Delete these runs and every row that references them, in one transaction; the number
    of runs deleted. Labels go first: they PROTECT the overrides they point at."""
    with transaction.atomic():
        for model in (ReviewerLabel, VerdictLabel, AlignmentLabel):
            model.objects.filter(run_id__in=run_ids).delete()
        _, per_model = AgentRun.objects.filter(pk__in=run_ids).delete()
    return per_model.get(AgentRun._meta.label, 0)


def run_delete(*, run: AgentRun, force: bool = False, may_force: bool = False) -> None:
    """Delete one run with everything that references it. A protected run raises RunProtected
    (409) naming the reasons, unless ``force`` by a caller who ``may_force`` (owners)."""
    reasons = run_protection(run=run)
    if reasons and not (force and may_force):
        words = "; ".join(REASONS[r] for r in reasons)
        hint = "an owner can delete it anyway (force)" if not may_force else "send force=true"
        raise RunProtected(
            f"This run is protected: {words}. {hint[0].upper()}{hint[1:]}.",
            extra={"reasons": reasons, "run_id": str(run.pk)},
        )
    runs_delete(run_ids=[run.pk])


@dataclass
class RetentionReport:
    deleted: int = 0
    batches: int = 0
    # Teams whose expired runs were not all deleted this time (the per-tick cap).
    unfinished: list[str] = field(default_factory=list)


def retention_expired(*, team: Team, now: datetime) -> QuerySet[AgentRun]:
    """The team's runs older than its retention that retention may delete (oldest first)."""
    assert team.retention_days is not None
    cutoff = now - timedelta(days=team.retention_days)
    runs = AgentRun.objects.filter(team=team, created_at__lt=cutoff)
    if not team.retention_delete_protected:
        runs = runs.exclude(_protected())
    return runs.order_by("created_at", "id")


def retention_enforce(
    *,
    now: datetime | None = None,
    batch_size: int | None = None,
    max_batches: int | None = None,
) -> RetentionReport:
    """Delete every team's expired runs in batches of ``batch_size`` runs, each batch its own
    short transaction (no lock is held between batches), at most ``max_batches`` per call (the
    beat task's next tick goes on). Defaults: EVALSITE_RETENTION_BATCH, ..._MAX_BATCHES."""
    now = now or timezone.now()
    size = batch_size or settings.EVALSITE_RETENTION_BATCH
    budget = max_batches or settings.EVALSITE_RETENTION_MAX_BATCHES
    report = RetentionReport()
    for team in Team.objects.filter(retention_days__isnull=False).order_by("id"):
        while True:
            if report.batches >= budget:
                report.unfinished.append(str(team.pk))
                break
            ids = list(retention_expired(team=team, now=now).values_list("pk", flat=True)[:size])
            if not ids:
                break
            report.deleted += runs_delete(run_ids=ids)
            report.batches += 1
            if len(ids) < size:
                break
    return report
