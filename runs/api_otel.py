"""OpenTelemetry ingest: POST /api/otel/v1/traces (OTLP/HTTP, JSON or protobuf) and the team's
default rubric per ``service.name`` (GET/PUT /api/otel/services). docs/api.md, "OpenTelemetry
ingest", says what maps to what."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.http import HttpRequest, HttpResponse
from ninja import Field, Query, Router, Schema
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from pydantic import ConfigDict

from evalsite.pagination import page_size
from evalsite.schemas import INT_MAX, with_errors
from teams.api import caller, editor, manager

from .otel.decode import PROTOBUF_TYPES, export_decode
from .otel.models import OtelRejection
from .otel.rejections import otel_rejections_list
from .otel.services import ExportResult, otel_export, otel_service_set, otel_services_list

router = Router(tags=["opentelemetry"])

OTLP_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {"type": "object", "description": "ExportTraceServiceRequest (OTLP/JSON)"}
            },
            "application/x-protobuf": {
                "schema": {"type": "string", "format": "binary"},
            },
        },
    }
}


class PartialSuccess(Schema):
    rejectedSpans: str = Field(
        description="How many spans were not stored or made no run (int64 as text); 0 with "
        "a warning"
    )
    errorMessage: str = Field(description="Why, per trace and span; or the warning")


class ExportOut(Schema):
    partialSuccess: PartialSuccess | None = None


@router.post(
    "/v1/traces",
    response=with_errors({200: ExportOut}, 400, 413, 415),
    openapi_extra=OTLP_BODY,
    summary="Export traces (OTLP/HTTP)",
    exclude_none=True,
)
def export_traces(request: HttpRequest):
    """OTLP/HTTP trace export, `application/json` or `application/x-protobuf` (gzip allowed).
    Each agent span with its chat and tool spans becomes one run. Answers the OTLP success
    shape (`{}`, or an empty protobuf ExportTraceServiceResponse), with `partialSuccess` when
    something is rejected (`rejectedSpans` and why: an agent span with nothing to judge, a
    straggler after EVALSITE_OTEL_LATE_WINDOW) or warned of (`rejectedSpans` 0: a rubric named
    that cannot judge; the run is stored unjudged); GET /otel/rejections lists them. 400: not
    valid OTLP; 413: a trace over EVALSITE_MAX_RUN_BYTES (nothing stored); 415: another
    Content-Type."""
    team = editor(request).team
    content_type = request.headers.get("Content-Type", "")
    spans = export_decode(request.body, content_type, request.headers.get("Content-Encoding", ""))
    result = otel_export(team=team, spans=spans)
    if content_type.split(";")[0].strip().lower() in PROTOBUF_TYPES:
        return _protobuf_answer(result)
    if result.message:
        return {
            "partialSuccess": {
                "rejectedSpans": str(result.rejected),
                "errorMessage": result.message,
            }
        }
    return {}


def _protobuf_answer(result: ExportResult) -> HttpResponse:
    answer = ExportTraceServiceResponse()
    if result.message:
        answer.partial_success.rejected_spans = result.rejected
        answer.partial_success.error_message = result.message
    return HttpResponse(answer.SerializeToString(), content_type=PROTOBUF_TYPES[0])


RejectionKindChoice = Literal[
    "no_content", "late", "no_run", "rubric", "too_large", "invalid", "expired"
]


class RejectionOut(Schema):
    id: str
    created_at: datetime
    kind: RejectionKindChoice = Field(
        description="no_content: an agent span with nothing to judge (no run); late: after "
        "EVALSITE_OTEL_LATE_WINDOW; no_run: under a span assembled without a run; rubric: the "
        "rubric named cannot judge (the run is stored unjudged); too_large / invalid: the run "
        "could not be stored; expired: spans that never joined a run, deleted"
    )
    trace_id: str
    span_id: str = Field(description="The agent span, or the first span rejected; may be empty")
    spans: int = Field(description="Spans not stored in a run; 0 for a warning")
    reason: str


class RejectionPageOut(Schema):
    items: list[RejectionOut]


@router.get("/rejections", response=with_errors({200: RejectionPageOut}))
def list_rejections(
    request: HttpRequest,
    limit: int = Query(
        50, ge=1, le=INT_MAX, description="How many, capped at EVALSITE_PAGE_SIZE_MAX"
    ),
):
    """The team's newest OTLP rejections and warnings first (the newest
    EVALSITE_OTEL_REJECTIONS_KEPT are kept): what made no run, and why."""
    rows = otel_rejections_list(team=caller(request).team, limit=page_size(limit))
    return {"items": [_rejection_out(r) for r in rows]}


def _rejection_out(row: OtelRejection) -> dict:
    return {
        "id": str(row.id),
        "created_at": row.created_at,
        "kind": row.kind,
        "trace_id": row.trace_id,
        "span_id": row.span_id,
        "spans": row.spans,
        "reason": row.reason,
    }


class RubricRef(Schema):
    id: str
    slug: str
    name: str


class ServiceRubricOut(Schema):
    service_name: str
    rubric: RubricRef


class ServiceRubricIn(Schema):
    model_config = ConfigDict(extra="forbid")
    service_name: str = Field(
        min_length=1, max_length=200, description="The resource's service.name"
    )
    rubric: str | None = Field(
        max_length=200, description="Rubric id or slug; null removes the service's default"
    )


def _out(row) -> dict:
    r = row.rubric
    return {
        "service_name": row.service_name,
        "rubric": {"id": str(r.id), "slug": r.slug, "name": r.name},
    }


@router.get("/services", response=with_errors({200: list[ServiceRubricOut]}))
def list_services(request: HttpRequest):
    """The team's default rubric per `service.name`: runs from spans that name no
    `evalsite.rubric` are judged with their service's."""
    return [_out(row) for row in otel_services_list(team=caller(request).team)]


@router.put("/services", response=with_errors({200: list[ServiceRubricOut]}, 400))
def set_service(request: HttpRequest, payload: ServiceRubricIn):
    """Set (or with `rubric: null`, remove) a service's default rubric; owners and API keys
    only. Answers the whole list."""
    team = manager(request).team
    otel_service_set(team=team, service_name=payload.service_name, rubric=payload.rubric)
    return [_out(row) for row in otel_services_list(team=team)]
