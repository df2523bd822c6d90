"""The Vercel AI SDK (``ai`` 5.x, ``experimental_telemetry``): its ``ai.*`` spans as GenAI ones.

The SDK names every span's kind in ``ai.operationId`` and never writes
``gen_ai.operation.name``. Read from real spans of ``ai`` 5.0.277 (tests/otel/node_aisdk):

- ``ai.generateText`` / ``ai.streamText``: the call, the agent span. ``ai.telemetry.functionId``
  names it; ``ai.prompt`` is JSON ``{"system", "prompt" | "messages"}`` (the call's own
  arguments); ``ai.response.text`` the final answer. Its usage is not mapped: generateText's
  ``ai.usage.*`` there is the last step's, not the run's, so the run's usage is the sum over the
  model calls (runs.otel.convert).
- ``ai.generateText.doGenerate`` / ``ai.streamText.doStream``: one model call (chat).
  ``ai.prompt.messages`` is the provider prompt as JSON (system included; parts ``text``,
  ``tool-call`` with ``input``, ``tool-result`` with ``output: {"type", "value"}``);
  ``ai.response.text`` and ``ai.response.toolCalls`` (JSON; ``input`` is JSON text after
  doGenerate, an object after doStream) its answer; ``gen_ai.usage.*`` already standard.
- ``ai.toolCall``: one tool execution, under the call (generateText) or under the model call
  that asked for it (streamText): ``ai.toolCall.name`` / ``.id`` / ``.args`` / ``.result``
  (JSON text); a tool that threw has status ERROR with its message and no result.

``ai.telemetry.metadata.evalsite.rubric`` (``metadata: {"evalsite.rubric": slug}``) chooses the
rubric of one call, like ``evalsite.rubric`` on the span.
"""

from __future__ import annotations

import json
from typing import Any

from ..messages import parse_json

OPERATION_ID = "ai.operationId"
CALLS = {"ai.generateText", "ai.streamText"}
MODEL_CALLS = {"ai.generateText.doGenerate", "ai.streamText.doStream"}
TOOL_CALL = "ai.toolCall"
RUBRIC_METADATA = "ai.telemetry.metadata.evalsite.rubric"
# Older releases' names of the token counts, for model-call spans without gen_ai.usage.*.
USAGE_NAMES = {
    "gen_ai.usage.input_tokens": ("ai.usage.inputTokens", "ai.usage.promptTokens"),
    "gen_ai.usage.output_tokens": ("ai.usage.outputTokens", "ai.usage.completionTokens"),
}

Part = dict[str, Any]


def recognises(span: Any) -> bool:
    value = span.attributes.get(OPERATION_ID)
    return isinstance(value, str) and value.startswith("ai.")


def genai_attributes(span: Any) -> dict[str, Any]:
    attrs = span.attributes
    operation = attrs.get(OPERATION_ID)
    if operation in CALLS:
        return _call(attrs, operation)
    if operation in MODEL_CALLS:
        return _model_call(attrs)
    if operation == TOOL_CALL:
        return _tool_call(attrs)
    return {}


def _call(attrs: dict[str, Any], operation: str) -> dict[str, Any]:
    name = attrs.get("ai.telemetry.functionId")
    prompt = parse_json(attrs.get("ai.prompt"))
    prompt = prompt if isinstance(prompt, dict) else {}
    system = prompt.get("system")
    return {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": name if isinstance(name, str) and name.strip() else operation,
        "gen_ai.system_instructions": _dumps([_text(system)]) if _is_text(system) else None,
        "gen_ai.input.messages": _dumps_nonempty(_prompt_messages(prompt)),
        "gen_ai.output.messages": _dumps_nonempty(_answer(attrs.get("ai.response.text"), [])),
        "evalsite.rubric": attrs.get(RUBRIC_METADATA),
    }


