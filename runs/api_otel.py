"""OpenTelemetry ingest: POST /api/otel/v1/traces (OTLP/HTTP, JSON or protobuf) and the team's
default rubric per ``service.name`` (GET/PUT /api/otel/services). docs/api.md, "OpenTelemetry
ingest", says what maps to what."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from ninja import Field, Router, Schema
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from pydantic import ConfigDict

from evalsite.schemas import with_errors
from teams.api import caller, editor, manager

from .otel.decode import PROTOBUF_TYPES, export_decode
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
    rejectedSpans: str = Field(description="How many spans were not stored (int64 as text)")
    errorMessage: str


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
    shape (`{}`, or an empty protobuf ExportTraceServiceResponse), with `partialSuccess` naming
    spans that arrived after their run was assembled. 400: not valid OTLP; 413: a trace over
    EVALSITE_MAX_RUN_BYTES (nothing stored); 415: another Content-Type."""
    team = editor(request).team
    content_type = request.headers.get("Content-Type", "")
    spans = export_decode(request.body, content_type, request.headers.get("Content-Encoding", ""))
    result = otel_export(team=team, spans=spans)
    if content_type.split(";")[0].strip().lower() in PROTOBUF_TYPES:
        return _protobuf_answer(result)
    if result.late:
        return {
            "partialSuccess": {
                "rejectedSpans": str(result.late),
                "errorMessage": result.rejection(),
            }
        }
    return {}


def _protobuf_answer(result: ExportResult) -> HttpResponse:
    answer = ExportTraceServiceResponse()
    if result.late:
        answer.partial_success.rejected_spans = result.late
        answer.partial_success.error_message = result.rejection()
    return HttpResponse(answer.SerializeToString(), content_type=PROTOBUF_TYPES[0])


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
