"""One agent span and its descendants into one run payload (the ``POST /api/runs`` shape).

The agent span is the topmost ``invoke_agent`` span of its trace, or, when the trace has none,
its root span. Its input is the agent span's ``gen_ai.input.messages`` (else the first chat
span's input) with the system instructions first; its output is everything after, in span start
order: each chat span's new input messages (tool answers, further user turns) and its output
messages, each ``execute_tool`` span as a call and its result, each nested agent span as a call
of a tool named after that agent (what it did inside stays in its own spans; a tool span that
only runs a nested agent, a supervisor's delegation, is that call and lends it its call id), and
finally the agent span's own output messages. A message, a tool call or a tool result seen twice (chat
spans repeat the conversation so far; a call shows up both in a chat answer and as a tool span)
is kept once: tool calls and results by call id, messages by role and text. A tool span with no
call id answers the oldest call of that tool still without a result.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, TypeVar

from .messages import (
    Message,
    event_messages,
    genai_messages,
    parse_json,
    system_instructions,
    tool_call,
    tool_result,
)

AGENT = "invoke_agent"
TOOL = "execute_tool"
OPERATION = "gen_ai.operation.name"
RUBRIC_ATTRIBUTE = "evalsite.rubric"


class SpanLike(Protocol):
    span_id: str
    parent_span_id: str
    trace_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[dict[str, Any]]
    resource: dict[str, Any]
    status: str
    status_message: str


def operation_of(attributes: dict[str, Any]) -> str:
    value = attributes.get(OPERATION)
    return value[:40] if isinstance(value, str) else ""


def completes_trace(parent_span_id: str) -> bool:
    """Whether a span's arrival makes its trace ready to assemble: a root span (it ends last, so
    the spans under it, agent spans included, have been exported). An agent span that has a
    parent waits for the root: the parent may be a supervisor agent still running."""
    return not parent_span_id


def agent_span_ids(spans: Iterable[tuple[str, str, str]]) -> list[str]:
    """The agent spans of a trace, given (span_id, parent_span_id, operation) of its spans:
    each ``invoke_agent`` span with no ``invoke_agent`` ancestor, else the root spans."""
    rows = list(spans)
    parent = {sid: pid for sid, pid, _ in rows}
    agents = {sid for sid, _, op in rows if op == AGENT}
    if not agents:
        return [sid for sid, pid, _ in rows if not pid]
    return [a for a in agents if not _has_ancestor_in(a, parent, agents)]


def _has_ancestor_in(span_id: str, parent: dict[str, str], group: set[str]) -> bool:
    seen = {span_id}
    current = parent.get(span_id, "")
    while current and current not in seen:
        if current in group:
            return True
        seen.add(current)
        current = parent.get(current, "")
    return False


S = TypeVar("S", bound=SpanLike)


def descendants(agent_id: str, spans: Sequence[S]) -> list[S]:
    """The agent span's descendants among ``spans``, in start order."""
    children: dict[str, list[S]] = {}
    for s in spans:
        children.setdefault(s.parent_span_id, []).append(s)
    out: list[S] = []
    stack, seen = [agent_id], {agent_id}
    while stack:
        for child in children.get(stack.pop(), []):
            if child.span_id not in seen:
                seen.add(child.span_id)
                out.append(child)
                stack.append(child.span_id)
    return sorted(out, key=_start_order)


def _start_order(span: SpanLike) -> tuple[int, bool, int, str]:
    # JavaScript SDKs start spans with millisecond precision: a quick tool and the model call
    # that asked for it (or the next one) often start in the same millisecond. The model call
    # goes first: its input repeats the conversation so far, so the order stays right either way.
    return (span.start_ns, operation_of(span.attributes) == TOOL, span.end_ns, span.span_id)


def rubric_ref(agent: SpanLike) -> str | None:
    """``evalsite.rubric`` from the agent span, else from its resource."""
    for source in (agent.attributes, agent.resource):
        value = source.get(RUBRIC_ATTRIBUTE)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()[:200]
    return None


def service_name(agent: SpanLike) -> str:
    value = agent.resource.get("service.name")
    return value[:200] if isinstance(value, str) else ""


