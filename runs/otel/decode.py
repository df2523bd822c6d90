"""OTLP/HTTP trace exports into plain spans: the JSON mapping (hex ids, lowerCamelCase fields,
64-bit integers as strings) and protobuf (``ExportTraceServiceRequest`` of the official
``opentelemetry-proto`` package). What does not follow OTLP raises OtlpInvalid naming where.

Attribute values become JSON values (strings, numbers, booleans, lists, objects); text the
database cannot store (NUL, unpaired surrogates) is replaced by U+FFFD, non-finite doubles become
their names, bytes their base64 text.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from .bounds import OtlpInvalid, UnsupportedMediaType, check_export_traces, check_span, decompress

JSON_TYPE = "application/json"
PROTOBUF_TYPES = ("application/x-protobuf", "application/protobuf")
MAX_DEPTH = 32
MAX_NS = 2**63 - 1
STATUS = {0: "unset", 1: "ok", 2: "error"}
STATUS_NAMES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_HEX_TRACE = re.compile(r"[0-9a-fA-F]{32}")
_HEX_SPAN = re.compile(r"[0-9a-fA-F]{16}")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


@dataclass(slots=True)
class Span:
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)
    status: str = "unset"
    status_message: str = ""


def export_decode(body: bytes, content_type: str, encoding: str = "") -> list[Span]:
    """The spans of one export; ``content_type`` and ``encoding`` are the request's headers."""
    kind = content_type.split(";")[0].strip().lower()
    if kind != JSON_TYPE and kind not in PROTOBUF_TYPES:
        raise UnsupportedMediaType(
            f"Content-Type {kind or '(none)'!r} is not OTLP: send {JSON_TYPE} or "
            f"{PROTOBUF_TYPES[0]}",
            extra={"accepted": [JSON_TYPE, PROTOBUF_TYPES[0]]},
        )
    body = decompress(body, encoding.strip().lower())
    return _from_json(body) if kind == JSON_TYPE else _from_protobuf(body)


# --- protobuf -------------------------------------------------------------------------------------


def _from_protobuf(body: bytes) -> list[Span]:
    try:
        request = ExportTraceServiceRequest.FromString(body)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise OtlpInvalid(f"not an OTLP ExportTraceServiceRequest (protobuf): {exc}") from exc
    check_export_traces(
        sp.trace_id for rs in request.resource_spans for ss in rs.scope_spans for sp in ss.spans
    )
    spans = []
    for r, rs in enumerate(request.resource_spans):
        resource = {a.key: _proto_value(a.value, 0) for a in rs.resource.attributes}
        for s, ss in enumerate(rs.scope_spans):
            for i, sp in enumerate(ss.spans):
                where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{i}]"
                check_span(where, len(sp.attributes), len(sp.events))
                spans.append(
                    Span(
                        trace_id=_proto_id(sp.trace_id, 16, f"{where}.traceId"),
                        span_id=_proto_id(sp.span_id, 8, f"{where}.spanId"),
                        parent_span_id=_proto_id(sp.parent_span_id, 8, None),
                        name=_clean(sp.name)[:300],
                        start_ns=min(sp.start_time_unix_nano, MAX_NS),
                        end_ns=min(sp.end_time_unix_nano, MAX_NS),
                        attributes={a.key: _proto_value(a.value, 0) for a in sp.attributes},
                        events=[
                            {
                                "name": _clean(e.name),
                                "time_ns": min(e.time_unix_nano, MAX_NS),
                                "attributes": {
                                    a.key: _proto_value(a.value, 0) for a in e.attributes
                                },
                            }
                            for e in sp.events
                        ],
                        resource=resource,
                        status=STATUS.get(sp.status.code, "unset"),
                        status_message=_clean(sp.status.message),
                    )
                )
    return spans


def _proto_id(raw: bytes, size: int, where: str | None) -> str:
    if not raw or raw == bytes(size):
        if where is None:
            return ""  # a root span has no parent
        raise OtlpInvalid(f"{where} is empty or all zero", extra={"field": where})
    if len(raw) != size:
        name = where or "parentSpanId"
        raise OtlpInvalid(f"{name} must be {size} bytes, not {len(raw)}", extra={"field": name})
    return raw.hex()


