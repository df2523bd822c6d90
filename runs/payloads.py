"""Validated shapes of what the API and services accept for a run (pydantic, extra forbidden).

The same models are the django-ninja input schemas, so a validation error names the field in
the API's 422 and in service errors alike.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    Tag,
    field_validator,
    model_serializer,
    model_validator,
)

Role = Literal["system", "user", "assistant", "tool", "developer", "function"]
AlignmentChoice = Literal["off", "user", "system", "both"]


class Message(BaseModel):
    """A message or item of any accepted format (judge_engine.trajectory): a chat message with
    a ``role`` (OpenAI Chat Completions, Anthropic, AI SDK / Mastra), or an OpenAI Responses
    API item with a ``type`` and no role (``function_call``, ``function_call_output``, ...).
    Fields beyond these (``tool_calls``, ``tool_call_id``, ``parts``, ...) are kept as sent."""

    model_config = ConfigDict(extra="allow")
    role: Role | None = None
    content: str | list[Any] | dict[str, Any] | None = ""

    @model_validator(mode="after")
    def _role_or_type(self) -> Message:
        if self.role is None and not isinstance((self.model_extra or {}).get("type"), str):
            raise ValueError("a message needs a role (or, for a Responses API item, a type)")
        return self

    @model_serializer(mode="wrap")
    def _as_sent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if self.role is None:  # a Responses API item: no role or content it did not send
            data.pop("role", None)
            if "content" not in self.model_fields_set:
                data.pop("content", None)
        return data


class RunInput(BaseModel):
    model_config = ConfigDict(extra="allow")
    messages: list[Message] = Field(default_factory=list, max_length=10_000)


class CriterionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Longer than CRITERION_MAX_CHARS is refused by the service with the one message every
    # surface gives; this bound only caps the work of parsing.
    description: str = Field(min_length=1, max_length=100_000)
    required: bool = True


def _text_or(kind: str):
    """The tag of a union member by the value's type: an error's location then reads
    ``output.messages[0].message.role`` instead of naming pydantic's validators."""

    def pick(value: Any) -> str:
        return "text" if isinstance(value, str) else kind

    return Discriminator(pick)


OutputItem = Annotated[
    Annotated[Message, Tag("message")] | Annotated[str, Tag("text")], _text_or("message")
]
Output = Annotated[
    Annotated[str, Tag("text")] | Annotated[list[OutputItem], Tag("messages")],
    _text_or("messages"),
]


class RunPayload(BaseModel):
    """One agent run as pushed by an agent pipeline."""

    model_config = ConfigDict(extra="forbid")
    external_id: str | None = Field(default=None, min_length=1, max_length=200)
    agent: str = Field(default="", max_length=200)
    rubric: str | None = Field(default=None, max_length=200, description="Rubric id or slug")
    alignment: AlignmentChoice | None = None
    input: RunInput = Field(default_factory=RunInput)
    output: Output = ""
    request_context: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    expected_output: str = Field(
        default="",
        max_length=200_000,
        description="A reference answer the judge is shown in every judge view",
    )

    @field_validator("rubric")
    @classmethod
    def _blank_rubric_is_none(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    def content(self) -> dict[str, Any]:
        """The run's content without routing fields: what idempotency compares."""
        content = self.model_dump(
            mode="json",
            include={"agent", "input", "output", "request_context", "metadata", "expected_output"},
        )
        if not content["expected_output"]:
            del content["expected_output"]  # runs sent before it existed keep their hash
        return content
