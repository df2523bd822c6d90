"""Mastra's own tracing (``@mastra/observability`` with ``@mastra/otel-exporter``).

The exporter already writes most GenAI keys: ``invoke_agent`` spans (Mastra's AGENT_RUN) with
``gen_ai.agent.name`` and ``gen_ai.system_instructions`` (plain text); ``execute_tool`` spans
(TOOL_CALL) with the tool's name, call id, arguments and result; ``chat`` spans
(MODEL_INFERENCE) with their output messages and token usage. What it keeps under its own
names is the agent's conversation: every span carries ``mastra.span.type``, and a span that is
not a model call or a tool keeps its input and output as ``mastra.<span type>.input`` /
``.output``. For an agent run:

- ``mastra.agent_run.input``: the text the agent was called with, or (a sub-agent, or an agent
  called with messages) JSON messages, ``[{"role": "user", "content": "..."}]``, content being
  text or AI SDK parts (``{"type": "text", "text"}``, ``tool-call``, ``tool-result``);
- ``mastra.agent_run.output``: JSON ``{"text": "...", "files": [...]}``.

Those become the agent span's ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (the chat
spans carry no input messages, so without them a run has no user message). The model-step
spans' ``mastra.model_step.input`` is left alone: Mastra writes earlier tool calls there as
placeholder text (``"[tool: lookupOrder]"``), which would read as messages.

A run's metadata (``tracingOptions: {metadata: {...}}``) arrives as ``mastra.metadata.<key>``;
``mastra.metadata.evalsite.rubric`` names the run's rubric like ``evalsite.rubric`` does.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..messages import parse_json

if TYPE_CHECKING:
    from . import Convention

SPAN_TYPE = "mastra.span.type"
AGENT_RUN = "agent_run"
RUBRIC = "evalsite.rubric"
METADATA_RUBRIC = "mastra.metadata.evalsite.rubric"


def recognises(span: Any) -> bool:
    return isinstance(span.attributes.get(SPAN_TYPE), str)


def genai_attributes(span: Any) -> dict[str, Any]:
    attrs = span.attributes
    out: dict[str, Any] = {RUBRIC: attrs.get(METADATA_RUBRIC)}
    if attrs.get(SPAN_TYPE) == AGENT_RUN:
        out["gen_ai.input.messages"] = _dumps(input_messages(attrs.get("mastra.agent_run.input")))
        out["gen_ai.output.messages"] = _dumps(
            output_messages(attrs.get("mastra.agent_run.output"))
        )
    return out


def _dumps(messages: list[dict[str, Any]]) -> str | None:
    return json.dumps(messages, ensure_ascii=False) if messages else None


def input_messages(value: Any) -> list[dict[str, Any]]:
    """GenAI messages of an agent run's input: text (a user message) or JSON messages."""
    if not isinstance(value, str) or not value.strip():
        return []
    parsed = parse_json(value)
    if isinstance(parsed, dict) and isinstance(parsed.get("messages"), list):
        parsed = parsed["messages"]
    if isinstance(parsed, dict) and "role" in parsed:
        parsed = [parsed]
    if isinstance(parsed, list) and parsed and all(_is_message(m) for m in parsed):
        return [m for m in (_message(item) for item in parsed) if m["parts"]]
    return [_text("user", value)]  # the text itself, even when it happens to parse as JSON


def output_messages(value: Any) -> list[dict[str, Any]]:
    """GenAI messages of an agent run's output, ``{"text": ...}`` (or plain text)."""
    parsed = parse_json(value)
    if isinstance(parsed, dict):
        text = parsed.get("text")
        return [_text("assistant", text)] if isinstance(text, str) and text.strip() else []
    if isinstance(value, str) and value.strip():
        return [_text("assistant", value)]
    return []


def _is_message(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("role"), str) and "content" in item


def _text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def _message(item: dict[str, Any]) -> dict[str, Any]:
    content = item["content"]
    if isinstance(content, dict) and isinstance(content.get("parts"), list):
        content = content["parts"]  # Mastra's stored message format: {"format": 2, "parts"}
    if isinstance(content, str):
        parts = [{"type": "text", "content": content}] if content else []
    elif isinstance(content, list):
        parts = [p for p in (_part(part) for part in content) if p is not None]
    else:
        parts = []
    return {"role": item["role"], "parts": parts}


def _part(part: Any) -> dict[str, Any] | None:
    """An AI SDK message part as a GenAI part; other kinds (files, reasoning) kept as they are."""
    if isinstance(part, str):
        return {"type": "text", "content": part}
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "content": str(part.get("text") or "")}
    if kind == "tool-call":
        arguments = part.get("input", part.get("args"))
        return {
            "type": "tool_call",
            "id": part.get("toolCallId"),
            "name": part.get("toolName"),
            "arguments": arguments,
        }
    if kind == "tool-result":
        output = part.get("output", part.get("result"))
        if isinstance(output, dict) and "value" in output and "type" in output:
            output = output["value"]  # the AI SDK's {"type": "json" | "text", "value"}
        return {"type": "tool_call_response", "id": part.get("toolCallId"), "response": output}
    return part


CONVENTION: Convention = ("mastra", recognises, genai_attributes)
