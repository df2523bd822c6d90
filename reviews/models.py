"""Human review of judge verdicts: labels, their append-only history, review state, calibration.

A *label* is a reviewer's verdict on one criterion wording of one run (positive = satisfied).
It lives in three tables: ``VerdictOverride`` rows are the history (who, when, from, to, note;
never updated or deleted), ``ReviewerLabel`` holds each reviewer's latest verdict, and
``VerdictLabel`` the label in effect: the majority of the reviewers' latest verdicts (no row
on a tie: the criterion is *disputed* and counts as unlabelled). The services rewrite both in
the same transaction as each history row. The judge's verdict stays untouched on
``runs.CriterionVerdict.satisfied``, so verdict reuse only ever copies judge verdicts.
Alignment dimension scores work the same way (``AlignmentOverride`` / ``AlignmentLabel``).
"""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from rubrics.models import Rubric, RubricVersion
from runs.models import AgentRun, Evaluation
from teams.models import ApiKey, Team


class Action(models.TextChoices):
    CONFIRM = "confirm", "Confirmed the judge"
    OVERRIDE = "override", "Overrode the judge"
    REVERT = "revert", "Reverted"


class Dimension(models.TextChoices):
    INTENT = "intent", "Intent alignment"
    REQUIREMENTS = "requirements", "Requirements fulfillment"
    COMPLETENESS = "completeness", "Completeness"
    APPROPRIATENESS = "appropriateness", "Response appropriateness"


class PerspectiveChoice(models.TextChoices):
    USER = "user", "User"
    SYSTEM = "system", "System"


class Actor(models.Model):
    """Who made a change: a signed-in user, or an API key (which acts for its team)."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    api_key = models.ForeignKey(
        ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Kept as text so the history still says who it was after the user or key is deleted.
    actor_name = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True


class VerdictOverride(Actor):
    """One change to the human label of one criterion wording on one run. Append-only."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="verdict_overrides")
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="+")
    criterion_key = models.CharField(max_length=32)
    # SHA-256 of the criterion's wording: a label answers one wording, not a later rewording.
    text_hash = models.CharField(max_length=64)
    description = models.TextField()
    # Whose verdict this row changes ("user:<id>", "key:<id>"): a revert changes the verdict of
    # the reviewer it reverts, whoever presses the button.
    reviewer_key = models.CharField(max_length=64, default="")
    # The evaluation whose verdict the reviewer saw (kept if the evaluation row goes).
    evaluation = models.ForeignKey(
        Evaluation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=10, choices=Action.choices)
    judge_satisfied = models.BooleanField()
    from_satisfied = models.BooleanField(null=True)
    # None only for a revert that leaves the criterion unlabelled.
    to_satisfied = models.BooleanField(null=True)
    note = models.TextField(blank=True)
    # The change that was in effect before this one: a revert of this row restores it.
    previous = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reverts = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reverted_by"
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(action="revert", reverts__isnull=False)
                | (~Q(action="revert") & Q(reverts__isnull=True, to_satisfied__isnull=False)),
                name="verdict_override_revert_shape",
            ),
        ]
        indexes = [
            # A run's review history, newest first (review page, GET /api/runs/{id}/overrides).
            models.Index(fields=["run", "-created_at"], name="voverride_run_newest"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.criterion_key} on {self.run_id} by {self.actor_name}"


class ReviewerLabel(models.Model):
    """One reviewer's latest verdict on one criterion wording of one run."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="reviewer_labels")
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="+")
    criterion_key = models.CharField(max_length=32)
    text_hash = models.CharField(max_length=64)
    description = models.TextField()
    reviewer_key = models.CharField(max_length=64)
    satisfied = models.BooleanField()
    note = models.TextField(blank=True)
    # The reviewer's change in effect (what "revert" undoes); it names the reviewer.
    source = models.ForeignKey(VerdictOverride, on_delete=models.PROTECT, related_name="+")
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "rubric", "criterion_key", "text_hash", "reviewer_key"],
                name="reviewer_label_unique",
            ),
        ]
        indexes = [
            # Inter-reviewer agreement, disputed runs and the second-opinion queue of a rubric.
            models.Index(fields=["rubric", "reviewer_key"], name="rlabel_rubric_reviewer"),
        ]

    def __str__(self) -> str:
        return f"{self.reviewer_key}: {self.criterion_key}={self.satisfied} on {self.run_id}"


class VerdictLabel(models.Model):
    """The human label in effect for one criterion wording on one run: the majority of the
    reviewers' latest verdicts (ReviewerLabel). ``source`` is the newest change on its side."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="verdict_labels")
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="+")
    criterion_key = models.CharField(max_length=32)
    text_hash = models.CharField(max_length=64)
    description = models.TextField()
    satisfied = models.BooleanField()
    note = models.TextField(blank=True)
    source = models.ForeignKey(VerdictOverride, on_delete=models.PROTECT, related_name="+")
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "rubric", "criterion_key", "text_hash"], name="label_unique_wording"
            ),
        ]
        indexes = [
            # Agreement, exports and the queue's filters: a rubric's labels.
            models.Index(fields=["team", "rubric", "criterion_key"], name="label_rubric_key"),
        ]

    def __str__(self) -> str:
        return f"{self.criterion_key}={self.satisfied} on {self.run_id}"


