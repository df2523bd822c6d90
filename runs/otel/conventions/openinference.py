"""OpenInference (Arize Phoenix) spans in GenAI terms.

``openinference.span.kind`` says what a span is: AGENT -> ``invoke_agent`` (its name from
``agent.name``, else ``graph.node.name``, else the span's name), LLM -> ``chat``, TOOL ->
``execute_tool``. A CHAIN is glue (LangChain runnables, LangGraph nodes): it stays an unnamed
operation, so a trace whose root is a CHAIN with no AGENT below becomes a run through the
converter's root-span rule; only such a root CHAIN gets its ``input.value`` / ``output.value``
as the run's user and assistant messages (a nested chain's values would repeat its children's).

LLM spans: ``llm.input_messages.N.message.*`` / ``llm.output_messages.N.message.*``
(``role``, ``content`` or ``contents.M.message_content.text``, ``tool_calls.M.tool_call.id`` /
``.function.name`` / ``.function.arguments``, ``tool_call_id`` on tool messages), token counts
``llm.token_count.prompt`` / ``.completion``. TOOL spans: ``tool.name``; the call id from
``tool.id`` (else ``tool_call.id``); arguments from ``input.value`` (else ``tool.parameters``);
the result from ``output.value``. ``session.id`` becomes ``gen_ai.conversation.id``.
"""

from __future__ import annotations

from typing import Any

from ._flat import (
    call_part,
    indexed,
    loads,
    messages_json,
    one_message,
    response_part,
    text_part,
)

KIND = "openinference.span.kind"
OPERATIONS = {"AGENT": "invoke_agent", "LLM": "chat", "TOOL": "execute_tool"}
# LangChain message types as OpenInference records them in JSON values.
ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def recognises(span: Any) -> bool:
    return isinstance(span.attributes.get(KIND), str)


def genai_attributes(span: Any) -> dict[str, Any]:
    attrs = span.attributes
    kind = attrs[KIND].upper()
    out: dict[str, Any] = {"gen_ai.conversation.id": attrs.get("session.id")}
    if kind in OPERATIONS:
        out["gen_ai.operation.name"] = OPERATIONS[kind]
    if kind == "LLM":
        out |= _llm(attrs)
    elif kind == "TOOL":
        out |= _tool(span)
    elif kind == "AGENT":
        out |= _agent(span)
    elif kind == "CHAIN" and not getattr(span, "parent_span_id", ""):
        out |= _values(attrs)
    return out


def _llm(attrs: dict[str, Any]) -> dict[str, Any]:
    return {
        "gen_ai.input.messages": _messages(attrs, "llm.input_messages"),
        "gen_ai.output.messages": _messages(attrs, "llm.output_messages"),
        "gen_ai.request.model": attrs.get("llm.model_name"),
        "gen_ai.usage.input_tokens": _count(attrs.get("llm.token_count.prompt")),
        "gen_ai.usage.output_tokens": _count(attrs.get("llm.token_count.completion")),
    }


def _tool(span: Any) -> dict[str, Any]:
    attrs = span.attributes
    arguments = attrs.get("input.value")
    return {
        "gen_ai.tool.name": attrs.get("tool.name") or span.name,
        "gen_ai.tool.call.id": attrs.get("tool.id") or attrs.get("tool_call.id"),
        "gen_ai.tool.call.arguments": arguments
        if arguments is not None
        else attrs.get("tool.parameters"),
        "gen_ai.tool.call.result": attrs.get("output.value"),
    }


def _agent(span: Any) -> dict[str, Any]:
    attrs = span.attributes
    name = attrs.get("agent.name") or attrs.get("graph.node.name") or span.name
    return {"gen_ai.agent.name": name, **_values(attrs)}


def _values(attrs: dict[str, Any]) -> dict[str, Any]:
    """``input.value`` / ``output.value`` of an agent or a root chain as messages."""
    return {
        "gen_ai.input.messages": _value_messages(attrs, "input", "user"),
        "gen_ai.output.messages": _value_messages(attrs, "output", "assistant"),
    }


def _value_messages(attrs: dict[str, Any], which: str, role: str) -> str | None:
    value = attrs.get(f"{which}.value")
    if attrs.get(f"{which}.mime_type") == "application/json":
        parsed = loads(value)
        listed = _listed_messages(parsed)
        if listed:
            return messages_json(listed if role == "user" else listed[-1:])
        value = parsed
    return one_message(role, value)


def _listed_messages(value: Any) -> list[dict[str, Any]]:
    """Chat messages a JSON value holds: a list of ``{role|type, content}`` objects, or an
    object with such a list under ``messages`` (LangGraph state)."""
    if isinstance(value, dict):
        value = value.get("messages")
    if not isinstance(value, list):
        return []
    out = []
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("content"), str):
            continue
        role = item.get("role") or ROLES.get(str(item.get("type")), "user")
        out.append({"role": role, "parts": [text_part(item["content"])]})
    return out


def _messages(attrs: dict[str, Any], prefix: str) -> str | None:
    return messages_json([_message(m) for m in indexed(attrs, prefix)])


def _message(flat: dict[str, Any]) -> dict[str, Any]:
    role = flat.get("message.role") or "user"
    content = flat.get("message.content")
    if role == "tool":
        return {"role": role, "parts": [response_part(flat.get("message.tool_call_id"), content)]}
    parts = [text_part(content)] if content not in (None, "") else []
    for item in indexed(flat, "message.contents"):
        if item.get("message_content.text"):
            parts.append(text_part(item["message_content.text"]))
    for call in indexed(flat, "message.tool_calls"):
        parts.append(
            call_part(
                call.get("tool_call.id"),
                call.get("tool_call.function.name"),
                call.get("tool_call.function.arguments"),
            )
        )
    if flat.get("message.function_call_name"):  # the older single function call
        parts.append(
            call_part(
                None,
                flat["message.function_call_name"],
                flat.get("message.function_call_arguments_json"),
            )
        )
    return {"role": role, "parts": parts}


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


CONVENTION = ("openinference", recognises, genai_attributes)
