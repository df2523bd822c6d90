"""Helpers for conventions that flatten lists into indexed attribute keys
(``llm.input_messages.0.message.role``, ``gen_ai.prompt.1.content``) and for writing the
GenAI messages JSON (``[{"role", "parts": [...]}]``) the converter reads."""

from __future__ import annotations

import json
import re
from typing import Any

_INDEX = re.compile(r"(\d+)\.(.+)")


def indexed(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.N.rest = value`` keys as one dict ``{rest: value}`` per N, in index order."""
    found: dict[int, dict[str, Any]] = {}
    start = prefix + "."
    for key, value in attributes.items():
        if key.startswith(start):
            match = _INDEX.fullmatch(key[len(start) :])
            if match:
                found.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return [found[i] for i in sorted(found)]


def text_part(text: Any) -> dict[str, Any]:
    return {"type": "text", "content": text if isinstance(text, str) else dumps(text)}


def call_part(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": loads(arguments)}


def response_part(call_id: Any, response: Any) -> dict[str, Any]:
    return {"type": "tool_call_response", "id": call_id, "response": response}


def loads(value: Any) -> Any:
    """JSON text parsed, anything else (or text that is not JSON) as it is."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def messages_json(messages: list[dict[str, Any]]) -> str | None:
    """The ``gen_ai.*.messages`` value of messages that have parts (None when none has)."""
    kept = [m for m in messages if m.get("parts")]
    return dumps(kept) if kept else None


def one_message(role: str, value: Any) -> str | None:
    """A single text message, for spans that record one input or output value."""
    if value is None or value == "":
        return None
    return messages_json([{"role": role, "parts": [text_part(value)]}])
