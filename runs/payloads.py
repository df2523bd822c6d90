"""Validated shapes of what the API and services accept for a run (pydantic, extra forbidden).

The same models are the django-ninja input schemas, so a validation error names the field in
the API's 422 and in service errors alike.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Role = Literal["system", "user", "assistant", "tool", "developer"]
AlignmentChoice = Literal["off", "user", "system", "both"]


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Role
    content: str | list[dict[str, Any]] | None = ""


class RunInput(BaseModel):
    model_config = ConfigDict(extra="allow")
    messages: list[Message] = Field(default_factory=list, max_length=10_000)


class CriterionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    description: str = Field(min_length=1, max_length=5000)
    required: bool = True


class RunPayload(BaseModel):
    """One agent run as pushed by an agent pipeline."""

    model_config = ConfigDict(extra="forbid")
    external_id: str | None = Field(default=None, min_length=1, max_length=200)
    agent: str = Field(default="", max_length=200)
    rubric: str | None = Field(default=None, max_length=200, description="Rubric id or slug")
    alignment: AlignmentChoice | None = None
    input: RunInput = Field(default_factory=RunInput)
    output: str | list[Message | str] = ""
    request_context: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("rubric")
    @classmethod
    def _blank_rubric_is_none(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    def content(self) -> dict[str, Any]:
        """The run's content without routing fields: what idempotency compares."""
        return self.model_dump(
            mode="json", include={"agent", "input", "output", "request_context", "metadata"}
        )
