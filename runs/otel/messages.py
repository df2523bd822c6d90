"""GenAI semantic-convention messages into OpenAI Chat Completions messages, the shape
judge_engine.trajectory reads: assistant ``tool_calls``, role ``tool`` with ``tool_call_id``.

Sources: the ``gen_ai.input.messages`` / ``gen_ai.output.messages`` attributes (JSON text of
``[{"role", "parts": [{"type": "text", "content"}, {"type": "tool_call", "id", "name",
"arguments"}, {"type": "tool_call_response", "id", "response"}, ...]}]``),
``gen_ai.system_instructions`` (JSON parts or plain text), and the older per-message span
events (``gen_ai.system.message``, ``gen_ai.user.message``, ``gen_ai.assistant.message``,
``gen_ai.tool.message``, ``gen_ai.choice``). Parts of other types (reasoning, blobs, URIs) are
kept whole in a content list, which the trajectory shows as unknown steps.
"""

from __future__ import annotations

import json
from typing import Any

Message = dict[str, Any]

ROLES = {"system", "user", "assistant", "tool", "developer"}
EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
CHOICE_EVENT = "gen_ai.choice"


def parse_json(value: Any) -> Any:
    """An attribute that holds JSON text, parsed; other values as they are (None when the text
    is not JSON: an attribute we cannot read is ignored, never an error)."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return None


def _dumps(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _content(value: Any) -> str | list[dict[str, Any]]:
    """Message content the run payload accepts: text, or a list of parts (objects)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(p, dict) for p in value):
        return value
    return "" if value is None else _dumps(value)


def tool_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    return {
        "id": "" if call_id is None else str(call_id),
        "type": "function",
        "function": {"name": "" if name is None else str(name), "arguments": _dumps(arguments)},
    }


def tool_result(call_id: Any, name: Any, content: Any, *, is_error: bool = False) -> Message:
    """A tool's answer. An error travels as an AI SDK ``tool-result`` part (the trajectory's
    error flag); a plain result as a Chat Completions ``tool`` message."""
    cid = "" if call_id is None else str(call_id)
    text = "" if content is None else _dumps(content)
    if not is_error:
        return {"role": "tool", "tool_call_id": cid, "content": text}
    part = {
        "type": "tool-result",
        "toolCallId": cid,
        "toolName": "" if name is None else str(name),
        "output": {"type": "error-text", "value": text or "error"},
    }
    return {"role": "tool", "tool_call_id": cid, "content": [part]}


def genai_messages(value: Any, *, output: bool) -> list[Message]:
    """Chat Completions messages of a ``gen_ai.*.messages`` attribute (JSON text or a list)."""
    items = parse_json(value)
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list):
        return []
    out: list[Message] = []
    for item in items:
        if isinstance(item, dict):
            out.extend(_genai_message(item, output=output))
    return out


def _role(value: Any, *, output: bool) -> str:
    if value in ROLES:
        return str(value)
    return "assistant" if output or value == "model" else "user"


def _genai_message(item: dict[str, Any], *, output: bool) -> list[Message]:
    role = _role(item.get("role"), output=output)
    parts = item.get("parts")
    if not isinstance(parts, list):
        content = item.get("content")  # a Chat Completions message passed as it is
        return [{**item, "role": role, "content": _content(content)}] if content is not None else []
    texts, others, calls, results = _sorted_parts(parts)
    if not (texts or others or calls):
        return results
    message: Message = {"role": "assistant" if calls and role == "user" else role}
    if others:
        message["content"] = [*({"type": "text", "text": t} for t in texts), *others]
    else:
        message["content"] = "\n".join(texts)
    if calls:
        message["tool_calls"] = calls
    if item.get("name"):
        message["name"] = str(item["name"])[:200]
    return [message, *results]


def _sorted_parts(
    parts: list[Any],
) -> tuple[list[str], list[dict[str, Any]], list[dict[str, Any]], list[Message]]:
    """A GenAI message's parts by kind: texts, other content parts, tool calls and tool
    results (each in order; what is not an object is skipped)."""
    texts: list[str] = []
    others: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    results: list[Message] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            texts.append(str(part.get("content") or ""))
        elif kind == "tool_call":
            calls.append(tool_call(part.get("id"), part.get("name"), part.get("arguments")))
        elif kind == "tool_call_response":
            results.append(tool_result(part.get("id"), None, part.get("response")))
        else:
            others.append(part)
    return texts, others, calls, results


def system_instructions(value: Any) -> list[Message]:
    """``gen_ai.system_instructions``: JSON parts (``[{"type": "text", "content"}]``) or text."""
    parsed = parse_json(value)
    if isinstance(parsed, list):
        text = "\n".join(
            str(p.get("content") or "")
            for p in parsed
            if isinstance(p, dict) and p.get("type") == "text"
        )
    elif isinstance(value, str):
        text = value
    else:
        return []
    return [{"role": "system", "content": text}] if text.strip() else []


def event_messages(events: list[dict[str, Any]]) -> tuple[list[Message], list[Message]]:
    """(input, output) messages of a span's per-message events, in event order."""
    inputs: list[Message] = []
    outputs: list[Message] = []
    for event in events:
        name = event.get("name")
        attrs = event.get("attributes") or {}
        body = parse_json(attrs.get("gen_ai.event.content"))
        fields = body if isinstance(body, dict) else attrs
        if name in EVENT_ROLES:
            inputs.extend(_event_message(EVENT_ROLES[name], fields))
        elif name == CHOICE_EVENT:
            message = parse_json(fields.get("message"))
            outputs.extend(
                _event_message("assistant", message if isinstance(message, dict) else fields)
            )
    return inputs, outputs


def _event_message(role: str, fields: dict[str, Any]) -> list[Message]:
    content = fields.get("content")
    if role == "tool":
        return [tool_result(fields.get("id"), None, content)]
    if isinstance(content, str) and content.lstrip().startswith("["):
        parsed = parse_json(content)  # content parts as JSON text
        content = parsed if isinstance(parsed, list) else content
    message: Message = {"role": _role(fields.get("role") or role, output=role == "assistant")}
    message["content"] = _content(content)
    calls = parse_json(fields.get("tool_calls"))
    if isinstance(calls, list):
        message["tool_calls"] = [
            tool_call(c.get("id"), (c.get("function") or {}).get("name"), _arguments(c))
            for c in calls
            if isinstance(c, dict)
        ]
    return [message]


def _arguments(call: dict[str, Any]) -> Any:
    fn = call.get("function") or {}
    return fn.get("arguments") if isinstance(fn, dict) else None
