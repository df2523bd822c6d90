"""Queue claims: each reviewer is handed a different run, held by a short lease.

A claim is a compare-and-set on the run's RunReview row (free, expired, or already mine →
mine until now + EVALSITE_REVIEW_CLAIM_SECONDS), so two reviewers asking at the same moment
can never both win the same run, on PostgreSQL or SQLite, without holding locks.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from rubrics.models import Rubric
from runs.models import AgentRun

from ..models import ReviewerLabel, RunReview
from ..selectors.queue import QueueFilters, queue_runs
from .labels import Reviewer

CANDIDATES = 20


def _lease_end() -> Any:
    return timezone.now() + timedelta(seconds=settings.EVALSITE_REVIEW_CLAIM_SECONDS)


def _claimable(user: Any) -> Q:
    return Q(claimed_by__isnull=True) | Q(claim_expires_at__lte=timezone.now()) | Q(claimed_by=user)


def _review_row(run: AgentRun, rubric: Rubric) -> RunReview:
    review, _ = RunReview.objects.get_or_create(
        run=run, rubric=rubric, defaults={"team_id": rubric.team_id}
    )
    return review


def claim_take(*, run: AgentRun, rubric: Rubric, user: Any) -> bool:
    """Claim (or renew the claim on) one run; False when another reviewer holds it."""
    review = _review_row(run, rubric)
    taken = RunReview.objects.filter(_claimable(user), pk=review.pk).update(
        claimed_by=user, claim_expires_at=_lease_end()
    )
    return bool(taken)


def claim_release(*, rubric: Rubric, user: Any) -> None:
    """Give back the user's claims in this rubric's queue (one is held at a time)."""
    RunReview.objects.filter(rubric=rubric, claimed_by=user).update(
        claimed_by=None, claim_expires_at=None
    )


def claim_next(
    *,
    rubric: Rubric,
    user: Any,
    filters: QueueFilters | None = None,
    skip: Any = None,
    flagged_keys: list[str] | None = None,
) -> AgentRun | None:
    """Release the user's claim and claim the first run of the queue that nobody else holds
    (``skip``: a run id not to be handed back, the one the reviewer is leaving). None when the
    queue has nothing left for this reviewer.

    Unreviewed runs without a dispute by default; with ``second_opinion``, runs one reviewer
    labelled or whose reviewers dispute a criterion, never one this user already labelled."""
    claim_release(rubric=rubric, user=user)
    filters = filters or QueueFilters()
    now = timezone.now()
    free = Q(rv__claimed_by__isnull=True) | Q(rv__claim_expires_at__lte=now)
    if not filters.second_opinion:
        free &= Q(rv__reviewed_at__isnull=True) & (Q(rv__disputed__isnull=True) | Q(rv__disputed=0))
    qs = queue_runs(rubric=rubric, filters=filters, flagged_keys=flagged_keys, review=free)
    if filters.second_opinion:
        mine = ReviewerLabel.objects.filter(rubric=rubric, reviewer_key=Reviewer(user=user).key)
        qs = qs.exclude(pk__in=mine.values("run_id"))
    if skip is not None:
        qs = qs.exclude(pk=skip)
    for _ in range(3):
        candidates = list(qs[:CANDIDATES])
        if not candidates:
            return None
        for run in candidates:
            if claim_take(run=run, rubric=rubric, user=user):
                return run
        # Every candidate was taken between our read and our claim: read again.
    return None
