"""Reads for graded examples taken from reviews: the label a new example teaches."""

from __future__ import annotations

from rubrics.models import Rubric
from runs.models import AgentRun

from ..models import VerdictLabel


def label_in_effect(*, run: AgentRun, rubric: Rubric, criterion_key: str) -> VerdictLabel | None:
    """The human label in effect on one criterion of a run (its newest wording's), or None
    when the criterion is unlabelled (or disputed)."""
    return (
        VerdictLabel.objects.filter(run=run, rubric=rubric, criterion_key=criterion_key)
        .order_by("-updated_at")
        .first()
    )
