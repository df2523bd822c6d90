"""Alerts: rules per rubric (or per team, for the judge budget), the alerts they fire, and
every webhook delivery attempt (registered through reviews.models; evaluated by
reviews.services.alerts on a Celery beat schedule)."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from rubrics.models import Rubric
from teams.models import Team


class AlertKind(models.TextChoices):
    # threshold: percent of a criterion's current verdicts in the window that fail.
    CRITERION_FAILURE_RATE = "criterion_failure_rate", "Criterion failure rate above"
    # threshold: points the pass rate fell from the previous window to this one.
    PASS_RATE_DROP = "pass_rate_drop", "Pass rate drop of more than"
    # threshold: Cohen's kappa of judge against human labels, per criterion.
    KAPPA_BELOW = "kappa_below", "Judge–human kappa below"
    # threshold: evaluations that failed (judge errors) in the window.
    JUDGE_ERRORS = "judge_errors", "Judge errors above"
    # threshold: percent of a judge budget used (80, 100).
    BUDGET = "budget", "Judge budget used at least"


class WebhookFormat(models.TextChoices):
    JSON = "json", "JSON (signed)"
    SLACK = "slack", "Slack-compatible"


class AlertRule(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    # Every kind but "budget" watches one rubric.
    rubric = models.ForeignKey(
        Rubric, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    kind = models.CharField(max_length=24, choices=AlertKind.choices)
    criterion_key = models.CharField(max_length=32, blank=True)
    threshold = models.FloatField()
    window_hours = models.PositiveIntegerField(default=24)
    # After an alert resolves, the rule does not fire again for this long (no flapping).
    cooldown_minutes = models.PositiveIntegerField(default=60)
    webhook_url = models.URLField(blank=True, max_length=500)
    webhook_format = models.CharField(
        max_length=8, choices=WebhookFormat.choices, default=WebhookFormat.JSON
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind="budget") | Q(rubric__isnull=False), name="alert_rule_has_rubric"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.threshold:g}"


class Alert(models.Model):
    """One breach of a rule: fired once, resolved when the condition clears."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="alerts")
    value = models.FloatField(null=True)
    message = models.TextField()
    # Runs that caused it (at most 20) and a runs-list query showing all of them.
    run_ids = models.JSONField(default=list, blank=True)
    runs_query = models.CharField(max_length=300, blank=True)
    fired_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-fired_at"]
        constraints = [
            # One open alert per rule: concurrent evaluations of a rule fire it once.
            models.UniqueConstraint(
                fields=["rule"], condition=Q(resolved_at__isnull=True), name="alert_one_open"
            ),
        ]
        indexes = [
            # The alerts page: a team's alerts, newest first.
            models.Index(fields=["team", "-fired_at"], name="alert_team_newest"),
        ]

    def __str__(self) -> str:
        return self.message


class AlertDelivery(models.Model):
    """One attempt to tell a rule's webhook that an alert fired or resolved."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=16)  # alert.fired, alert.resolved
    attempt = models.PositiveIntegerField()
    status_code = models.PositiveIntegerField(null=True)
    ok = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.event} attempt {self.attempt}: {'ok' if self.ok else self.error}"
