"""Writes for human review and judge calibration (see the modules for each flow)."""

from .calibration import candidate_criteria, consistency_check, golden_run
from .claims import claim_next, claim_release, claim_take
from .errors import ReviewConflict, ReviewValidationError
from .labels import (
    LabelChange,
    Reviewer,
    alignment_override_create,
    alignment_override_revert,
    golden_set_mark,
    override_create,
    override_revert,
    review_confirm,
)
from .refresh import review_result_refresh, review_results_refresh

__all__ = [
    "LabelChange",
    "ReviewConflict",
    "ReviewValidationError",
    "Reviewer",
    "alignment_override_create",
    "alignment_override_revert",
    "candidate_criteria",
    "claim_next",
    "claim_release",
    "claim_take",
    "consistency_check",
    "golden_run",
    "golden_set_mark",
    "override_create",
    "override_revert",
    "review_confirm",
    "review_result_refresh",
    "review_results_refresh",
]
