"""Test helpers: OTLP exports written by hand in both encodings (the JSON mapping as the OTLP
spec writes it, protobuf with the official opentelemetry-proto classes), and a two-tool agent
trace in the GenAI semantic conventions."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

T0 = 1_767_000_000_000_000_000  # ns


def new_trace_id() -> str:
    return secrets.token_hex(16)


def new_span_id() -> str:
    return secrets.token_hex(8)


@dataclass
class S:
    """A span to export."""

    name: str
    trace_id: str
    span_id: str = field(default_factory=new_span_id)
    parent: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    start: int = 0  # ms after T0
    end: int = 0
    error: str | None = None  # status ERROR with this message


def _json_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}  # int64 as a string, as the JSON mapping writes it
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_json_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": _json_attrs(value)}}
    return {"stringValue": str(value)}


def _json_attrs(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _json_value(v)} for k, v in attrs.items()]


def export_json(spans: list[S], resource: dict[str, Any] | None = None) -> dict[str, Any]:
    resource = {"service.name": "support-agent"} if resource is None else resource
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _json_attrs(resource)},
                "scopeSpans": [
                    {
                        "scope": {"name": "tests"},
                        "spans": [
                            {
                                "traceId": s.trace_id,
                                "spanId": s.span_id,
                                "parentSpanId": s.parent,
                                "name": s.name,
                                "kind": 1,
                                "startTimeUnixNano": str(T0 + s.start * 1_000_000),
                                "endTimeUnixNano": str(T0 + (s.end or s.start + 1) * 1_000_000),
                                "attributes": _json_attrs(s.attributes),
                                "events": [
                                    {
                                        "timeUnixNano": str(T0 + s.start * 1_000_000),
                                        "name": n,
                                        "attributes": _json_attrs(a),
                                    }
                                    for n, a in s.events
                                ],
                                "status": {"code": 2, "message": s.error}
                                if s.error is not None
                                else {},
                            }
                            for s in spans
                        ],
                    }
                ],
            }
        ]
    }


def _proto_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    out = AnyValue()
    if isinstance(value, list):
        out.array_value.values.extend(_proto_value(v) for v in value)
        return out
    if isinstance(value, dict):
        out.kvlist_value.values.extend(_proto_attrs(value))
        return out
    return AnyValue(string_value=str(value))


def _proto_attrs(attrs: dict[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=k, value=_proto_value(v)) for k, v in attrs.items()]


def export_proto(spans: list[S], resource: dict[str, Any] | None = None) -> bytes:
    resource = {"service.name": "support-agent"} if resource is None else resource
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    rs.resource.attributes.extend(_proto_attrs(resource))
    ss = rs.scope_spans.add()
    for s in spans:
        sp = ss.spans.add()
        sp.trace_id = bytes.fromhex(s.trace_id)
        sp.span_id = bytes.fromhex(s.span_id)
        if s.parent:
            sp.parent_span_id = bytes.fromhex(s.parent)
        sp.name = s.name
        sp.start_time_unix_nano = T0 + s.start * 1_000_000
        sp.end_time_unix_nano = T0 + (s.end or s.start + 1) * 1_000_000
        sp.attributes.extend(_proto_attrs(s.attributes))
        for name, attrs in s.events:
            event = sp.events.add()
            event.name = name
            event.time_unix_nano = T0 + s.start * 1_000_000
            event.attributes.extend(_proto_attrs(attrs))
        if s.error is not None:
            sp.status.code = 2
            sp.status.message = s.error
    return request.SerializeToString()


def msgs(*items: dict[str, Any]) -> str:
    return json.dumps(list(items))


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}],
    }


def response(call_id: str, value: Any) -> dict[str, Any]:
    return {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": call_id, "response": value}],
    }


QUESTION = "Please refund order 77, it arrived broken."
ANSWER = "Your refund for order number 77 is on its way. Thanks for your patience!"


def two_tool_trace(trace_id: str | None = None, *, rubric: str | None = None) -> dict[str, S]:
    """An agent that looks the order up, refunds it and answers: an invoke_agent span, three
    chat spans and two execute_tool spans (the GenAI conventions' current attributes)."""
    t = trace_id or new_trace_id()
    agent = S(
        "invoke_agent support-bot",
        t,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "support-bot",
            "gen_ai.input.messages": msgs(text("user", QUESTION)),
            "gen_ai.output.messages": msgs(text("assistant", ANSWER)),
            **({"evalsite.rubric": rubric} if rubric else {}),
        },
        start=0,
        end=100,
    )
    system = json.dumps([{"type": "text", "content": "You are Acme support."}])
    chat1 = S(
        "chat gpt-4o",
        t,
        parent=agent.span_id,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.system_instructions": system,
            "gen_ai.input.messages": msgs(text("user", QUESTION)),
            "gen_ai.output.messages": msgs(call("call_1", "lookup_order", {"order": 77})),
        },
        start=1,
        end=10,
    )
    tool1 = S(
        "execute_tool lookup_order",
        t,
        parent=agent.span_id,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup_order",
            "gen_ai.tool.call.id": "call_1",
            "gen_ai.tool.call.arguments": '{"order": 77}',
            "gen_ai.tool.call.result": '{"status": "delivered", "damaged": true}',
        },
        start=11,
        end=20,
    )
    chat2 = S(
        "chat gpt-4o",
        t,
        parent=agent.span_id,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": msgs(
                text("user", QUESTION),
                call("call_1", "lookup_order", {"order": 77}),
                response("call_1", {"status": "delivered", "damaged": True}),
            ),
            "gen_ai.output.messages": msgs(call("call_2", "refund", {"order": 77})),
        },
        start=21,
        end=30,
    )
    tool2 = S(
        "execute_tool refund",
        t,
        parent=agent.span_id,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "refund",
            "gen_ai.tool.call.id": "call_2",
            "gen_ai.tool.call.arguments": '{"order": 77}',
            "gen_ai.tool.call.result": "refund R-9 issued",
        },
        start=31,
        end=40,
    )
    chat3 = S(
        "chat gpt-4o",
        t,
        parent=agent.span_id,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.output.messages": msgs(text("assistant", ANSWER)),
        },
        start=41,
        end=50,
    )
    return {
        "agent": agent,
        "chat1": chat1,
        "tool1": tool1,
        "chat2": chat2,
        "tool2": tool2,
        "chat3": chat3,
    }


