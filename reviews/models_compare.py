"""Comparisons: two sides (versions, a draft, or judge models) judged on the same runs
(made by reviews.services.comparisons)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from rubrics.models import Rubric, RubricVersion
from teams.models import Team


class ComparisonPurpose(models.TextChoices):
    COMPARE = "compare", "Comparison"
    GATE = "gate", "Publishing gate check"


class GateState(models.TextChoices):
    NONE = "", "No gate"
    CHECKING = "checking", "Checking the gate"
    PASSED = "passed", "Passed: published"
    FAILED = "failed", "Failed: not published"
    OVERRIDDEN = "overridden", "Failed, published anyway"


class Comparison(models.Model):
    """Side A (the baseline) and side B (the candidate), each a re-score batch of *calibration*
    evaluations over the same runs: never a run's current result, reusing stored verdicts."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="comparisons")
    version_a = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="+")
    version_b = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="+")
    judge_a = models.CharField(max_length=200)
    judge_b = models.CharField(max_length=200)
    batch_a = models.ForeignKey(
        "runs.RescoreBatch", null=True, on_delete=models.SET_NULL, related_name="+"
    )
    batch_b = models.ForeignKey(
        "runs.RescoreBatch", null=True, on_delete=models.SET_NULL, related_name="+"
    )
    # How the runs were chosen: {"kind": "latest" | "filter" | "golden" | "labelled" | "runs",
    # ...the kind's parameters}.
    sample = models.JSONField(default=dict)
    runs = models.PositiveIntegerField(default=0)
    estimate = models.JSONField(default=dict)  # {"a": Estimate, "b": Estimate}
    purpose = models.CharField(
        max_length=8, choices=ComparisonPurpose.choices, default=ComparisonPurpose.COMPARE
    )
    gate_state = models.CharField(max_length=10, choices=GateState.choices, blank=True)
    # The gate's verdict once decided: {"passed", "failing": [{criterion_id, reasons}], ...}.
    gate_result = models.JSONField(default=dict, blank=True)
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    request_hash = models.CharField(max_length=64, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # The table keeps the name it had when comparisons lived in runs (migrations
        # runs/0019 and reviews/0004 moved the model, not the data).
        db_table = "runs_comparison"
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["team", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="comparison_unique_idempotency_key",
            ),
        ]
        indexes = [
            # The editor's latest comparisons and gate checks of a rubric.
            models.Index(fields=["rubric", "purpose", "-created_at"], name="comparison_rubric"),
        ]

    def __str__(self) -> str:
        return f"comparison {self.id}"
