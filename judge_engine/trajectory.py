"""A run's messages as one ordered list of steps, whatever format the agent framework wrote.

Accepted shapes (mixed freely, input then output): OpenAI Chat Completions (``tool_calls`` on
assistant messages, role ``tool`` with ``tool_call_id``, the older ``function_call``), OpenAI
Responses API items (``message``, ``function_call``, ``function_call_output``), Anthropic
content blocks (``text``, ``tool_use``, ``tool_result``), and the Vercel AI SDK / Mastra message
parts (``tool-call``, ``tool-result``, ``tool-invocation``, ``tool-<name>``; Mastra's
``{"format": 2, "parts": [...]}`` content). Plain strings are user turns in the input and
assistant turns in the output.

A step is a plain JSON object (stored as it is on the run):

* ``{"index", "source", "kind": "message", "role", "text"}``
* ``{"index", "source", "kind": "tool_call", "role": "assistant", "call_id", "tool",
  "arguments"}``: ``arguments`` is the parsed JSON value; arguments that are not JSON stay as
  text and the step is flagged ``arguments_not_json``
* ``{"index", "source", "kind": "tool_result", "call_id", "tool", "content", "is_error"}``:
  ``tool`` is the matched call's tool name; a result matching no call is flagged
  ``unmatched_call``
* ``{"index", "source", "kind": "unknown", "role", "raw"}``: a part or item we do not know,
  kept whole (shown as JSON), never dropped

plus ``flags`` (a list, present only when something is wrong: ``missing_tool_name``,
``missing_call_id``, ``arguments_not_json``, ``unmatched_call``). ``index`` is 0-based and
``source`` is ``input`` or ``output``. Nothing here raises on odd input: what cannot be read
is kept and flagged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

Step = dict[str, Any]

_TEXT_PARTS = {"text", "input_text", "output_text"}
# Parts that carry nothing to show (AI SDK step boundaries, source markers).
_SILENT_PARTS = {"step-start", "step-finish"}
_SYSTEM_ROLES = {"system", "developer"}


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str | Mapping):
        return [value]
    return list(value) if isinstance(value, list | tuple) else [value]


def _text_of(value: Any) -> str:
    """Text of a tool result or a nested content: strings as they are, text parts joined,
    anything else as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(
        isinstance(p, Mapping) and p.get("type") in _TEXT_PARTS for p in value
    ):
        return "\n".join(str(p.get("text") or "") for p in value)
    if isinstance(value, Mapping) and value.get("type") in (
        "text",
        "json",
        "error-text",
        "error-json",
        "content",
    ):  # AI SDK v5 tool output
        inner = value.get("value")
        return _text_of(inner) if isinstance(inner, str | list) else _json(inner)
    return _json(value)


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def _arguments(value: Any) -> tuple[Any, bool]:
    """(arguments, ok): JSON text parsed, objects kept; text that is not JSON stays text."""
    if value is None:
        return {}, True
    if isinstance(value, str):
        if not value.strip():
            return {}, True
        try:
            return json.loads(value), True
        except ValueError:
            return value, False
    return value, True