def run_payload(agent: SpanLike, tree: Sequence[SpanLike]) -> dict[str, Any]:
    """The run payload (without ``rubric``) of an agent span and its descendants."""
    conversation = _Conversation()
    _initial_input(conversation, agent, tree)
    inside, delegations = _nested_agents(tree)
    for span in tree:
        if span.span_id in inside:
            continue  # inside a nested agent: that agent is one tool step
        operation = operation_of(span.attributes)
        if operation == TOOL and span.span_id not in delegations:
            _tool_span(conversation, span)
        elif operation == AGENT:
            _nested_agent(conversation, span, delegations.get(span.parent_span_id))
        elif operation != TOOL:
            _chat_span(conversation, span)
    conversation.extend(genai_messages(agent.attributes.get("gen_ai.output.messages"), output=True))
    conversation.extend(event_messages(agent.events)[1])
    metadata = {
        "otel": True,
        "trace_id": agent.trace_id,
        "span_id": agent.span_id,
        "service.name": service_name(agent),
    }
    for key in ("gen_ai.conversation.id", "gen_ai.agent.id"):
        if isinstance(agent.attributes.get(key), str):
            metadata[key] = agent.attributes[key][:200]
    metadata.update(_usage(agent, tree))
    return {
        "external_id": f"otel:{agent.trace_id}:{agent.span_id}",
        "agent": _agent_name(agent),
        "input": {"messages": conversation.input},
        "output": conversation.output,
        "metadata": metadata,
    }


USAGE = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")


def _usage(agent: SpanLike, tree: Sequence[SpanLike]) -> dict[str, int]:
    """Token usage: the agent span's own, else the sum over its model-call spans (an agent span
    that reports usage already counts its calls)."""
    out: dict[str, int] = {}
    for key in USAGE:
        own = agent.attributes.get(key)
        if isinstance(own, int) and not isinstance(own, bool):
            out[key] = own
            continue
        counts = [
            s.attributes[key]
            for s in tree
            if operation_of(s.attributes) not in (TOOL, AGENT)
            and isinstance(s.attributes.get(key), int)
            and not isinstance(s.attributes.get(key), bool)
        ]
        if counts:
            out[key] = sum(counts)
    return out


def _agent_name(agent: SpanLike) -> str:
    name = agent.attributes.get("gen_ai.agent.name")
    if isinstance(name, str) and name.strip():
        return name.strip()[:200]
    return (service_name(agent) or agent.name)[:200]


def _span_inputs(span: SpanLike) -> tuple[list[Message], list[Message]]:
    """(system, other) input messages of a span: attributes first, else its events."""
    system = system_instructions(span.attributes.get("gen_ai.system_instructions"))
    messages = genai_messages(span.attributes.get("gen_ai.input.messages"), output=False)
    if not messages:
        messages = event_messages(span.events)[0]
    return system, messages


def _initial_input(conversation: _Conversation, agent: SpanLike, tree: Sequence[SpanLike]) -> None:
    system, messages = _span_inputs(agent)
    first_chat = next((s for s in tree if operation_of(s.attributes) not in (TOOL, AGENT)), None)
    if first_chat is not None:
        chat_system, chat_messages = _span_inputs(first_chat)
        # The agent span may hold the user's task but not the system prompt it gave the model.
        chat_system += [m for m in chat_messages if m.get("role") in ("system", "developer")]
        system = system or chat_system
        messages = messages or chat_messages
    has_system = any(m.get("role") in ("system", "developer") for m in messages)
    conversation.extend([] if has_system else system)
    conversation.extend(messages)
    conversation.input, conversation.output = conversation.output, []


def _chat_span(conversation: _Conversation, span: SpanLike) -> None:
    _, messages = _span_inputs(span)
    conversation.extend(m for m in messages if m.get("role") not in ("system", "developer"))
    conversation.extend(genai_messages(span.attributes.get("gen_ai.output.messages"), output=True))
    conversation.extend(event_messages(span.events)[1])


