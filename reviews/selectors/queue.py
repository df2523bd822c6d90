"""The review queue of a rubric: which runs to review, in what order, and the progress."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, F, FilteredRelation, Q, QuerySet
from django.utils import timezone

from rubrics.models import Rubric
from runs.models import AgentRun, CriterionVerdict, Status

QUEUE_PAGE = 50


@dataclass(frozen=True)
class QueueFilters:
    """``failing``: the run's (human-adjusted) result failed. ``low_confidence``: the judge
    gave one criterion wording of the run both verdicts across its judgements (re-scores,
    consistency checks, other judge models) — the judge reports no confidence of its own, so
    disagreeing with itself is the signal we have. ``poor_agreement``: a current verdict of
    the run is on a criterion flagged for low judge–human kappa and is not labelled yet.
    ``second_opinion``: the run needs another reviewer — one reviewer labelled it, or its
    reviewers dispute a criterion (their verdicts tie)."""

    failing: bool = False
    low_confidence: bool = False
    poor_agreement: bool = False
    second_opinion: bool = False

    @classmethod
    def from_query(cls, query: Any) -> QueueFilters:
        return cls(
            **{name: query.get(name) in ("1", "true", "on") for name in cls.__dataclass_fields__}
        )

    def to_query(self) -> dict[str, str]:
        return {name: "1" for name in self.__dataclass_fields__ if getattr(self, name)}


def queue_runs(
    *,
    rubric: Rubric,
    filters: QueueFilters,
    flagged_keys: list[str] | None = None,
    review: Q | None = None,
) -> QuerySet[AgentRun]:
    """The rubric's judged runs with their review state as ``rv`` (a filtered relation), in
    queue order: unreviewed first, then newest first. ``review``: more conditions on ``rv``,
    applied in the same filter() call (each further filter() on ``rv`` would join again)."""
    qs = (
        AgentRun.objects.filter(team_id=rubric.team_id, rubric=rubric, passed__isnull=False)
        .annotate(rv=FilteredRelation("reviews", condition=Q(reviews__rubric=rubric)))
        .defer(
            "input",
            "output",
            "request_context",
            "metadata",
            "task_text",
            "system_text",
            "output_text",
        )
    )
    if filters.failing:
        qs = qs.filter(passed=False)
    if filters.low_confidence:
        qs = qs.filter(pk__in=_unstable_runs(rubric))
    if filters.poor_agreement:
        qs = qs.filter(pk__in=_runs_on_criteria(rubric, flagged_keys or []))
    on_review = review or Q()
    if filters.second_opinion:
        on_review &= Q(rv__reviewers=1) | Q(rv__disputed__gt=0)
    if on_review:
        qs = qs.filter(on_review)
    return qs.order_by(F("rv__reviewed_at").asc(nulls_first=True), "-created_at", "-id")


def _unstable_runs(rubric: Rubric) -> QuerySet[CriterionVerdict, Any]:
    return (
        CriterionVerdict.objects.filter(
            team_id=rubric.team_id, rubric=rubric, evaluation__status=Status.SUCCEEDED
        )
        .values("run_id", "criterion_key", "description")
        .annotate(
            yes=Count("id", filter=Q(satisfied=True)), no=Count("id", filter=Q(satisfied=False))
        )
        .filter(yes__gt=0, no__gt=0)
        .values("run_id")
    )


def _runs_on_criteria(rubric: Rubric, keys: list[str]) -> QuerySet[CriterionVerdict, Any]:
    return CriterionVerdict.objects.filter(
        team_id=rubric.team_id, rubric=rubric, criterion_key__in=keys, is_current=True
    ).values("run_id")


@dataclass(frozen=True)
class QueueItem:
    run: AgentRun
    reviewed_at: Any
    labelled: int
    overridden: int
    golden: bool
    claimed_by: str | None  # username of an unexpired claim
    reviewers: int = 0
    disputed: int = 0


@dataclass(frozen=True)
class QueuePage:
    items: list[QueueItem]
    total: int
    reviewed: int
    page: int
    pages: int

    @property
    def remaining(self) -> int:
        return self.total - self.reviewed


def review_queue(
    *, rubric: Rubric, filters: QueueFilters, page: int = 1, flagged_keys: list[str] | None = None
) -> QueuePage:
    """One page of the queue and its progress ("37 of 120 reviewed"). Three queries."""
    qs = queue_runs(rubric=rubric, filters=filters, flagged_keys=flagged_keys)
    total = qs.count()
    reviewed = queue_runs(
        rubric=rubric,
        filters=filters,
        flagged_keys=flagged_keys,
        review=Q(rv__reviewed_at__isnull=False),
    ).count()
    pages = max(1, -(-total // QUEUE_PAGE))
    page = min(max(1, page), pages)
    now = timezone.now()
    rows = qs.annotate(
        rv_reviewed_at=F("rv__reviewed_at"),
        rv_labelled=F("rv__labelled"),
        rv_overridden=F("rv__overridden"),
        rv_golden=F("rv__golden"),
        rv_claimed=F("rv__claimed_by__username"),
        rv_claim_expires=F("rv__claim_expires_at"),
        rv_reviewers=F("rv__reviewers"),
        rv_disputed=F("rv__disputed"),
    )[(page - 1) * QUEUE_PAGE : page * QUEUE_PAGE]
    items = [
        QueueItem(
            run=r,
            reviewed_at=r.rv_reviewed_at,
            labelled=r.rv_labelled or 0,
            overridden=r.rv_overridden or 0,
            golden=bool(r.rv_golden),
            claimed_by=r.rv_claimed if r.rv_claim_expires and r.rv_claim_expires > now else None,
            reviewers=r.rv_reviewers or 0,
            disputed=r.rv_disputed or 0,
        )
        for r in rows
    ]
    return QueuePage(items, total, reviewed, page, pages)


def queue_neighbours(*, rubric: Rubric, run: AgentRun) -> tuple[Any, Any]:
    """The ids of the runs just newer and just older than ``run`` in the rubric's judged runs
    (the review page's previous/next links, stable while reviews move runs in the queue)."""
    base = AgentRun.objects.filter(team_id=rubric.team_id, rubric=rubric, passed__isnull=False)
    newer = (
        base.filter(Q(created_at__gt=run.created_at) | Q(created_at=run.created_at, id__gt=run.pk))
        .order_by("created_at", "id")
        .values_list("id", flat=True)
        .first()
    )
    older = (
        base.filter(Q(created_at__lt=run.created_at) | Q(created_at=run.created_at, id__lt=run.pk))
        .order_by("-created_at", "-id")
        .values_list("id", flat=True)
        .first()
    )
    return newer, older
