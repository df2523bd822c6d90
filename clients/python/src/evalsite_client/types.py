"""The API's answers as TypedDicts: plain dicts from the JSON, typed for editors and mypy.
Field meanings are in docs/api.md and the live OpenAPI schema (``/api/openapi.json``).
Ids and timestamps stay strings, as the API sends them."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

Status = Literal["queued", "running", "succeeded", "failed", "cancelled"]
BatchStatus = Literal["queued", "running", "completed", "completed_with_failures", "cancelled"]


# --- Rubrics ------------------------------------------------------------------------------------


class Criterion(TypedDict):
    criterion_id: str
    description: str
    required: bool
    position: int


class Version(TypedDict):
    id: str
    number: int
    judge_view: Literal["final", "conversation", "trajectory"]
    run_token_budget: int
    note: str
    created_at: str
    criteria: list[Criterion]


class ConnectionRef(TypedDict):
    id: str
    name: str


class Rubric(TypedDict):
    id: str
    slug: str
    name: str
    description: str
    judge_connection: ConnectionRef | None
    judge_model: str
    judge_params: dict[str, Any]
    scale: float
    strategy: Literal["batched", "independent"]
    alignment_mode: Literal["off", "user", "system", "both"]
    alignment_weights: dict[str, Any] | None
    archived_at: str | None
    created_at: str
    updated_at: str
    current_version: Version | None


class Connection(TypedDict):
    id: str
    name: str
    model: str
    api_base: str | None
    has_key: bool
    key_hint: str | None
    params: dict[str, Any]
    created_at: str
    updated_at: str


class TeamSettings(TypedDict):
    confirm_cost_above: float
    confirm_tokens_above: int
    judge_prices: dict[str, dict[str, float]]


class WebhookSecret(TypedDict):
    secret: str
    rotated_at: str


class Invite(TypedDict):
    id: str
    email: str
    role: str
    invited_by: str | None
    created_at: str
    expires_at: str
    expired: bool


class NewInvite(Invite):
    link: str  # shown this once
    mailed: bool


# --- Runs and evaluations -----------------------------------------------------------------------


class Verdict(TypedDict):
    criterion_id: str
    description: str
    required: bool
    satisfied: bool
    reasoning: str
    reused: bool
    evidence: list[int]
    evidence_note: str


class Evaluation(TypedDict):
    id: str
    run_id: str
    kind: Literal["rubric", "alignment"]
    status: Status
    passed: bool | None
    score: float | None
    reason: str
    error: str
    rubric_id: str | None
    rubric_version: int | None
    judge_model: str
    judge_view: str
    rendering: dict[str, Any]
    is_current: bool
    created_at: str
    finished_at: str | None
    verdicts: list[Verdict]
    alignment: dict[str, Any] | None


class RunSummary(TypedDict):
    id: str
    external_id: str | None
    agent: str
    rubric: str | None
    alignment: str
    status: Status
    passed: bool | None
    score: float | None
    alignment_score: float | None
    rubric_version: int | None
    created_at: str
    task_preview: str
    output_preview: str


class Run(TypedDict):
    id: str
    external_id: str | None
    agent: str
    rubric: str | None
    alignment: str
    status: Status
    passed: bool | None
    score: float | None
    alignment_score: float | None
    rubric_version: int | None
    created_at: str
    input: dict[str, Any]
    output: str | list[Any]
    request_context: dict[str, Any]
    metadata: dict[str, Any]
    expected_output: str
    steps: list[dict[str, Any]]
    flagged_steps: int
    tools: list[str]
    evaluations: list[Evaluation]


class BulkItem(TypedDict):
    index: int
    id: str
    external_id: str | None
    created: bool
    status: Status
    evaluations: list[Evaluation]


class BulkResult(TypedDict):
    created: int
    existing: int
    items: list[BulkItem]


# --- Re-scoring ---------------------------------------------------------------------------------


class Estimate(TypedDict):
    runs: int
    judge_calls: int
    criterion_judgements: int
    criteria_reused: int
    prompt_tokens: int
    completion_tokens: int
    tokens: int
    cost: float | None
    model: str
    skipped_pending: int


class BatchCounts(TypedDict):
    queued: int
    running: int
    succeeded: int
    failed: int
    cancelled: int


class BatchFailure(TypedDict):
    evaluation_id: str
    run_id: str
    error: str


class Batch(TypedDict):
    id: str
    status: BatchStatus
    rubric_id: str
    rubric_version: int
    judge_model: str
    force: bool
    scope: dict[str, Any]
    total: int
    counts: BatchCounts
    done: int
    progress: float
    estimate: Estimate
    actual: dict[str, Any]
    failures: list[BatchFailure]
    created_at: str
    started_at: str | None
    finished_at: str | None
    cancelled_at: str | None
    webhook_url: str
    webhook_delivered_at: str | None
    webhook_error: str


# --- Reviews ------------------------------------------------------------------------------------


class Result(TypedDict):
    passed: bool | None
    score: float | None
    alignment_score: float | None


class OverrideResult(TypedDict):
    created: bool
    override: dict[str, Any]
    run: Result


class RunReview(TypedDict):
    run_id: str
    rubric_id: str | None
    rubric_version: int | None
    judge: Result
    effective: Result
    reviewed: bool
    golden: bool
    verdicts: list[dict[str, Any]]
    alignment: list[dict[str, Any]]
    history: list[dict[str, Any]]


class Golden(TypedDict):
    run_id: str
    rubric_id: str
    golden: bool


class CriterionAgreement(TypedDict):
    criterion_id: str
    description: str
    labelled: int
    agreement: float | None
    kappa: float | None
    tpr: float | None
    tnr: float | None
    confusion: dict[str, int]
    flagged: bool


class Agreement(TypedDict):
    rubric_id: str
    version: int | None
    kappa_threshold: float
    criteria: list[CriterionAgreement]


class CalibrationProgress(TypedDict):
    total: int
    finished: int
    failed: int
    done: bool


class Calibration(TypedDict):
    id: str
    kind: Literal["golden", "consistency"]
    rubric_id: str
    version: int | None
    baseline_version: int | None
    judge_model: str
    repeats: int
    runs: int
    created_at: str
    progress: CalibrationProgress
    criteria: list[dict[str, Any]]


class OtelService(TypedDict):
    service_name: str
    rubric: dict[str, Any]


class OtelRejection(TypedDict):
    id: str
    created_at: str
    kind: str  # no_content, late, no_run, rubric, too_large, invalid, expired
    trace_id: str
    span_id: str
    spans: int
    reason: str


# --- Pages (generic TypedDicts need Python 3.11: one class per item type) -----------------------


class RubricPage(TypedDict):
    items: list[Rubric]
    next_cursor: str | None


class VersionPage(TypedDict):
    items: list[Version]
    next_cursor: str | None


class TrendPoint(TypedDict):
    day: str  # YYYY-MM-DD, UTC
    runs: int
    pass_rate: float  # 0.0-1.0


class DraftedCriterion(TypedDict):
    description: str
    required: bool  # true only for what the system prompt demands
    rationale: str  # the part of the system prompt it comes from


class TrendSeries(TypedDict):
    version: int
    took_over: str | None  # the UTC day the version was saved, inside the window
    points: list[TrendPoint]


class Trend(TypedDict):
    days: int
    series: list[TrendSeries]  # one per rubric version, oldest first


class RunPage(TypedDict):
    items: list[RunSummary]
    next_cursor: str | None


class BatchPage(TypedDict):
    items: list[Batch]
    next_cursor: str | None
