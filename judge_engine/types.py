"""Plain pydantic models in and out of the judge engine. Nothing here knows about Django."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    field_validator,
    model_validator,
)

from .rules import DEFAULT_USER_SHARE

Perspective = Literal["user", "system"]
AlignmentMode = Literal["user", "system", "both"]
CriteriaSource = Literal["configured", "request_context", "metadata", "input", "none"]

# Keys of `JudgeConfig.extra` (at any depth) that may hold credentials; they never reach a
# hash, a log line or a stored judge identity.
_SECRET_KEY = re.compile(r"key|token|secret|password|auth|header|cookie|credential", re.I)


class Criterion(BaseModel):
    """One rubric criterion. `required` defaults to true; only an explicit false makes it optional."""

    model_config = ConfigDict(frozen=True)

    id: str | None = None
    description: str
    required: bool = True

    @field_validator("id")
    @classmethod
    def _id_is_one_line(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or "\n" in value or len(value) > 64):
            raise ValueError(
                "criterion id must be a non-blank single line of at most 64 characters"
            )
        return value


def _redact(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _redact(v) for k, v in value.items() if not _SECRET_KEY.search(str(k))}
    if isinstance(value, list | tuple):
        return [_redact(v) for v in value]
    return value


class JudgeConfig(BaseModel):
    """Which judge to ask and how. `extra` is passed to litellm as keyword arguments."""

    model_config = ConfigDict(frozen=True)

    model: str
    api_base: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    temperature: float | None = 0.0
    timeout: float = 60.0
    max_tokens: int | None = None
    retries: int = Field(default=2, ge=0, le=10)
    repair_retries: int = Field(default=1, ge=0, le=5)
    structured_output: Literal["auto", "json_schema", "json_object"] = "auto"
    # "auto": straight HTTP to an OpenAI-compatible api_base (direct.py, on any event loop),
    # litellm otherwise; "litellm" always goes through litellm. Not part of the judge's
    # identity: both send the same request.
    transport: Literal["auto", "litellm"] = "auto"
    extra: dict[str, Any] = Field(default_factory=dict)
    # A team's judge connection (its id): part of the identity, so verdicts judged through one
    # connection are never reused for another.
    connection: str | None = None
    # Refuse, right before every request, an api_base that resolves to a loopback, private,
    # link-local or metadata address (netguard.py): set for a team's api_base, not for the
    # deployment's own judge.
    address_guard: bool = False
    # Why this judge must not be called at all (e.g. its connection was deleted): every call
    # fails at once with this as a permanent error.
    unusable: str | None = None
    # The team's price for this model (USD per million input tokens, per million output
    # tokens), which overrides litellm's table (pricing.tokens_cost). Not part of the identity:
    # a price does not change what the judge answers.
    price: tuple[float, float] | None = None

    @field_validator("timeout", mode="before")
    @classmethod
    def _default_timeout(cls, value: Any) -> Any:
        # Stored judge settings say "no preference" with None; that means the default here.
        return 60.0 if value is None else value

    @field_validator("timeout")
    @classmethod
    def _positive_timeout(cls, value: float) -> float:
        if not value > 0:
            raise ValueError("timeout must be a positive number of seconds")
        return value

    def identity(self) -> dict[str, Any]:
        """What makes two judges give the same verdicts: model and sampling parameters.

        Stable (safe to hash) and free of secrets: no api_key, and `extra` loses every key that
        looks like a credential or a header. api_base and the team's connection stay in: the
        same model name behind two different servers or accounts is not known to be the same
        model. Retry and timeout settings are left out because they do not change what the
        judge answers.
        """
        identity: dict[str, Any] = {
            "model": self.model,
            "api_base": self.api_base,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "structured_output": self.structured_output,
            "extra": _redact(self.extra),
        }
        if self.connection is not None:  # absent otherwise: earlier verdict keys stay valid
            identity["connection"] = self.connection
        return identity


class JudgeCall(BaseModel):
    """One HTTP request to the judge: what it was shown, what it answered, what it cost."""

    model: str
    messages: list[dict[str, Any]]
    raw_response: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    latency_ms: float = 0.0
    error: str | None = None


class Usage(BaseModel):
    """Totals over a list of judge calls. `cost` is None when any answered call's cost is unknown."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0
    calls: int = 0
    latency_ms: float = 0.0

    @classmethod
    def from_calls(cls, calls: list[JudgeCall]) -> Usage:
        # A call that got no answer (timeout, 429) was not billed, so it cannot make cost unknown.
        answered = [c for c in calls if c.raw_response or c.completion_tokens]
        costs = [c.cost for c in answered]
        return cls(
            prompt_tokens=sum(c.prompt_tokens or 0 for c in calls),
            completion_tokens=sum(c.completion_tokens or 0 for c in calls),
            cost=None if any(c is None for c in costs) else float(sum(c for c in costs if c)),
            calls=len(calls),
            latency_ms=sum(c.latency_ms for c in calls),
        )


# --- Rubric ---------------------------------------------------------------------------------


class PriorVerdict(BaseModel):
    """A verdict stored earlier under the same verdict key, offered for reuse."""

    satisfied: bool
    reasoning: str
    source_id: str
    evidence: list[int] = Field(default_factory=list)