def _proto_value(value: AnyValue, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise OtlpInvalid(f"attribute values nest deeper than {MAX_DEPTH} levels")
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return _clean(value.string_value)
    if kind in ("bool_value", "int_value"):
        return getattr(value, kind)
    if kind == "double_value":
        return _finite(value.double_value)
    if kind == "array_value":
        return [_proto_value(v, depth + 1) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _proto_value(kv.value, depth + 1) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return None


# --- JSON ---------------------------------------------------------------------------------------


def _from_json(body: bytes) -> list[Span]:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise OtlpInvalid(f"not JSON: {_json_reason(exc)}") from exc
    if not isinstance(data, dict):
        raise OtlpInvalid("the body must be a JSON object with resourceSpans")
    spans = []
    for r, rs in enumerate(_list(data, "resourceSpans", "")):
        where = f"resourceSpans[{r}]"
        rs = _object(rs, where)
        resource_obj = _object(_get(rs, "resource") or {}, f"{where}.resource")
        resource = _attributes(resource_obj, f"{where}.resource")
        for s, ss in enumerate(_list(rs, "scopeSpans", where)):
            inner = f"{where}.scopeSpans[{s}]"
            for i, sp in enumerate(_list(_object(ss, inner), "spans", inner)):
                spans.append(
                    _json_span(_object(sp, f"{inner}.spans[{i}]"), f"{inner}.spans[{i}]", resource)
                )
    return spans


def _json_span(sp: dict[str, Any], where: str, resource: dict[str, Any]) -> Span:
    status = _object(_get(sp, "status") or {}, f"{where}.status")
    check_span(where, len(_list(sp, "attributes", where)), len(_list(sp, "events", where)))
    return Span(
        trace_id=_hex_id(_get(sp, "traceId"), _HEX_TRACE, f"{where}.traceId", required=True),
        span_id=_hex_id(_get(sp, "spanId"), _HEX_SPAN, f"{where}.spanId", required=True),
        parent_span_id=_hex_id(
            _get(sp, "parentSpanId"), _HEX_SPAN, f"{where}.parentSpanId", required=False
        ),
        name=_clean(_text(_get(sp, "name"), f"{where}.name"))[:300],
        start_ns=_uint(_get(sp, "startTimeUnixNano"), f"{where}.startTimeUnixNano"),
        end_ns=_uint(_get(sp, "endTimeUnixNano"), f"{where}.endTimeUnixNano"),
        attributes=_attributes(sp, where),
        events=[
            {
                "name": _clean(_text(_get(e, "name"), f"{where}.events[{k}].name")),
                "time_ns": _uint(_get(e, "timeUnixNano"), f"{where}.events[{k}].timeUnixNano"),
                "attributes": _attributes(e, f"{where}.events[{k}]"),
            }
            for k, e in enumerate(_list(sp, "events", where))
            if _object(e, f"{where}.events[{k}]") is e
        ],
        resource=resource,
        status=STATUS.get(_status_code(_get(status, "code"), f"{where}.status.code"), "unset"),
        status_message=_clean(_text(_get(status, "message"), f"{where}.status.message")),
    )


def _get(obj: dict[str, Any], camel: str) -> Any:
    """A field by its lowerCamelCase name, or the proto field name (both are valid JSON)."""
    if camel in obj:
        return obj[camel]
    return obj.get(re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel))


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise OtlpInvalid(f"{where} must be an object", extra={"field": where})
    return value


def _list(obj: dict[str, Any], name: str, where: str) -> list[Any]:
    value = _get(obj, name)
    if value is None:
        return []
    if not isinstance(value, list):
        path = f"{where}.{name}" if where else name
        raise OtlpInvalid(f"{path} must be an array", extra={"field": path})
    return value


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise OtlpInvalid(f"{where} must be a string", extra={"field": where})
    return value


def _hex_id(value: Any, pattern: re.Pattern[str], where: str, *, required: bool) -> str:
    if value in (None, "") and not required:
        return ""
    if not isinstance(value, str) or not pattern.fullmatch(value) or not value.strip("0"):
        if not required and isinstance(value, str) and pattern.fullmatch(value):
            return ""  # an all-zero parent id means no parent
        digits = 32 if pattern is _HEX_TRACE else 16
        raise OtlpInvalid(
            f"{where} must be {digits} hex digits (not all zero), as OTLP/JSON encodes ids",
            extra={"field": where},
        )
    return value.lower()


def _uint(value: Any, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise OtlpInvalid(
            f"{where} must be an unsigned integer (a decimal string or a number)",
            extra={"field": where},
        )
    return min(value, MAX_NS)


def _status_code(value: Any, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, str) and value in STATUS_NAMES:
        return STATUS_NAMES[value]
    if isinstance(value, int) and not isinstance(value, bool) and value in STATUS:
        return value
    raise OtlpInvalid(f"{where} must be 0, 1 or 2 (unset, ok, error)", extra={"field": where})


def _attributes(obj: dict[str, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, kv in enumerate(_list(obj, "attributes", where)):
        at = f"{where}.attributes[{k}]"
        kv = _object(kv, at)
        key = _text(kv.get("key"), f"{at}.key")
        out[_clean(key)] = _json_value(kv.get("value"), f"{at}.value", 0)
    return out


def _json_value(value: Any, where: str, depth: int) -> Any:
    """An OTLP AnyValue in its JSON mapping."""
    if value is None:
        return None
    if depth > MAX_DEPTH:
        raise OtlpInvalid(f"{where}: attribute values nest deeper than {MAX_DEPTH} levels")
    value = _object(value, where)
    for kind, decode in ANY_VALUE_KINDS.items():
        if kind in value:
            return decode(value[kind], where, depth)
    return None  # an empty AnyValue, or a kind this version does not know: ignored


def _bool_value(value: Any, where: str, depth: int) -> bool:
    if not isinstance(value, bool):
        raise OtlpInvalid(f"{where}.boolValue must be true or false", extra={"field": where})
    return value


def _array_value(value: Any, where: str, depth: int) -> list[Any]:
    inner = _object(value or {}, f"{where}.arrayValue")
    return [
        _json_value(v, f"{where}.arrayValue.values[{i}]", depth + 1)
        for i, v in enumerate(_list(inner, "values", f"{where}.arrayValue"))
    ]


def _kvlist_value(value: Any, where: str, depth: int) -> dict[str, Any]:
    inner = _object(value or {}, f"{where}.kvlistValue")
    return _attributes({"attributes": _list(inner, "values", where)}, f"{where}.kvlistValue")


# How each kind of AnyValue decodes (the value under the kind's key, the AnyValue's place, its
# depth), in the order a value carrying several kinds is read.
ANY_VALUE_KINDS: dict[str, Callable[[Any, str, int], Any]] = {
    "stringValue": lambda v, where, _: _clean(_text(v, f"{where}.stringValue")),
    "boolValue": _bool_value,
    "intValue": lambda v, where, _: _int(v, f"{where}.intValue"),
    "doubleValue": lambda v, where, _: _double(v, f"{where}.doubleValue"),
    "arrayValue": _array_value,
    "kvlistValue": _kvlist_value,
    "bytesValue": lambda v, where, _: _text(v, f"{where}.bytesValue"),
}


def _int(value: Any, where: str) -> int:
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,20}", value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise OtlpInvalid(f"{where} must be an integer", extra={"field": where})
    return value


def _double(value: Any, where: str) -> Any:
    if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise OtlpInvalid(f"{where} must be a number", extra={"field": where})
    return _finite(float(value))


def _finite(value: float) -> Any:
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _clean(text: str) -> str:
    return _UNSTORABLE.sub("\ufffd", text) if _UNSTORABLE.search(text) else text


def _json_reason(exc: BaseException) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} (line {exc.lineno}, column {exc.colno})"
    if isinstance(exc, UnicodeDecodeError):
        return "the body is not UTF-8 text"
    if isinstance(exc, RecursionError):
        return "the body is nested too deeply"
    return type(exc).__name__
