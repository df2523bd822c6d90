"""Agent runs as they arrived (ingest, bulk, OTLP) and the tools each one called."""

import uuid
from typing import Any

from django.db import models
from django.db.models import Q

from judge_engine.rules import RunResult, run_result
from judge_engine.trajectory import Step, normalise
from rubrics.models import AlignmentMode, Rubric, RubricVersion
from teams.models import Team

from .status import Status


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
    # (judge_engine.trajectory): messages, tool calls, tool results, unknown parts kept whole.
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
        """The run's result as every surface shows it (judge_engine.rules.run_result): empty
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
