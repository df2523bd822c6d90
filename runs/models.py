import uuid
from typing import Any, Literal

from django.conf import settings
from django.db import models
from django.db.models import Q

from rubrics.models import AlignmentMode, Criterion, Rubric, RubricVersion
from runs.scoring.rules import RunResult, display_round, run_result
from runs.scoring.trajectory import Step, normalise
from teams.models import Team


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
    # (runs.services.budget). Never a failure.
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


class AgentRun(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="runs")
    # NULL, not "", when absent: the unique constraint applies only to given ids.
    external_id = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    agent = models.CharField(max_length=200, blank=True)
    input = models.JSONField(default=dict)
    output = models.JSONField(default=str)
    request_context = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # Texts the scorers read, extracted once at ingest (SCORING.md "Shared terms").
    task_text = models.TextField(blank=True)
    system_text = models.TextField(blank=True)
    output_text = models.TextField(blank=True)
    # The run's messages (input then output) normalised into ordered steps, once at ingest
    # (runs.scoring.trajectory): messages, tool calls, tool results, unknown parts kept whole.
    steps = models.JSONField(default=list, blank=True)
    # How many steps carry a flag (malformed tool call, result matching no call).
    flagged_steps = models.PositiveIntegerField(default=0)
    # A reference answer the judge is shown in every view (optional).
    expected_output = models.TextField(blank=True)
    # SHA-256 of the canonical payload: the same external_id with another payload is a conflict.
    content_hash = models.CharField(max_length=64)
    rubric = models.ForeignKey(
        Rubric, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    alignment_mode = models.CharField(
        max_length=8, choices=AlignmentMode.choices, default=AlignmentMode.OFF
    )
    # Denormalised current result, written in the evaluation's own transaction so lists and
    # filters never aggregate evaluations on the fly.
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.SUCCEEDED)
    # The rubric's sampling decision at ingest (runs.services.sampling): {"sampled", "rate",
    # "bucket", "reason"}; {} when no rubric applied.
    sampling = models.JSONField(default=dict, blank=True)
    # passed, score and alignment_score are human-adjusted: the judge's result until a reviewer
    # labels or overrides a verdict or an alignment dimension, then the result recomputed with
    # those labels (reviews/services/refresh.py); the judge's own result stays on Evaluation.
    passed = models.BooleanField(null=True)
    score = models.FloatField(null=True)
    alignment_score = models.FloatField(null=True)
    current_version = models.ForeignKey(
        RubricVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["team", "external_id"],
                condition=Q(external_id__isnull=False),
                name="run_unique_team_external_id",
            ),
        ]
        indexes = [
            # Runs list, newest first, keyset on (created_at, id).
            models.Index(fields=["team", "-created_at", "-id"], name="run_team_newest"),
            # Runs list filtered by rubric and passed/failed.
            models.Index(
                fields=["team", "rubric", "passed", "-created_at"], name="run_team_rubric_passed"
            ),
            # Runs list filtered by evaluation status (live queue views).
            models.Index(fields=["team", "status", "-created_at"], name="run_team_status"),
            # Runs list filtered by agent.
            models.Index(fields=["team", "agent", "-created_at"], name="run_team_agent"),
            # Home page pass rates and the rubric list's 30-day counts: an index-only scan of
            # the window (PostgreSQL reads rubric and passed from the index, not the wide rows).
            models.Index(
                fields=["team", "created_at"],
                include=["rubric", "passed"],
                name="run_team_day_result",
            ),
        ]

    def __str__(self) -> str:
        return self.external_id or str(self.id)

    def judge_result(self) -> dict[str, Any] | None:
        """The judge's own result (passed, score, alignment_score) when the row was read with
        runs.selectors.runs.with_judged; None when it was not, or no evaluation is current."""
        values = {
            "passed": getattr(self, "judge_passed", None),
            "score": getattr(self, "judge_score", None),
            "alignment_score": getattr(self, "judge_alignment_score", None),
        }
        return values if any(v is not None for v in values.values()) else None

    @property
    def result(self) -> RunResult:
        """The run's result as every surface shows it (runs.scoring.rules.run_result): empty
        unless its status is succeeded, whatever the stored columns still hold."""
        return run_result(
            status=self.status,
            passed=self.passed,
            score=self.score,
            alignment_score=self.alignment_score,
            judge=self.judge_result(),
        )

    def trajectory(self) -> list[Step]:
        """The run's steps; computed from its messages for rows stored before steps were."""
        if self.steps:
            return self.steps
        messages = self.input.get("messages") if isinstance(self.input, dict) else None
        return normalise(messages, self.output)


class RunTool(models.Model):
    """One tool a run called (distinct per run): "runs that called `refund`"."""

    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="tools")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    tool = models.CharField(max_length=200)
    calls = models.PositiveIntegerField(default=1)
    run_created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "tool"], name="run_tool_unique"),
        ]
        indexes = [
            models.Index(fields=["team", "tool", "-run_created_at"], name="run_tool_team_newest"),
            # The runs filter's list of the team's recently called tools.
            models.Index(
                fields=["team", "-run_created_at"], include=["tool"], name="run_tool_team_recent"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool} ×{self.calls}"


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
    # once (EVALSITE_BATCH_WINDOW when it was created): see runs.services.rescore.
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
    # Held back by the re-score dispatcher (runs.services.rescore), which releases a batch's
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


# OpenTelemetry ingest's staged spans and service defaults live with their code (runs/otel/).
from .models_budget import BudgetCounter, BudgetHold, JudgeBudget  # noqa: E402,F401
from .models_compare import Comparison, ComparisonPurpose, GateState  # noqa: E402,F401
from .models_rollup import (  # noqa: E402,F401
    CriterionDayRollup,
    EvaluationDayRollup,
    RunDayRollup,
    VersionRollup,
)
from .otel.models import OtelRejection, OtelServiceRubric, OtelSpan  # noqa: E402,F401