# --- Captured spans (written by the real libraries), replayed --------------------------------

CAPTURES = {
    "openai-v2": "tests/otel/spans/genai.json",
    "openinference": "tests/otel/spans/openinference.json",
    "openllmetry": "tests/otel/spans/openllmetry.json",
    "aisdk": "tests/otel/node_aisdk/spans.otlp.json",
    "mastra": "tests/otel/mastra_spans.json",
}


def captured(name: str, root: Any) -> tuple[list[S], dict[str, Any]]:
    """A capture's spans as S (times in ms after the first span's start, ids as captured) and
    its resource. ``root``: the repository's folder."""
    from runs.otel.decode import Span, export_decode

    raw = (root / CAPTURES[name]).read_bytes()
    data = json.loads(raw)
    if isinstance(data, list):
        spans = [Span(**item) for item in data]
    else:
        spans = export_decode(raw, "application/json")
    base = min(s.start_ns for s in spans)
    out = [
        S(
            s.name,
            s.trace_id,
            span_id=s.span_id,
            parent=s.parent_span_id,
            attributes=s.attributes,
            events=[(e["name"], e.get("attributes") or {}) for e in s.events],
            start=(s.start_ns - base) // 1_000_000,
            end=max((s.end_ns - base) // 1_000_000, (s.start_ns - base) // 1_000_000 + 1),
            error=s.status_message if s.status == "error" else None,
        )
        for s in spans
    ]
    return out, spans[0].resource


def with_new_traces(spans: list[S]) -> list[S]:
    """The same spans under fresh trace ids (one per trace of the capture)."""
    fresh: dict[str, str] = {}
    return [
        S(**{**s.__dict__, "trace_id": fresh.setdefault(s.trace_id, new_trace_id())}) for s in spans
    ]
