"""Re-score batches: a rubric version (and judge) applied again to a scope of runs."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from rubrics.models import Rubric, RubricVersion
from teams.models import Team


class BatchStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    COMPLETED_WITH_FAILURES = "completed_with_failures", "Completed with failures"
    CANCELLED = "cancelled", "Cancelled"


class RescoreBatch(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="batches")
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="batches")
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="+")
    judge_model = models.CharField(max_length=200, blank=True)
    force = models.BooleanField(default=False)
    scope = models.JSONField(default=dict)
    status = models.CharField(
        max_length=24, choices=BatchStatus.choices, default=BatchStatus.QUEUED
    )
    estimate = models.JSONField(default=dict)
    total = models.PositiveIntegerField(default=0)
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    # SHA-256 of what was asked (rubric, scope, version, judge, force, webhook): the same
    # idempotency key with another request is a conflict, not this batch.
    request_hash = models.CharField(max_length=64, blank=True)
    webhook_url = models.URLField(blank=True)
    webhook_delivered_at = models.DateTimeField(null=True, blank=True)
    webhook_attempts = models.PositiveIntegerField(default=0)
    webhook_error = models.TextField(blank=True)
    # At most this many of the batch's evaluations are released to the broker or running at
    # once (EVALSITE_BATCH_WINDOW when it was created): see judging.services.rescore.
    window = models.PositiveIntegerField(default=64)
    # Set by a cancel: queued work was cancelled; the batch ends once running work finishes.
    cancelled_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["team", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="batch_unique_idempotency_key",
            ),
        ]

    def __str__(self) -> str:
        return f"re-score batch {self.id} ({self.status})"
