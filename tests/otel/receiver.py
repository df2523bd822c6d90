"""An OTLP/HTTP logs receiver for tests: tests/http_listener.py records the requests, and each
body is read with opentelemetry-proto's own decoder (``ExportLogsServiceRequest``), from
protobuf or from OTLP/JSON (the protobuf JSON mapping with hex trace and span ids)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tests.http_listener import Seen


@dataclass
class Event:
    name: str
    attributes: dict[str, Any]
    trace_id: str
    span_id: str
    time_unix_nano: int
    resource: dict[str, Any]
    scope: str


def decode(seen: Seen) -> ExportLogsServiceRequest:
    kind = seen.headers.get("content-type", "")
    if kind == "application/x-protobuf":
        return ExportLogsServiceRequest.FromString(seen.body)
    assert kind == "application/json", kind
    tree = json.loads(seen.body)
    _base64_ids(tree)  # OTLP/JSON's one departure from the protobuf JSON mapping
    return ParseDict(tree, ExportLogsServiceRequest())


def _base64_ids(node: Any) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("traceId", "spanId"):
                assert len(value) in (32, 16) and int(value, 16) >= 0, value  # hex on the wire
                node[key] = base64.b64encode(bytes.fromhex(value)).decode()
            else:
                _base64_ids(value)
    elif isinstance(node, list):
        for item in node:
            _base64_ids(item)


def value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    return None if kind is None else getattr(v, kind)


def events(seen: list[Seen]) -> list[Event]:
    out = []
    for request in seen:
        for resource_logs in decode(request).resource_logs:
            resource = {a.key: value(a.value) for a in resource_logs.resource.attributes}
            for scope_logs in resource_logs.scope_logs:
                for record in scope_logs.log_records:
                    out.append(
                        Event(
                            name=record.event_name,
                            attributes={a.key: value(a.value) for a in record.attributes},
                            trace_id=record.trace_id.hex(),
                            span_id=record.span_id.hex(),
                            time_unix_nano=record.time_unix_nano,
                            resource=resource,
                            scope=scope_logs.scope.name,
                        )
                    )
    return out
