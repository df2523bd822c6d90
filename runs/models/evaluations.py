"""Evaluations (one scorer run on one agent run) and what they found: criterion verdicts and
prompt-alignment breakdowns."""

import uuid

from django.db import models
from django.db.models import Q

from judge_engine.rules import display_round
from rubrics.models import Criterion, Rubric, RubricVersion
from teams.models import Team

from .batches import RescoreBatch
from .runs import AgentRun
from .status import Kind, Status


class Evaluation(models.Model):
    """One scorer run on one agent run. Never mutated once final; re-scoring adds new rows."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="evaluations")
    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="evaluations")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    rubric = models.ForeignKey(
        Rubric, null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluations"
    )
    rubric_version = models.ForeignKey(
        RubricVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="evaluations"
    )
    # Criteria given inline (POST /api/score) or resolved from the run, when no version applies.
    inline_criteria = models.JSONField(null=True, blank=True)
    batch = models.ForeignKey(
        RescoreBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluations"
    )
    force = models.BooleanField(default=False)
    # Judged for human-review calibration (a golden-set run or a consistency check, see
    # reviews.services): never the run's current result and never counted in its status.
    calibration = models.BooleanField(default=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    attempts = models.PositiveIntegerField(default=0)
    lease_token = models.UUIDField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # Set when the broker accepted the message; null after a failed publish (sweeper resends).
    enqueued_at = models.DateTimeField(null=True, blank=True)
    # Held back by the re-score dispatcher (judging.services.rescore), which releases a batch's
    # evaluations a few at a time so batches interleave; the sweeper never sends held rows.
    held = models.BooleanField(default=False)
    # A transient judge failure re-queues the evaluation to run no earlier than this.
    not_before = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    # Judge identity and scoring parameters, frozen at creation.
    judge_model = models.CharField(max_length=200, blank=True)
    judge_config = models.JSONField(default=dict)
    scale = models.FloatField(default=1.0)
    strategy = models.CharField(max_length=12, blank=True)
    alignment_mode = models.CharField(max_length=8, blank=True)
    alignment_weights = models.JSONField(null=True, blank=True)
    # What of the run the judge sees (rubrics.models.JudgeView) and the rendered run's token
    # budget, frozen at creation.
    judge_view = models.CharField(max_length=12, default="final", blank=True)
    run_token_budget = models.PositiveIntegerField(null=True, blank=True)
    # What the rendering cut to fit the budget: {"tokens", "budget", "elided": [{"from", "to",
    # "steps", "tool_calls"}], "shortened": [step indices]}; {} when nothing was cut.
    rendering = models.JSONField(default=dict, blank=True)
    # What the judge saw and said: one entry per call (messages, raw answer, tokens, cost,
    # latency).
    calls = models.JSONField(default=list, blank=True)
    judge_calls = models.PositiveIntegerField(default=0)
    criteria_judged = models.PositiveIntegerField(default=0)
    criteria_reused = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost = models.FloatField(null=True, blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    # The judge's results, as judged (AgentRun carries the human-adjusted ones).
    score = models.FloatField(null=True, blank=True)
    passed = models.BooleanField(null=True)
    reason = models.TextField(blank=True)
    overall = models.TextField(blank=True)
    criteria_source = models.CharField(max_length=16, blank=True)
    band = models.CharField(max_length=16, blank=True)
    user_score = models.FloatField(null=True, blank=True)
    system_score = models.FloatField(null=True, blank=True)
    system_applicable = models.BooleanField(null=True)
    # Whether the user perspective was judged: false in system mode and for `both` without a
    # user message (the system perspective alone then makes the score).
    user_applicable = models.BooleanField(null=True)
    # The newest succeeded evaluation per (run, kind, rubric) is current.
    is_current = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind="alignment")
                | Q(rubric__isnull=False)
                | Q(inline_criteria__isnull=False),
                name="evaluation_rubric_has_criteria_source",
            ),
            # A run never has two pending rubric evaluations for the same version and judge:
            # a duplicate re-score request or a re-score racing another one adds nothing.
            # Calibration evaluations are exempt: a consistency check judges a run N times.
            models.UniqueConstraint(
                fields=["run", "rubric_version", "judge_model"],
                condition=Q(kind="rubric", status__in=["queued", "running"], calibration=False),
                name="evaluation_one_pending_per_version_judge",
            ),
        ]
        indexes = [
            # Sweeper: running evaluations with an expired lease; queued ones left behind.
            models.Index(fields=["status", "lease_expires_at"], name="eval_status_lease"),
            # Run detail: a run's evaluations, newest first.
            models.Index(fields=["run", "-created_at"], name="eval_run_newest"),
            # Home page: evaluations by status and over time per team.
            models.Index(fields=["team", "status", "-created_at"], name="eval_team_status"),
            # Batch progress counts.
            models.Index(fields=["batch", "status"], name="eval_batch_status"),
            # Home page: evaluations per day by status, alignment band and judge usage, read
            # from the index alone (the rows carry the judge's prompts and are wide).
            models.Index(
                fields=["team", "created_at"],
                include=[
                    "kind",
                    "status",
                    "is_current",
                    "band",
                    "prompt_tokens",
                    "completion_tokens",
                    "cost",
                    "judge_calls",
                ],
                name="eval_team_day_usage",
            ),
            # Rubric editor: distinct runs judged on each version.
            models.Index(
                fields=["rubric_version", "status"], include=["run"], name="eval_version_runs"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} evaluation {self.id} ({self.status})"


class CriterionVerdict(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="verdicts")
    # Denormalised from the evaluation for the failing-criterion filter (a narrow index).
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="verdicts")
    rubric = models.ForeignKey(
        Rubric, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    run_created_at = models.DateTimeField()
    is_current = models.BooleanField(default=False)
    criterion = models.ForeignKey(
        Criterion, null=True, blank=True, on_delete=models.PROTECT, related_name="verdicts"
    )
    criterion_key = models.CharField(max_length=32)
    position = models.PositiveIntegerField()
    description = models.TextField()
    required = models.BooleanField()
    satisfied = models.BooleanField()
    reasoning = models.TextField(blank=True)
    verdict_key = models.CharField(max_length=64)
    # Step indices of the run's trajectory this verdict relies on (validated against it), and
    # what was dropped from the judge's citations, if anything.
    evidence = models.JSONField(default=list, blank=True)
    evidence_note = models.CharField(max_length=300, blank=True)
    reused_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["evaluation", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["evaluation", "criterion_key"], name="verdict_unique_per_evaluation"
            ),
        ]
        indexes = [
            # "Runs failing criterion X of rubric Y, newest first" and per-criterion failure rates.
            models.Index(
                fields=[
                    "team",
                    "rubric",
                    "criterion_key",
                    "is_current",
                    "satisfied",
                    "-run_created_at",
                ],
                name="verdict_failing_criterion",
            ),
            # Verdict reuse: look up a prior verdict by key.
            models.Index(fields=["team", "verdict_key"], name="verdict_reuse_key"),
            # Failed-criteria review: failure counts per criterion of one version (index-only).
            models.Index(
                fields=["criterion", "is_current", "satisfied"], name="verdict_criterion_stats"
            ),
        ]

    def __str__(self) -> str:
        return f"[{self.criterion_key}] {'✓' if self.satisfied else '✗'} {self.description[:60]}"


class Perspective(models.TextChoices):
    USER = "user", "User"
    SYSTEM = "system", "System"


class AlignmentBreakdown(models.Model):
    """One perspective of a prompt-alignment evaluation, every dimension in its own column."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="alignment")
    perspective = models.CharField(max_length=6, choices=Perspective.choices)
    weighted_score = models.FloatField()
    weights = models.JSONField(default=dict)
    intent_score = models.FloatField()
    primary_intent = models.TextField(blank=True)
    intent_addressed = models.BooleanField()
    intent_reasoning = models.TextField(blank=True)
    requirements_score = models.FloatField()
    requirements = models.JSONField(default=list)
    completeness_score = models.FloatField()
    missing_elements = models.JSONField(default=list)
    completeness_reasoning = models.TextField(blank=True)
    appropriateness_score = models.FloatField()
    format_aligned = models.BooleanField()
    tone_aligned = models.BooleanField()
    appropriateness_reasoning = models.TextField(blank=True)
    overall_assessment = models.TextField(blank=True)

    class Meta:
        ordering = ["evaluation", "perspective"]
        constraints = [
            models.UniqueConstraint(
                fields=["evaluation", "perspective"], name="alignment_unique_perspective"
            ),
            *[
                models.CheckConstraint(
                    condition=Q(**{f"{f}__gte": 0}) & Q(**{f"{f}__lte": 1}),
                    name=f"alignment_{f}_in_unit_range",
                )
                for f in (
                    "intent_score",
                    "requirements_score",
                    "completeness_score",
                    "appropriateness_score",
                    "weighted_score",
                )
            ],
        ]

    def __str__(self) -> str:
        return f"{self.perspective} alignment {display_round(self.weighted_score):.2f}"
