"""What state a run or an evaluation is in, and which kind of scorer an evaluation ran."""

from typing import Literal

from django.db import models


class Status(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"
    # A run only: its rubric's sampling (rate or filters) left it out; a re-score judges it.
    NOT_SAMPLED = "not_sampled", "Not sampled"
    # Nothing could be judged (no criteria anywhere, alignment off): never a success.
    NOTHING_TO_JUDGE = "nothing_to_judge", "Nothing to judge"
    # The team's judge budget is reached: waits, and is queued again when there is room
    # (judging.services.budget). Never a failure.
    OVER_BUDGET = "over_budget", "Over budget"


# Status values as a type, for API schemas and filters (a test keeps it equal to Status).
StatusChoice = Literal[
    "queued",
    "running",
    "succeeded",
    "failed",
    "cancelled",
    "not_sampled",
    "nothing_to_judge",
    "over_budget",
]

# Not ended yet: over-budget evaluations count, so a re-score batch pauses on them.
PENDING_STATUSES = (Status.QUEUED, Status.RUNNING, Status.OVER_BUDGET)
FINAL_STATUSES = (
    Status.SUCCEEDED,
    Status.FAILED,
    Status.CANCELLED,
    Status.NOT_SAMPLED,
    Status.NOTHING_TO_JUDGE,
)


class Kind(models.TextChoices):
    RUBRIC = "rubric", "Rubric"
    ALIGNMENT = "alignment", "Prompt alignment"