class Verdict(BaseModel):
    """The verdict on one criterion. `description` and `required` come from configuration."""

    criterion_id: str
    description: str
    required: bool
    satisfied: bool
    reasoning: str
    key: str
    reused: bool = False
    reused_from: str | None = None
    # Step indices of the run's trajectory the judge cited (conversation / trajectory views),
    # and what was dropped from its citations.
    evidence: list[int] = Field(default_factory=list)
    evidence_note: str | None = None


class RubricResult(BaseModel):
    passed: bool
    score: float
    reason: str
    verdicts: list[Verdict]
    overall: str | None = None
    criteria_source: CriteriaSource
    calls: list[JudgeCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    # What of the run the judge saw, and what the rendering cut to fit the token budget.
    view: str = "final"
    rendering: dict[str, Any] = Field(default_factory=dict)
    # The agent produced nothing to judge: every criterion failed without a judge call.
    no_output: bool = False


# --- Prompt alignment ------------------------------------------------------------------------


class Weights(BaseModel):
    """Weights of the four alignment dimensions: each in [0, 1], summing to 1 (within 1e-6).

    The defaults are the user perspective's; `SYSTEM_WEIGHTS` holds the system perspective's.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    intent: float = Field(default=0.40, ge=0, le=1)
    requirements: float = Field(default=0.30, ge=0, le=1)
    completeness: float = Field(default=0.20, ge=0, le=1)
    appropriateness: float = Field(default=0.10, ge=0, le=1)

    @model_validator(mode="after")
    def _sums_to_one(self) -> Weights:
        total = self.intent + self.requirements + self.completeness + self.appropriateness
        if not math.isclose(total, 1.0, abs_tol=1e-6):
            raise ValueError(f"the four weights must sum to 1, not {total:g}")
        return self


USER_WEIGHTS = Weights()
SYSTEM_WEIGHTS = Weights(intent=0.35, requirements=0.35, completeness=0.15, appropriateness=0.15)


class AlignmentWeights(BaseModel):
    """Per-perspective weights and the user perspective's share of a `both` score."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    user: Weights = USER_WEIGHTS
    system: Weights = SYSTEM_WEIGHTS
    user_share: float = Field(default=DEFAULT_USER_SHARE, ge=0, le=1)


# A dimension score as the judge must give it: a JSON number in [0, 1]. Strict, so "0.9" or
# true is rejected rather than coerced; out-of-range values are rejected, never clamped.
Score = Annotated[float, Field(ge=0, le=1, strict=True, allow_inf_nan=False)]


class IntentAnalysis(BaseModel):
    score: Score
    primary_intent: StrictStr
    is_addressed: StrictBool
    reasoning: StrictStr

    @property
    def addressed(self) -> bool:
        return self.is_addressed


class RequirementItem(BaseModel):
    requirement: StrictStr
    fulfilled: StrictBool
    reasoning: StrictStr


class RequirementsAnalysis(BaseModel):
    score: Score
    requirements: list[RequirementItem]

    @property
    def items(self) -> list[RequirementItem]:
        return self.requirements


class CompletenessAnalysis(BaseModel):
    score: Score
    missing_elements: list[StrictStr]
    reasoning: StrictStr


class AppropriatenessAnalysis(BaseModel):
    score: Score
    format_aligned: StrictBool
    tone_aligned: StrictBool
    reasoning: StrictStr


class PerspectiveAnswer(BaseModel):
    """What the judge must return for one perspective (unknown extra keys are ignored)."""

    intent: IntentAnalysis
    requirements: RequirementsAnalysis
    completeness: CompletenessAnalysis
    appropriateness: AppropriatenessAnalysis
    overall_assessment: StrictStr


class PerspectiveResult(BaseModel):
    """One perspective's four dimensions, the weights applied and the (unrounded) weighted score."""

    perspective: Perspective
    intent: IntentAnalysis
    requirements: RequirementsAnalysis
    completeness: CompletenessAnalysis
    appropriateness: AppropriatenessAnalysis
    overall_assessment: str
    weights: Weights
    weighted_score: float


class AlignmentResult(BaseModel):
    """`score` is weighted × scale, summed exactly and stored to 12 decimals (a perfect answer
    is exactly 1.0); `display_score` is it rounded half up to 2 decimals.

    `weighted_score` is the 0–1 score the band comes from. `system_score` is None when the
    system perspective was not judged (user mode, or `both` without a system prompt) and
    `user_score` when the user one was not (system mode, or `both` without a user message);
    `system_applicable` / `user_applicable` say so. `no_output`: the agent produced nothing
    to judge, every dimension is 0 and no judge was asked.
    """

    score: float
    display_score: float
    weighted_score: float
    scale: float
    user_score: float | None
    system_score: float | None
    system_applicable: bool
    mode: AlignmentMode
    user_applicable: bool = True
    no_output: bool = False
    perspectives: dict[str, PerspectiveResult]
    band: str
    reason: str
    calls: list[JudgeCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    view: str = "final"
    rendering: dict[str, Any] = Field(default_factory=dict)
