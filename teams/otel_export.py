"""A team's OTLP endpoint for its verdicts (the exporter is runs/otel/export.py).

``otel_export_set`` validates and stores it: the endpoint must pass the outbound guard now
(evalsite.outbound, Purpose.EXPORT; it is checked again on every send), the headers are
encrypted (teams.crypto) and only their names are kept in clear. Errors name the field as the
API has it (``otel_export.endpoint``, ``otel_export.headers.<name>``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.db import transaction

from evalsite.outbound import Purpose, outbound_refusal

from .crypto import secret_decrypt, secret_encrypt
from .models import OtelExport, OtlpProtocol, Team
from .services import TeamValidationError

FIELD = "otel_export"
MAX_HEADERS = 20
MAX_HEADER_VALUE = 4_000
MAX_HEADERS_BYTES = 16_000
# RFC 9110 token characters: a header name a client library will send as it is.
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$")
# Headers that belong to the request itself (its framing and where it goes), not to the team.
RESERVED_HEADERS = frozenset(
    {
        "content-type", "content-length", "content-encoding", "transfer-encoding", "host",
        "connection", "te", "trailer", "upgrade", "expect", "keep-alive", "proxy-authorization",
    }
)  # fmt: skip
UNCHANGED: Any = object()


def otel_export_set(
    *, team: Team, endpoint: Any, protocol: Any = UNCHANGED, headers: Any = UNCHANGED
) -> OtelExport:
    """Create or change the team's export. ``protocol`` defaults to http/protobuf for a new
    one; ``headers`` left out keeps the stored ones (they are write-only), given (even ``{}``)
    replaces them."""
    current = OtelExport.objects.filter(team=team).first()
    errors: dict[str, str] = {}
    clean_endpoint = _endpoint(endpoint, errors)
    if protocol is UNCHANGED:
        protocol = current.protocol if current else OtlpProtocol.PROTOBUF
    if protocol not in OtlpProtocol.values:
        errors[f"{FIELD}.protocol"] = "must be http/protobuf or http/json"
    clean_headers = None if headers is UNCHANGED else _headers(headers, errors)
    if errors:
        raise TeamValidationError(errors)
    export = current or OtelExport(team=team)
    export.endpoint, export.protocol = clean_endpoint, protocol
    if clean_headers is not None:
        export.headers_ciphertext = (
            secret_encrypt(json.dumps(clean_headers)) if clean_headers else ""
        )
        export.header_names = sorted(clean_headers)
    if current is None or current.endpoint != clean_endpoint:
        export.last_error, export.last_error_at = "", None  # the old endpoint's, not this one's
    with transaction.atomic():
        export.save()
    return export


def otel_export_remove(*, team: Team) -> bool:
    """Stop exporting: the settings and the headers are deleted (evaluations still waiting go
    with them: runs.otel.export drops a team's rows when it has no export)."""
    deleted, _ = OtelExport.objects.filter(team=team).delete()
    return bool(deleted)


def otel_export_headers(*, export: OtelExport) -> dict[str, str]:
    """The headers to send (decrypted; never shown, never logged). SecretUnreadable when the
    deployment's EVALSITE_SECRETS_KEY no longer opens them."""
    if not export.headers_ciphertext:
        return {}
    return dict(json.loads(secret_decrypt(export.headers_ciphertext)))


def _endpoint(value: Any, errors: dict[str, str]) -> str:
    field = f"{FIELD}.endpoint"
    if not isinstance(value, str) or not value.strip():
        errors[field] = (
            "the URL of an OTLP/HTTP logs endpoint, e.g. https://otlp.example.com/v1/logs"
        )
        return ""
    url = value.strip()
    if len(url) > 500:
        errors[field] = "at most 500 characters"
    elif (refusal := outbound_refusal(url, purpose=Purpose.EXPORT)) is not None:
        errors[field] = refusal
    return url


def _headers(value: Any, errors: dict[str, str]) -> dict[str, str]:
    field = f"{FIELD}.headers"
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors[field] = 'an object of header names and values, e.g. {"x-api-key": "..."}'
        return {}
    if len(value) > MAX_HEADERS:
        errors[field] = f"at most {MAX_HEADERS} headers"
        return {}
    out: dict[str, str] = {}
    for name, text in value.items():
        if problem := _header_problem(name, text, out):
            errors[f"{field}.{str(name)[:100]}"] = problem
        else:
            out[name.lower()] = text
    if sum(len(k) + len(v) for k, v in out.items()) > MAX_HEADERS_BYTES:
        errors[field] = f"at most {MAX_HEADERS_BYTES:,} characters of names and values together"
    return out


def _header_problem(name: Any, value: Any, seen: dict[str, str]) -> str:
    if not isinstance(name, str) or not _TOKEN.match(name):
        return "a header name: letters, digits and !#$%&'*+.^_`|~- (at most 100)"
    if name.lower() in RESERVED_HEADERS:
        return "set by the exporter itself; it cannot be replaced"
    if name.lower() in seen:
        return "given twice (header names are case-insensitive)"
    if not isinstance(value, str) or not value:
        return "the value must be a non-empty string"
    if len(value) > MAX_HEADER_VALUE or any(c in value for c in "\r\n\x00"):
        return f"at most {MAX_HEADER_VALUE:,} characters, on one line"
    return ""
