"""The sampling decision at ingest: whether a run bound to a rubric is judged now.

Reads only the rubric row ingest has already loaded and the run being built: no query. The
rules themselves are the engine's (runs.scoring.sampling).
"""

from __future__ import annotations

from rubrics.models import Rubric
from runs.scoring.sampling import (
    FULL_RATE,
    SampleDecision,
    SampleFilters,
    sample_bucket,
    sample_decide,
)

from ..models import AgentRun

NO_FILTERS = SampleFilters()


def rubric_sample_filters(rubric: Rubric) -> SampleFilters:
    return (
        SampleFilters.model_validate(rubric.sample_filters) if rubric.sample_filters else NO_FILTERS
    )


def run_sample_decide(*, run: AgentRun, rubric: Rubric) -> SampleDecision:
    """The decision for ``run`` (unsaved, with its content hash) under ``rubric``'s sampling:
    keyed on the team, the rubric and the run's external id, else its content hash."""
    key = run.external_id or run.content_hash
    rate = FULL_RATE if rubric.sample_rate is None else float(rubric.sample_rate)
    return sample_decide(
        rate=rate,
        filters=rubric_sample_filters(rubric),
        bucket=sample_bucket(run.team_id, rubric.pk, key),
        agent=run.agent,
        metadata=run.metadata,
        request_context=run.request_context,
    )


def run_sampled(*, run: AgentRun, rubric: Rubric) -> bool:
    """Decide and record (on ``run.sampling``) whether ``run`` is judged now."""
    decision = run_sample_decide(run=run, rubric=rubric)
    run.sampling = decision.as_json()
    return decision.sampled
