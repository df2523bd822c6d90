"""What one OTLP export may cost: its body decompressed within EVALSITE_MAX_BULK_BYTES, and
attributes and events per span and spans per trace within their settings. Each limit is a 413
(TooLarge) naming the setting; nothing of an export over one is stored."""

from __future__ import annotations

import gzip
import zlib
from collections import Counter
from collections.abc import Iterable

from django.conf import settings

from evalsite.errors import AppError, TooLarge


class OtlpInvalid(AppError):
    """The export is not valid OTLP (400); the message says what and where."""


class UnsupportedMediaType(AppError):
    status = 415


def decompress(body: bytes, encoding: str) -> bytes:
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise UnsupportedMediaType(
            f"Content-Encoding {encoding!r} is not supported: use gzip or deflate",
            extra={"accepted": ["gzip", "deflate"]},
        )
    # Bounded like a plain body: a small gzip bomb must not become a huge one. "deflate" is
    # zlib-wrapped (RFC 9110), though some clients send raw deflate: both are read.
    limit = settings.EVALSITE_MAX_BULK_BYTES
    wbits = 31 if encoding != "deflate" else (15 if body[:1] == b"\x78" else -15)
    try:
        out = zlib.decompressobj(wbits=wbits).decompress(body, limit + 1)
    except (zlib.error, gzip.BadGzipFile) as exc:
        raise OtlpInvalid(f"the {encoding} body is corrupt: {exc}") from exc
    if len(out) > limit:
        raise TooLarge(
            f"the {encoding} body expands past {limit:,} bytes (EVALSITE_MAX_BULK_BYTES)",
            extra={"limit": limit},
        )
    return out


def check_export_traces(trace_ids: Iterable[bytes]) -> None:
    """An export bringing more spans of one trace than a trace may have is refused before its
    spans are converted (runs.otel.services counts the staged ones too)."""
    for trace_id, count in Counter(trace_ids).items():
        check_trace_spans(trace_id.hex(), count)


def check_trace_spans(trace_id: str, count: int) -> None:
    """A trace of more than EVALSITE_OTEL_MAX_TRACE_SPANS spans: 413 naming it."""
    limit = settings.EVALSITE_OTEL_MAX_TRACE_SPANS
    if count > limit:
        raise TooLarge(
            f"trace {trace_id} has {count:,} spans; the limit is {limit:,} "
            "(EVALSITE_OTEL_MAX_TRACE_SPANS): nothing of this export was stored",
            extra={
                "limit": limit,
                "setting": "EVALSITE_OTEL_MAX_TRACE_SPANS",
                "trace_id": trace_id,
            },
        )


def check_span(where: str, attributes: int, events: int) -> None:
    """A span with more attributes or events than the settings allow: 413 naming them."""
    for count, setting, what in (
        (attributes, "EVALSITE_OTEL_MAX_ATTRIBUTES", "attributes"),
        (events, "EVALSITE_OTEL_MAX_EVENTS", "events"),
    ):
        limit = getattr(settings, setting)
        if count > limit:
            raise TooLarge(
                f"{where} has {count:,} {what}; the limit is {limit:,} ({setting}): nothing of "
                "this export was stored",
                extra={"limit": limit, "setting": setting, "field": where},
            )
