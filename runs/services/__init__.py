"""Writes for runs and their evaluation rows: ingest, evaluation rows, rollups (see the modules
for each flow). Executing evaluations is judging/services."""

from .evaluations import evaluations_enqueue, judge_config_for
from .ingest import RunConflict, RunTooLarge, RunValidationError, run_ingest

__all__ = [
    "RunConflict",
    "RunTooLarge",
    "RunValidationError",
    "evaluations_enqueue",
    "judge_config_for",
    "run_ingest",
]