class AlignmentOverride(Actor):
    """One change to the human score of one alignment dimension of one run. Append-only."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="alignment_overrides")
    evaluation = models.ForeignKey(
        Evaluation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    perspective = models.CharField(max_length=6, choices=PerspectiveChoice.choices)
    dimension = models.CharField(max_length=16, choices=Dimension.choices)
    action = models.CharField(max_length=10, choices=Action.choices)
    judge_score = models.FloatField()
    from_score = models.FloatField(null=True)
    to_score = models.FloatField(null=True)
    note = models.TextField(blank=True)
    previous = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reverts = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reverted_by"
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(to_score__isnull=True) | (Q(to_score__gte=0) & Q(to_score__lte=1)),
                name="alignment_override_score_in_unit_range",
            ),
            models.CheckConstraint(
                condition=Q(action="revert", reverts__isnull=False)
                | (~Q(action="revert") & Q(reverts__isnull=True, to_score__isnull=False)),
                name="alignment_override_revert_shape",
            ),
        ]
        indexes = [
            # A run's alignment review history, newest first.
            models.Index(fields=["run", "-created_at"], name="aoverride_run_newest"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.perspective}.{self.dimension} on {self.run_id}"


class AlignmentLabel(models.Model):
    """The human score in effect for one alignment dimension of one run."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="alignment_labels")
    perspective = models.CharField(max_length=6, choices=PerspectiveChoice.choices)
    dimension = models.CharField(max_length=16, choices=Dimension.choices)
    score = models.FloatField()
    note = models.TextField(blank=True)
    source = models.ForeignKey(AlignmentOverride, on_delete=models.PROTECT, related_name="+")
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "perspective", "dimension"], name="alignment_label_unique"
            ),
            models.CheckConstraint(
                condition=Q(score__gte=0) & Q(score__lte=1), name="alignment_label_in_unit_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.perspective}.{self.dimension}={self.score} on {self.run_id}"


class RunReview(models.Model):
    """A run's review state within one rubric's queue: progress, golden flag, claim lease."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="reviews")
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="+")
    # Set while every criterion of the run's current verdicts carries a label for its wording.
    reviewed_at = models.DateTimeField(null=True, blank=True)
    labelled = models.PositiveIntegerField(default=0)
    overridden = models.PositiveIntegerField(default=0)
    # Reviewers with a verdict on the current verdicts, and criteria whose reviewers tie: the
    # second-opinion queue is runs with one reviewer or a dispute.
    reviewers = models.PositiveIntegerField(default=0)
    disputed = models.PositiveIntegerField(default=0)
    golden = models.BooleanField(default=False)
    golden_at = models.DateTimeField(null=True, blank=True)
    # A reviewer's claim: nobody else is handed this run until the lease runs out.
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    claim_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "rubric"], name="run_review_unique"),
        ]
        indexes = [
            # Queue progress ("37 of 120 reviewed") and the golden set of a rubric.
            models.Index(fields=["rubric", "reviewed_at"], name="review_rubric_reviewed"),
            models.Index(fields=["rubric", "golden"], name="review_rubric_golden"),
        ]

    def __str__(self) -> str:
        return f"review of {self.run_id} in {self.rubric_id}"


class CalibrationKind(models.TextChoices):
    GOLDEN = "golden", "Golden-set run"
    CONSISTENCY = "consistency", "Consistency check"


class Calibration(models.Model):
    """A golden-set run or a consistency check: extra judgements of a set of runs, made as
    calibration evaluations (never a run's current result) and compared afterwards."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=12, choices=CalibrationKind.choices)
    # What was judged: a stored version, or candidate criteria ([{key, description, required}]).
    version = models.ForeignKey(
        RubricVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    criteria = models.JSONField(null=True, blank=True)
    # The version a golden run's flips are counted against (the rubric's version at the time).
    baseline_version = models.ForeignKey(
        RubricVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    judge_model = models.CharField(max_length=200, blank=True)
    repeats = models.PositiveSmallIntegerField(default=1)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(version__isnull=False) | Q(criteria__isnull=False),
                name="calibration_has_criteria",
            ),
            models.CheckConstraint(
                condition=Q(repeats__gte=1), name="calibration_repeats_positive"
            ),
        ]
        indexes = [
            # The golden and consistency pages: a rubric's calibrations, newest first.
            models.Index(fields=["rubric", "kind", "-created_at"], name="calibration_rubric_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.id}"


class CalibrationItem(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    calibration = models.ForeignKey(Calibration, on_delete=models.CASCADE, related_name="items")
    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="+")
    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="+")
    repeat = models.PositiveSmallIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["calibration", "run", "repeat"], name="calibration_item_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.calibration_id}: {self.run_id} #{self.repeat}"


# Alerts live with their code (reviews.services.alerts).
from .models_alerts import Alert, AlertDelivery, AlertKind, AlertRule, WebhookFormat  # noqa: E402,F401
from .models_compare import Comparison, ComparisonPurpose, GateState  # noqa: E402,F401
from .models_suggest import (  # noqa: E402,F401
    CriteriaDraft,
    Suggestion,
    SuggestionKind,
    SuggestionStatus,
    SuggestionThreshold,
)
