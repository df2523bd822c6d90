"""Writes for runs and evaluations (see the modules for each flow)."""

from .evaluations import evaluations_enqueue, judge_config_for
from .execute import evaluation_execute, evaluations_execute
from .ingest import RunConflict, RunTooLarge, RunValidationError, run_ingest
from .sweep import evaluations_sweep

__all__ = [
    "RunConflict",
    "RunTooLarge",
    "RunValidationError",
    "evaluation_execute",
    "evaluations_execute",
    "evaluations_enqueue",
    "evaluations_sweep",
    "judge_config_for",
    "run_ingest",
]
