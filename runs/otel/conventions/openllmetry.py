"""OpenLLMetry (Traceloop) spans in GenAI terms.

Model-call spans (``llm.request.type`` ``chat`` / ``completion``) of the releases before the
GenAI messages attributes (Python opentelemetry-instrumentation-* up to 0.54) flatten the
conversation: ``gen_ai.prompt.N.role`` / ``.content`` / ``.tool_call_id`` /
``.tool_calls.M.id`` / ``.name`` / ``.arguments``, and likewise ``gen_ai.completion.N.*``;
usage in ``gen_ai.usage.prompt_tokens`` / ``completion_tokens`` (older) or the GenAI names.
Later releases write ``gen_ai.input.messages`` themselves, which is kept as it is.

traceloop-sdk's decorators mark spans with ``traceloop.span.kind``: ``agent`` ->
``invoke_agent`` named ``traceloop.entity.name``; ``tool`` -> ``execute_tool`` (no call id:
the converter pairs it with the open call of that tool); ``task`` is a step, read through its
children; ``workflow`` stays an unnamed operation, so a root workflow with no agent inside
becomes the run (the converter's root-span rule) and only then do its entity values become the
run's user and assistant messages. ``traceloop.entity.input`` is ``{"args": [...], "kwargs":
{...}}`` JSON: a single text argument is the message, anything else its JSON;
``traceloop.entity.output`` is the JSON of the return value.
"""

from __future__ import annotations

from typing import Any

from ._flat import (
    call_part,
    dumps,
    indexed,
    loads,
    messages_json,
    one_message,
    response_part,
    text_part,
)

SPAN_KIND = "traceloop.span.kind"
REQUEST_TYPE = "llm.request.type"
OPERATIONS = {"chat": "chat", "completion": "text_completion"}


def recognises(span: Any) -> bool:
    attrs = span.attributes
    return SPAN_KIND in attrs or REQUEST_TYPE in attrs


def genai_attributes(span: Any) -> dict[str, Any]:
    attrs = span.attributes
    kind = attrs.get(SPAN_KIND)
    if kind == "agent":
        return _agent(attrs)
    if kind == "tool":
        return _tool(span)
    if kind == "workflow" and not getattr(span, "parent_span_id", ""):
        return _entity_messages(attrs)
    if REQUEST_TYPE in attrs:
        return _model_call(attrs)
    return {}


def _agent(attrs: dict[str, Any]) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": attrs.get("traceloop.entity.name"),
        **_entity_messages(attrs),
    }


def _tool(span: Any) -> dict[str, Any]:
    attrs = span.attributes
    arguments = _entity_input(attrs.get("traceloop.entity.input"))
    result = loads(attrs.get("traceloop.entity.output"))
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": attrs.get("traceloop.entity.name") or span.name,
        "gen_ai.tool.call.arguments": None if arguments is None else dumps(arguments),
        "gen_ai.tool.call.result": result
        if result is None or isinstance(result, str)
        else dumps(result),
    }


def _entity_messages(attrs: dict[str, Any]) -> dict[str, Any]:
    given = _entity_input(attrs.get("traceloop.entity.input"))
    if isinstance(given, dict) and len(given) == 1:
        given = next(iter(given.values()))  # one keyword argument: its value is the input
    return {
        "gen_ai.input.messages": one_message("user", given),
        "gen_ai.output.messages": one_message(
            "assistant", loads(attrs.get("traceloop.entity.output"))
        ),
    }


def _entity_input(value: Any) -> Any:
    """The call's arguments: its keyword arguments, else its single positional one, else all."""
    parsed = loads(value)
    if not isinstance(parsed, dict) or not ({"args", "kwargs"} & parsed.keys()):
        return parsed
    args, kwargs = parsed.get("args") or [], parsed.get("kwargs") or {}
    if kwargs and not args:
        return kwargs
    if len(args) == 1 and not kwargs:
        return args[0]
    return parsed


def _model_call(attrs: dict[str, Any]) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": OPERATIONS.get(str(attrs.get(REQUEST_TYPE)), "chat"),
        "gen_ai.input.messages": _messages(attrs, "gen_ai.prompt"),
        "gen_ai.output.messages": _messages(attrs, "gen_ai.completion", default="assistant"),
        "gen_ai.usage.input_tokens": _count(attrs.get("gen_ai.usage.prompt_tokens")),
        "gen_ai.usage.output_tokens": _count(attrs.get("gen_ai.usage.completion_tokens")),
    }


def _messages(attrs: dict[str, Any], prefix: str, default: str = "user") -> str | None:
    return messages_json([_message(m, default) for m in indexed(attrs, prefix)])


def _message(flat: dict[str, Any], default: str) -> dict[str, Any]:
    role = flat.get("role") or default
    content = _text(flat.get("content"))
    if role == "tool":
        return {"role": role, "parts": [response_part(flat.get("tool_call_id"), content)]}
    parts = [text_part(content)] if content not in (None, "") else []
    for call in indexed(flat, "tool_calls"):
        parts.append(call_part(call.get("id"), call.get("name"), call.get("arguments")))
    return {"role": role, "parts": parts}


def _text(content: Any) -> Any:
    """Content that was a list of parts is recorded as their JSON: its text parts, joined."""
    parsed = loads(content) if isinstance(content, str) and content.startswith("[") else None
    if isinstance(parsed, list) and all(isinstance(p, dict) for p in parsed):
        texts = [str(p.get("text") or "") for p in parsed if p.get("type") == "text"]
        return "\n".join(texts) if texts else content
    return content


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


CONVENTION = ("openllmetry", recognises, genai_attributes)
