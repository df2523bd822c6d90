"""Ingest's decisions on a run before any judge sees it: whether a run bound to a rubric is
judged now (sampling), and what a run with nothing to judge becomes.

Reads only the rubric row ingest has already loaded and the run being built: no query. The
sampling rules themselves are the engine's (judge_engine.sampling).
"""

from __future__ import annotations

from judge_engine.sampling import (
    FULL_RATE,
    SampleDecision,
    SampleFilters,
    sample_bucket,
    sample_decide,
)
from rubrics.models import Rubric

from ..models import AgentRun
from ..payloads import RunPayload

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


def nothing_to_judge_refusal(*, payload: RunPayload, rubric: Rubric | None) -> dict[str, str]:
    """Why a run whose rubric can judge nothing (no criteria, alignment off) is refused, by
    field: where the rubric was named. {} without a rubric: such a run is stored as
    nothing_to_judge (never a success)."""
    if rubric is None:
        return {}
    field = "rubric" if payload.rubric is not None else "request_context.rubric"
    return {
        field: f"rubric {rubric.slug!r} has no criteria and prompt alignment is off: "
        "nothing to judge"
    }