def _tool_span(conversation: _Conversation, span: SpanLike) -> None:
    attrs = span.attributes
    name = attrs.get("gen_ai.tool.name") or span.name
    call_id = attrs.get("gen_ai.tool.call.id")
    if call_id in (None, ""):  # some frameworks' tool spans carry no call id
        call_id = conversation.open_call(str(name)) or f"span:{span.span_id}"
    call_id = str(call_id)
    arguments = attrs.get("gen_ai.tool.call.arguments")
    parsed = parse_json(arguments)
    conversation.extend(
        [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    tool_call(call_id, name, parsed if parsed is not None else arguments)
                ],
            }
        ]
    )
    error = span.status == "error"
    result = attrs.get("gen_ai.tool.call.result")
    if result is None and error:
        result = span.status_message or attrs.get("error.type") or "error"
    conversation.extend([tool_result(call_id, name, result, is_error=error)])


def _nested_agents(tree: Sequence[S]) -> tuple[set[str], dict[str, S]]:
    """(ids of the spans below a nested agent span, {tool span id: that tool span} of the tool
    spans that only run a nested agent). Found by ancestry, not start order: timestamps in
    milliseconds (Mastra's) let a child sort before its parent. A tool whose work is a nested
    agent (a supervisor's delegation) is told once, as that agent's call."""
    parent = {s.span_id: s.parent_span_id for s in tree}
    agents = {s.span_id for s in tree if operation_of(s.attributes) == AGENT}
    inside = {s.span_id for s in tree if _has_ancestor_in(s.span_id, parent, agents)}
    tools = {s.span_id: s for s in tree if operation_of(s.attributes) == TOOL}
    delegations = {
        parent[a]: tools[parent[a]] for a in agents - inside if parent.get(a, "") in tools
    }
    return inside, delegations


def _nested_agent(conversation: _Conversation, span: SpanLike, tool: SpanLike | None) -> None:
    name = span.attributes.get("gen_ai.agent.name") or span.name
    _, inputs = _span_inputs(span)
    outputs = genai_messages(span.attributes.get("gen_ai.output.messages"), output=True)
    task = next((m["content"] for m in reversed(inputs) if m.get("role") == "user"), "")
    answer = next((m["content"] for m in reversed(outputs) if m.get("role") == "assistant"), "")
    tool_call_id = tool.attributes.get("gen_ai.tool.call.id") if tool is not None else None
    call_id = str(tool_call_id) if tool_call_id not in (None, "") else f"agent:{span.span_id}"
    conversation.extend(
        [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [tool_call(call_id, name, {"input": task})],
            }
        ]
    )
    error = span.status == "error" or (tool is not None and tool.status == "error")
    conversation.extend([tool_result(call_id, name, answer, is_error=error)])


class _Conversation:
    """Messages in order, each kept once (see the module's docstring)."""

    def __init__(self) -> None:
        self.input: list[Message] = []
        self.output: list[Message] = []
        self._texts: set[str] = set()
        self._calls: set[str] = set()
        self._results: set[str] = set()
        self._open: list[tuple[str, str]] = []  # (call id, tool name) of calls with no result

    def open_call(self, name: str) -> str | None:
        """The id of the oldest call of tool ``name`` that has no result yet."""
        return next((cid for cid, tool in self._open if tool == name), None)

    def extend(self, messages: Iterable[Message]) -> None:
        for message in messages:
            kept = self._new_part(message)
            if kept is not None:
                self.output.append(kept)

    def _new_part(self, message: Message) -> Message | None:
        role = message.get("role")
        if role == "tool":
            cid = str(message.get("tool_call_id") or "")
            if cid and cid in self._results:
                return None
            self._results.add(cid)
            self._open = [(c, tool) for c, tool in self._open if c != cid]
            return message
        calls = [c for c in message.get("tool_calls") or [] if c.get("id") not in self._calls]
        self._calls.update(c["id"] for c in calls if c.get("id"))
        for c in calls:
            if c.get("id"):
                self._open.append((str(c["id"]), str((c.get("function") or {}).get("name"))))
        content = message.get("content")
        key = json.dumps([role, content], ensure_ascii=False, sort_keys=True)
        empty = content in (None, "", [])
        if not empty and key in self._texts:
            content, empty = "", True
        if empty and not calls:
            return None
        self._texts.add(key)
        kept = {k: v for k, v in message.items() if k != "tool_calls"} | {"content": content}
        if calls:
            kept["tool_calls"] = calls
        return kept