class _Builder:
    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.calls: dict[str, str] = {}  # call id -> tool name
        self.source = "input"

    def add(self, step: Step) -> None:
        step = {"index": len(self.steps), "source": self.source, **step}
        if not step.get("flags"):
            step.pop("flags", None)
        self.steps.append(step)

    def message(self, role: str, text: str) -> None:
        self.add({"kind": "message", "role": role, "text": text})

    def unknown(self, role: str | None, raw: Any) -> None:
        self.add({"kind": "unknown", "role": role, "raw": raw})

    def call(self, call_id: Any, name: Any, raw_arguments: Any) -> None:
        flags = []
        arguments, ok = _arguments(raw_arguments)
        if not ok:
            flags.append("arguments_not_json")
        if not isinstance(name, str) or not name.strip():
            flags.append("missing_tool_name")
            name = "" if name is None else str(name)
        cid = "" if call_id is None else str(call_id)
        if not cid:
            flags.append("missing_call_id")
        else:
            self.calls[cid] = name
        self.add(
            {
                "kind": "tool_call",
                "role": "assistant",
                "call_id": cid,
                "tool": name,
                "arguments": arguments,
                "flags": flags,
            }
        )

    def result(
        self, call_id: Any, content: Any, *, is_error: bool = False, tool: Any = None
    ) -> None:
        cid = "" if call_id is None else str(call_id)
        flags = []
        matched = self.calls.get(cid) if cid else None
        if matched is None:
            flags.append("unmatched_call" if cid else "missing_call_id")
        name = matched if matched is not None else (tool if isinstance(tool, str) else "")
        self.add(
            {
                "kind": "tool_result",
                "call_id": cid,
                "tool": name,
                "content": _text_of(content),
                "is_error": bool(is_error),
                "flags": flags,
            }
        )

    # --- one item of any format --------------------------------------------------------------

    def item(self, item: Any, default_role: str) -> None:
        if isinstance(item, str):
            self.message(default_role, item)
            return
        if not isinstance(item, Mapping):
            self.unknown(None, item)
            return
        kind = item.get("type")
        if kind == "function_call":  # Responses API
            self.call(
                item.get("call_id") or item.get("id"), item.get("name"), item.get("arguments")
            )
        elif kind == "function_call_output":
            self.result(item.get("call_id"), item.get("output"))
        elif "role" in item:
            self._message(item, str(item.get("role") or default_role))
        elif kind == "message":
            self._message(item, default_role)
        else:
            self.unknown(None, dict(item))

    def _message(self, item: Mapping[str, Any], role: str) -> None:
        if role in ("tool", "function"):
            self._tool_message(item, role)
            return
        content = item.get("content")
        if isinstance(content, Mapping) and isinstance(content.get("parts"), list):
            content = content["parts"]  # Mastra's stored message format
        elif content is None and isinstance(item.get("parts"), list):
            content = item["parts"]  # AI SDK UI message
        if isinstance(content, list):
            self._parts(content, role)
        elif isinstance(content, str) or content is None:
            text = content or ""
            if not text and isinstance(item.get("text"), str):
                text = item["text"]
            if text or not (item.get("tool_calls") or item.get("function_call")):
                self.message(role, text)
        else:
            self.unknown(role, dict(item))
        self._message_calls(item, role)

    def _tool_message(self, item: Mapping[str, Any], role: str) -> None:
        """A tool's result: a Chat Completions ``tool`` message (or an AI SDK tool message
        with parts), or the older Chat Completions ``function`` result."""
        content = item.get("content")
        if (
            role == "tool"
            and isinstance(content, list)
            and any(isinstance(p, Mapping) and p.get("type") == "tool-result" for p in content)
        ):
            self._parts(content, role)
        else:
            call_id = item.get("tool_call_id") if role == "tool" else None
            self.result(call_id, content, tool=item.get("name"))

    def _message_calls(self, item: Mapping[str, Any], role: str) -> None:
        """The tool calls a Chat Completions message makes (``tool_calls``, or the older
        ``function_call``)."""
        for call in _as_list(item.get("tool_calls")):
            fn = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(fn, Mapping):
                self.call(call.get("id"), fn.get("name"), fn.get("arguments"))
            else:
                self.unknown(role, call)
        legacy = item.get("function_call")
        if isinstance(legacy, Mapping):
            self.call(None, legacy.get("name"), legacy.get("arguments"))

    def _parts(self, parts: list[Any], role: str) -> None:
        texts: list[str] = []

        def flush() -> None:
            if texts:
                self.message(role, "\n".join(texts))
                texts.clear()

        for part in parts:
            if isinstance(part, str):
                texts.append(part)
                continue
            if not isinstance(part, Mapping):
                flush()
                self.unknown(role, part)
                continue
            kind = str(part.get("type") or "")
            if (kind in _TEXT_PARTS or not kind) and isinstance(part.get("text"), str):
                texts.append(part["text"])
                continue
            if kind in _SILENT_PARTS:
                continue
            flush()
            self._part(part, kind, role)
        flush()

    def _part(self, part: Mapping[str, Any], kind: str, role: str) -> None:
        if kind == "tool_use":  # Anthropic
            self.call(part.get("id"), part.get("name"), part.get("input"))
        elif kind == "tool_result":
            self.result(
                part.get("tool_use_id"), part.get("content"), is_error=bool(part.get("is_error"))
            )
        elif kind == "tool-call":  # AI SDK (v5 input, v4 args)
            args = part.get("input") if "input" in part else part.get("args")
            self.call(part.get("toolCallId"), part.get("toolName"), args)
        elif kind == "tool-result":
            output = part.get("output") if "output" in part else part.get("result")
            error = bool(part.get("isError")) or (
                isinstance(output, Mapping) and str(output.get("type", "")).startswith("error")
            )
            self.result(part.get("toolCallId"), output, is_error=error, tool=part.get("toolName"))
        elif kind == "tool-invocation" and isinstance(part.get("toolInvocation"), Mapping):
            self._invocation(part["toolInvocation"])
        elif kind.startswith("tool-") or kind == "dynamic-tool":  # AI SDK v5 UI tool parts
            name = part.get("toolName") if kind == "dynamic-tool" else kind[len("tool-") :]
            self._ui_tool(part, name)
        else:
            self.unknown(role, dict(part))

    def _invocation(self, inv: Mapping[str, Any]) -> None:
        """AI SDK v4 / Mastra ``tool-invocation``: the call, and its result once it has one."""
        self.call(inv.get("toolCallId"), inv.get("toolName"), inv.get("args"))
        if inv.get("state") == "result" or "result" in inv:
            self.result(inv.get("toolCallId"), inv.get("result"))

    def _ui_tool(self, part: Mapping[str, Any], name: Any) -> None:
        self.call(part.get("toolCallId"), name, part.get("input"))
        state = part.get("state")
        if state == "output-available" or "output" in part:
            self.result(part.get("toolCallId"), part.get("output"))
        elif state == "output-error" or "errorText" in part:
            self.result(part.get("toolCallId"), part.get("errorText"), is_error=True)


