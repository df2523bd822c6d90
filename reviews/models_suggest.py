"""Suggested criterion edits: what the judge model proposed from the reviewers' disagreements
(made by reviews.services.suggestions), and each rubric's threshold for asking."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from rubrics.models import Rubric, RubricVersion
from teams.models import Team

from .models_compare import Comparison


class SuggestionKind(models.TextChoices):
    REWORD = "reword", "Reword the criterion"
    SPLIT = "split", "Split it into two"
    INSTRUCTION = "instruction", "Add a grading instruction"


class SuggestionStatus(models.TextChoices):
    PENDING = "pending", "Asking the judge"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"
    ACCEPTED = "accepted", "Accepted"
    DISMISSED = "dismissed", "Dismissed"


class Suggestion(models.Model):
    """One edit of one criterion, asked of the judge model with the runs it rests on
    (``evidence``). Never applied by itself: accepting puts it into a draft version and starts
    a comparison (``draft``, ``comparison``); the publishing gate decides the rest."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="+")
    # The version whose criterion it edits, and that criterion's key and wording then.
    version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="+")
    criterion_key = models.CharField(max_length=32)
    criterion_text = models.TextField()
    status = models.CharField(
        max_length=10, choices=SuggestionStatus.choices, default=SuggestionStatus.PENDING
    )
    kind = models.CharField(max_length=12, choices=SuggestionKind.choices, blank=True)
    text = models.TextField(blank=True)
    rationale = models.TextField(blank=True)
    error = models.TextField(blank=True)
    # The run ids of the disagreeing labels shown to the judge, newest first.
    evidence = models.JSONField(default=list)
    # The judge it is asked of, frozen when it is requested as an evaluation's is
    # (rubrics.judging.judge_config_for: model, parameters, connection id, never a key).
    judge_config = models.JSONField(default=dict)
    judge_model = models.CharField(max_length=200, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    cost = models.FloatField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    draft = models.ForeignKey(
        RubricVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    comparison = models.ForeignKey(
        Comparison, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # An edit is whole or absent: ready and accepted ones carry a kind and a text.
            models.CheckConstraint(
                condition=~Q(status__in=["ready", "accepted"]) | (~Q(kind="") & ~Q(text="")),
                name="suggestion_ready_has_edit",
            ),
            models.CheckConstraint(
                condition=~Q(status="accepted") | Q(draft__isnull=False),
                name="suggestion_accepted_has_draft",
            ),
        ]
        indexes = [
            # GET /api/rubrics/{rubric}/suggestions, the editor and review pages: newest first.
            models.Index(fields=["rubric", "-created_at"], name="suggestion_rubric_newest"),
            # Judge usage of a team's suggestions in a budget period (budget recounts).
            models.Index(fields=["team", "finished_at"], name="suggestion_team_finished"),
        ]

    def __str__(self) -> str:
        return f"{self.kind or 'suggestion'} of {self.criterion_key} ({self.status})"


class SuggestionThreshold(models.Model):
    """A rubric's own minimum of disagreeing labels on a criterion before an edit may be asked
    (EVALSITE_SUGGEST_MIN_LABELS otherwise)."""

    rubric = models.OneToOneField(
        Rubric, primary_key=True, on_delete=models.CASCADE, related_name="+"
    )
    min_labels = models.PositiveIntegerField()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(min_labels__gte=1), name="suggestion_threshold_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rubric_id}: {self.min_labels}"


class CriteriaDraft(models.Model):
    """One request to draft a rubric's criteria from an agent's system prompt
    (reviews.services.drafting): who asked, how it ended and what it cost. The criteria go back
    to the caller to edit and are not kept here; neither is the system prompt. The tokens count
    against the team's judge budget (a usage source, registered in ReviewsConfig.ready), and a
    row still ``pending`` counts toward the team's drafts in flight."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status = models.CharField(
        max_length=12, choices=SuggestionStatus.choices, default=SuggestionStatus.PENDING
    )
    criteria_count = models.PositiveIntegerField(default=0)
    runs_shown = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    judge_model = models.CharField(max_length=200, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    cost = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # The budget's recount (finished in a period) and the drafts in flight per team.
            models.Index(fields=["team", "finished_at"], name="criteria_draft_team_finished"),
            models.Index(fields=["team", "status"], name="criteria_draft_team_status"),
        ]

    def __str__(self) -> str:
        return f"criteria draft {self.id} ({self.status})"
