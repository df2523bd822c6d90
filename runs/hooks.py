"""Hooks through which an app above runs (reviews) takes part in runs' own writes.

runs must not import the apps built on it; an app that needs to be told registers a function
here from its ``AppConfig.ready()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ResultAdjuster = Callable[[dict[Any, tuple[Any, Any]]], dict[Any, dict[str, Any]]]
"""Takes {run id: (current rubric evaluation id, current alignment evaluation id)} (either may
be None) and answers {run id: the fields to change on that run (``passed``, ``score``,
``alignment_score``)} for the runs it adjusts. Called inside the refresh's transaction."""

_result_adjusters: list[ResultAdjuster] = []


def result_adjuster_register(adjust: ResultAdjuster) -> None:
    """Every run refresh (runs.services.run_state) lets ``adjust`` change the run's denormalised
    result. Registering the same function again changes nothing."""
    if adjust not in _result_adjusters:
        _result_adjusters.append(adjust)


def result_adjusters() -> tuple[ResultAdjuster, ...]:
    return tuple(_result_adjusters)


BatchEnded = Callable[[Any], None]
"""Takes the id of a re-score batch that just ended (after the ending transaction commits)."""

_batch_ended: list[BatchEnded] = []


def batch_ended_register(hook: BatchEnded) -> None:
    """Every re-score batch that ends (judging.services.rescore_dispatch) is passed to ``hook``,
    once, after commit: reviews settles a publishing gate whose comparison it belonged to."""
    if hook not in _batch_ended:
        _batch_ended.append(hook)


def batch_ended_hooks() -> tuple[BatchEnded, ...]:
    return tuple(_batch_ended)