def _prompt_messages(prompt: dict[str, Any]) -> list[dict[str, Any]]:
    """The call's ``prompt`` (text or messages) or ``messages``, as GenAI messages."""
    given = prompt.get("messages")
    if given is None:
        given = prompt.get("prompt")
    if _is_text(given):
        return [{"role": "user", "parts": [_text(given)]}]
    return _messages(given)


def _model_call(attrs: dict[str, Any]) -> dict[str, Any]:
    calls = parse_json(attrs.get("ai.response.toolCalls"))
    out = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": _dumps_nonempty(
            _messages(parse_json(attrs.get("ai.prompt.messages")))
        ),
        "gen_ai.output.messages": _dumps_nonempty(
            _answer(attrs.get("ai.response.text"), calls if isinstance(calls, list) else [])
        ),
    }
    for key, names in USAGE_NAMES.items():
        out[key] = next((attrs[n] for n in names if _is_count(attrs.get(n))), None)
    return out


def _tool_call(attrs: dict[str, Any]) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": attrs.get("ai.toolCall.name"),
        "gen_ai.tool.call.id": attrs.get("ai.toolCall.id"),
        "gen_ai.tool.call.arguments": attrs.get("ai.toolCall.args"),
        "gen_ai.tool.call.result": _json_value(attrs.get("ai.toolCall.result")),
    }


def _json_value(text: Any) -> Any:
    """``ai.toolCall.result`` is the result as JSON text; its value reads the same as the
    ``tool-result`` the next model call's prompt repeats (a string result unquoted)."""
    parsed = parse_json(text)
    return text if parsed is None else parsed


# --- AI SDK messages into GenAI messages ---------------------------------------------------


def _messages(value: Any) -> list[dict[str, Any]]:
    """AI SDK messages (``{"role", "content": text | parts}``) as GenAI ones."""
    if not isinstance(value, list):
        return []
    out = []
    for message in value:
        if isinstance(message, dict) and isinstance(message.get("role"), str):
            parts = _parts(message.get("content"))
            if parts:
                out.append({"role": message["role"], "parts": parts})
    return out


def _parts(content: Any) -> list[Part]:
    if _is_text(content):
        return [_text(content)]
    if not isinstance(content, list):
        return []
    return [_part(p) for p in content if isinstance(p, dict)]


def _part(part: Part) -> Part:
    kind = part.get("type")
    if kind == "text":
        return _text(part.get("text"))
    if kind == "tool-call":
        return _tool_call_part(part)
    if kind == "tool-result":
        return {
            "type": "tool_call_response",
            "id": part.get("toolCallId"),
            "response": _result_value(part.get("output", part.get("result"))),
        }
    if kind == "reasoning":
        return {"type": "reasoning", "content": part.get("text")}
    return part  # files, images: kept whole


def _tool_call_part(part: Part) -> Part:
    arguments = part.get("input", part.get("args"))
    parsed = parse_json(arguments) if isinstance(arguments, str) else arguments
    return {
        "type": "tool_call",
        "id": part.get("toolCallId"),
        "name": part.get("toolName"),
        "arguments": arguments if parsed is None else parsed,
    }


def _result_value(output: Any) -> Any:
    """A tool result's value: ``output`` is ``{"type": "json" | "text" | "error-text" | ...,
    "value"}`` in the AI SDK's provider prompt."""
    if isinstance(output, dict) and "type" in output and "value" in output:
        return output["value"]
    return output


def _answer(text: Any, calls: list[Any]) -> list[dict[str, Any]]:
    """A model's answer: its text (when any) and its tool calls, as one assistant message."""
    parts = [_text(text)] if _is_text(text) and text.strip() else []
    parts += [_tool_call_part(c) for c in calls if isinstance(c, dict)]
    return [{"role": "assistant", "parts": parts}] if parts else []


def _text(value: Any) -> Part:
    return {"type": "text", "content": value}


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _dumps_nonempty(messages: list[dict[str, Any]]) -> str | None:
    return _dumps(messages) if messages else None


CONVENTION = ("vercel_ai", recognises, genai_attributes)
