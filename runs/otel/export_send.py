"""Sending events to a team's OTLP/HTTP endpoint with the OpenTelemetry SDK's exporters.

``http/protobuf``: the SDK's own ``OTLPLogExporter`` (opentelemetry-exporter-otlp-proto-http,
pinned exactly in pyproject.toml). ``http/json``: the same SDK encoder (``encode_logs``) and the
same HTTP client with its retries, the request written as OTLP/JSON (the protobuf JSON mapping
with trace and span ids in hex, as the OTLP specification has it): the SDK has no JSON exporter
matching the pinned release.

Both send through ``GuardedOtlpTransport``, an SDK transport whose every request goes through
evalsite.outbound (the address guard, checked again as the connection is made; no redirects,
no proxy from the environment) and carries exactly the content type, the exporter's user agent
and the team's own headers: the SDK's ``OTEL_EXPORTER_OTLP_*HEADERS`` environment variables
(a deployment's own credentials) never reach a team's endpoint.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.http.transport._base import BaseHTTPResult, BaseHTTPTransport
from opentelemetry.exporter.otlp.common import http as otlp_http
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult

from evalsite.outbound import OutboundRefused, Purpose, outbound_post

# What the exporter's own request headers may pass on to the receiver; everything else it
# would add (from the deployment's environment) is dropped.
_PASSED = ("content-type", "content-encoding", "user-agent")


class Redirected(Exception):
    """The endpoint answered with a redirect: exports are never redirected."""


@dataclass(frozen=True, slots=True)
class _Result(BaseHTTPResult):
    response: httpx.Response | None = field(default=None, hash=False, compare=False)

    def content(self) -> bytes:
        return b"" if self.response is None else self.response.content

    def headers(self) -> Mapping[str, str]:
        return {} if self.response is None else self.response.headers


@dataclass
class Attempt:
    """What the last request came to, as the team is told it."""

    status: int | None = None
    error: BaseException | None = None


class GuardedOtlpTransport(BaseHTTPTransport):
    def __init__(self, *, headers: Mapping[str, str], timeout: float) -> None:
        self._team_headers = dict(headers)
        self._timeout = timeout
        self.last: Attempt | None = None

    def request(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
        data: bytes | None = None,
    ) -> BaseHTTPResult:
        given = {k.lower(): v for k, v in (headers or {}).items()}
        sent = {k: given[k] for k in _PASSED if k in given} | self._team_headers
        try:
            answer = outbound_post(
                url, purpose=Purpose.EXPORT, content=data or b"", headers=sent,
                timeout=min(timeout or self._timeout, self._timeout),
            )  # fmt: skip
        except (OutboundRefused, httpx.HTTPError) as exc:
            self.last = Attempt(error=exc)
            return _Result(error=exc)
        self.last = Attempt(status=answer.status_code)
        if 300 <= answer.status_code < 400:
            error = Redirected(f"HTTP {answer.status_code}")
            self.last.error = error
            return _Result(error=error)
        return _Result(status_code=answer.status_code, reason=answer.reason_phrase, response=answer)

    def is_connection_error(self, exception: Exception | None) -> bool:
        # Retried by the SDK's client within its timeout; a refused address never is.
        return isinstance(exception, httpx.TransportError)

    def close(self) -> None:
        """Nothing held: outbound_post opens and closes its own connection."""


class OtlpJsonLogExporter(LogRecordExporter):
    """OTLP/HTTP with a JSON body: the SDK's encoder and HTTP client, JSON on the wire."""

    def __init__(self, *, endpoint: str, transport: BaseHTTPTransport, timeout: float) -> None:
        self._client = otlp_http._OTLPHTTPClient(
            transport=transport, endpoint=endpoint, kind="logs", timeout=timeout,
            headers={"content-type": "application/json", "user-agent": "evalsite-otlp-json"},
        )  # fmt: skip

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        body = otlp_json(encode_logs(batch))
        ok = self._client.export(body).success
        return LogRecordExportResult.SUCCESS if ok else LogRecordExportResult.FAILURE

    def shutdown(self) -> None:
        self._client.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def otlp_json(message: Any) -> bytes:
    """An OTLP protobuf message in OTLP/JSON: the protobuf JSON mapping (lowerCamelCase names,
    enums as numbers, 64-bit integers as strings) with trace and span ids as hex, not base64."""
    tree = MessageToDict(message, use_integers_for_enums=True)
    _hex_ids(tree)
    return json.dumps(tree, separators=(",", ":")).encode()


def _hex_ids(node: Any) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("traceId", "spanId") and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                _hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids(item)


def exporter_for(
    *, protocol: str, endpoint: str, transport: GuardedOtlpTransport, timeout: float
) -> LogRecordExporter:
    if protocol == "http/json":
        return OtlpJsonLogExporter(endpoint=endpoint, transport=transport, timeout=timeout)
    return OTLPLogExporter(
        endpoint=endpoint, timeout=timeout, compression=otlp_http.Compression.NONE,
        _transport=transport,
    )  # fmt: skip


@dataclass
class Outcome:
    """One send: ``ok``, or why not and whether trying again may help."""

    ok: bool
    error: str = ""
    retry: bool = False


def otlp_send(
    *,
    records: Sequence[ReadableLogRecord],
    protocol: str,
    endpoint: str,
    headers: Mapping[str, str],
    timeout: float,
) -> Outcome:
    """Export these records in one request (the SDK's client retries a lost connection, 429,
    502, 503 and 504 within ``timeout``)."""
    transport = GuardedOtlpTransport(headers=headers, timeout=timeout)
    exporter = exporter_for(
        protocol=protocol, endpoint=endpoint, transport=transport, timeout=timeout
    )
    try:
        result = exporter.export(records)
    finally:
        exporter.shutdown()
    if result == LogRecordExportResult.SUCCESS:
        return Outcome(ok=True)
    return failure_of(transport.last, timeout)


# Answers worth trying again later: the receiver is busy, down or slow.
_RETRY_STATUS = {408, 425, 429}


def failure_of(attempt: Attempt | None, timeout: float) -> Outcome:
    """What the team is told: the status with its standard phrase (never what the receiver
    wrote), the kind of transport failure, or the guard's refusal."""
    if attempt is None:
        return Outcome(ok=False, error="the events could not be encoded")
    error = attempt.error
    if isinstance(error, OutboundRefused):
        return Outcome(ok=False, error=f"not sent: the endpoint {error}")
    if isinstance(error, Redirected):
        return Outcome(
            ok=False, error=f"the endpoint answered {error} (a redirect): save the final URL"
        )
    if isinstance(error, httpx.TimeoutException):
        return Outcome(ok=False, error=f"no answer within {timeout:g}s", retry=True)
    if isinstance(error, httpx.HTTPError):
        return Outcome(ok=False, error="could not connect to the endpoint", retry=True)
    status = attempt.status or 0
    phrase = httpx.codes.get_reason_phrase(status)
    retry = status >= 500 or status in _RETRY_STATUS
    return Outcome(ok=False, error=f"HTTP {status} {phrase}".strip(), retry=retry)
