"""Staged spans, the per-service default rubric and the team's recent rejections (registered
through runs.models)."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from rubrics.models import Rubric
from teams.models import Team


class OtelSpan(models.Model):
    """One received span. Once its agent span's run is assembled its content is kept for
    EVALSITE_OTEL_LATE_WINDOW seconds (a straggler re-assembles the run from it), then pruned
    to its ids (a tombstone: a retried export stores nothing twice, a straggler is recognised)
    until it expires after EVALSITE_OTEL_SPAN_TTL_HOURS."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, blank=True)
    name = models.CharField(max_length=300, blank=True)
    # gen_ai.operation.name (invoke_agent, chat, execute_tool, ...), "" when absent.
    operation = models.CharField(max_length=40, blank=True)
    start_ns = models.BigIntegerField(default=0)
    end_ns = models.BigIntegerField(default=0)
    attributes = models.JSONField(default=dict, blank=True)
    events = models.JSONField(default=list, blank=True)
    resource = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=5, default="unset")  # unset | ok | error
    status_message = models.TextField(blank=True)
    # Bytes of the span's attributes, events and resource as JSON: a trace's staged size; 0
    # once pruned.
    size = models.PositiveIntegerField(default=0)
    received_at = models.DateTimeField(default=timezone.now)
    run = models.ForeignKey(
        "runs.AgentRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    assembled_at = models.DateTimeField(null=True, blank=True)
    # On an agent span: its run changed (a straggler merged) while its evaluation was being
    # judged; a new evaluation is owed once that one ends (the sweeper retries).
    rejudge = models.BooleanField(default=False)

    class Meta:
        app_label = "runs"
        constraints = [
            models.UniqueConstraint(
                fields=["team", "trace_id", "span_id"], name="otel_span_unique"
            ),
        ]
        indexes = [
            # The sweeper: spans past their time to live, oldest first.
            models.Index(fields=["received_at"], name="otel_span_received"),
            # The sweeper: agent spans whose assembly never ran (a lost task).
            models.Index(
                fields=["received_at"],
                condition=models.Q(assembled_at__isnull=True, operation="invoke_agent")
                | models.Q(assembled_at__isnull=True, parent_span_id=""),
                name="otel_span_unassembled_agent",
            ),
            # The sweeper: assembled spans past the late window whose content is still kept.
            models.Index(
                fields=["assembled_at"],
                condition=models.Q(assembled_at__isnull=False, size__gt=0),
                name="otel_span_unpruned",
            ),
            # The sweeper: runs owed a new evaluation.
            models.Index(
                fields=["received_at"], condition=models.Q(rejudge=True), name="otel_span_rejudge"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.trace_id}:{self.span_id}"


class OtelServiceRubric(models.Model):
    """The rubric that judges runs of one ``service.name`` when their spans name none."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    service_name = models.CharField(max_length=200)
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        app_label = "runs"
        ordering = ["service_name"]
        constraints = [
            models.UniqueConstraint(fields=["team", "service_name"], name="otel_service_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.service_name} → {self.rubric_id}"


class RejectionKind(models.TextChoices):
    NO_CONTENT = "no_content", "No content to judge"
    LATE = "late", "After the late window"
    NO_RUN = "no_run", "Belongs to no run"
    RUBRIC = "rubric", "Rubric not usable"
    TOO_LARGE = "too_large", "Run too large"
    INVALID = "invalid", "Not a valid run"
    EXPIRED = "expired", "Expired unassembled"


class OtelRejection(models.Model):
    """Spans of an export that made no run, or a warning about a stored one (``spans`` 0),
    with the reason: the newest EVALSITE_OTEL_REJECTIONS_KEPT per team are kept."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    kind = models.CharField(max_length=12, choices=RejectionKind.choices)
    trace_id = models.CharField(max_length=32, blank=True)
    span_id = models.CharField(max_length=16, blank=True)
    # Spans not stored (or dropped); 0 for a warning about a stored run.
    spans = models.PositiveIntegerField(default=0)
    reason = models.TextField()

    class Meta:
        app_label = "runs"
        ordering = ["-created_at", "-id"]
        indexes = [
            # GET /api/otel/rejections and the settings page: a team's newest first; pruning.
            models.Index(fields=["team", "-created_at", "-id"], name="otel_rejection_newest"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.trace_id}:{self.span_id}"


class OtelExportItem(models.Model):
    """An evaluation whose verdicts are owed to its team's OTLP endpoint (an outbox row,
    written in the transaction that stored the verdicts: runs/otel/export.py). Deleted once the
    receiver accepted them, or given up on (counted on the team's export)."""

    id = models.BigAutoField(primary_key=True)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    evaluation = models.ForeignKey("runs.Evaluation", on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    attempts = models.PositiveIntegerField(default=0)
    # Not sent before this (backoff after a failed attempt).
    next_attempt_at = models.DateTimeField(default=timezone.now)
    # A drain holds the row until then (compare-and-set claim; a dead worker's claim expires).
    claim = models.UUIDField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "runs"
        indexes = [
            # The drain: a team's rows due now, oldest first; trimming a team's oldest.
            models.Index(fields=["team", "next_attempt_at", "id"], name="otel_export_due"),
            # Which teams have rows due.
            models.Index(fields=["next_attempt_at"], name="otel_export_next"),
            # Reading back one drain's claimed rows.
            models.Index(fields=["claim"], name="otel_export_claim"),
        ]

    def __str__(self) -> str:
        return f"export of {self.evaluation_id}"