def normalise(input_messages: Any, output: Any) -> list[Step]:
    """The ordered steps of a run: its input messages, then its output."""
    builder = _Builder()
    for item in _as_list(input_messages):
        builder.item(item, "user")
    builder.source = "output"
    for item in _as_list(output):
        builder.item(item, "assistant")
    return builder.steps


def final_texts(steps: list[Step]) -> tuple[str, str, str]:
    """(task, system, output) of the ``final`` view (SCORING.md "Shared terms"): the first user
    message of the input, every system or developer message of the input joined by a blank
    line, and the last assistant message of the output that has text."""
    task = next(
        (s["text"] for s in steps if s["source"] == "input" and _is_message(s, {"user"})), ""
    )
    system = "\n\n".join(
        t
        for t in (
            s["text"].strip()
            for s in steps
            if s["source"] == "input" and _is_message(s, _SYSTEM_ROLES)
        )
        if t
    )
    output = next(
        (
            s["text"]
            for s in reversed(steps)
            if s["source"] == "output" and _is_message(s, {"assistant"}) and s["text"].strip()
        ),
        "",
    )
    return task, system, output


def _is_message(step: Step, roles: set[str]) -> bool:
    return step["kind"] == "message" and step.get("role") in roles


def tool_names(steps: list[Step]) -> list[str]:
    """The distinct tool names the run called, in first-call order."""
    seen: dict[str, None] = {}
    for s in steps:
        if s["kind"] == "tool_call" and s.get("tool"):
            seen.setdefault(s["tool"], None)
    return list(seen)


def flagged(steps: list[Step]) -> int:
    """How many steps carry a flag (malformed or unmatched tool calls and results)."""
    return sum(1 for s in steps if s.get("flags"))
