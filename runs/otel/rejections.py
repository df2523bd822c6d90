"""What OTLP ingest could not make a run of, and warnings about runs it stored: said in the
export's answer (OTLP ``partialSuccess``) when known then, and recorded for the team either way
(GET /api/otel/rejections, the OpenTelemetry settings page), the newest
EVALSITE_OTEL_REJECTIONS_KEPT per team."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings

from teams.models import Team

from .models import OtelRejection, RejectionKind

# An answer names this many reasons; the rest are counted (the team's list has them all).
ANSWER_REASONS = 5
DOCS = "docs/otel.md"


@dataclass(frozen=True)
class Rejection:
    kind: str
    trace_id: str
    span_id: str
    # Spans not stored or dropped; 0: a warning about a run that was stored.
    spans: int
    reason: str


def no_content(trace_id: str, span_id: str, spans: int) -> Rejection:
    return Rejection(
        RejectionKind.NO_CONTENT,
        trace_id,
        span_id,
        spans,
        f"trace {trace_id} span {span_id}: no input and no output messages to judge in the agent "
        "span and its descendants (no GenAI attributes or events: set the instrumentation's "
        "message content capture on, e.g. OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="
        f"SPAN_ONLY for the OpenTelemetry Python instrumentations; see {DOCS}); no run was made",
    )


def late(trace_id: str, span_id: str, spans: int, under: str) -> Rejection:
    window = settings.EVALSITE_OTEL_LATE_WINDOW
    return Rejection(
        RejectionKind.LATE,
        trace_id,
        span_id,
        spans,
        f"trace {trace_id} span {span_id}: arrived more than {window:g} s "
        f"(EVALSITE_OTEL_LATE_WINDOW) after the run it belongs to (with span {under} above it) "
        "was assembled; not added to it",
    )


def no_run(trace_id: str, span_id: str, spans: int, ancestor_id: str) -> Rejection:
    return Rejection(
        RejectionKind.NO_RUN,
        trace_id,
        span_id,
        spans,
        f"trace {trace_id} span {span_id}: arrived after span {ancestor_id} above it was "
        "assembled without a run (no agent span over it, or its agent made no run); not stored "
        "in any run",
    )


def rubric_problem(trace_id: str, span_id: str, problem: str) -> Rejection:
    return Rejection(
        RejectionKind.RUBRIC,
        trace_id,
        span_id,
        0,
        f"trace {trace_id} span {span_id}: {problem} (evalsite.rubric); the run is stored unjudged",
    )


def expired(trace_id: str, spans: int) -> Rejection:
    hours = settings.EVALSITE_OTEL_SPAN_TTL_HOURS
    return Rejection(
        RejectionKind.EXPIRED,
        trace_id,
        "",
        spans,
        f"trace {trace_id}: {spans} span(s) never joined a run (no agent or root span over them "
        f"arrived within EVALSITE_OTEL_SPAN_TTL_HOURS={hours:g}); deleted",
    )


def dropped(kind: str, trace_id: str, span_id: str, spans: int, why: str) -> Rejection:
    """A run found too large or invalid by a task, where nobody could be answered."""
    return Rejection(kind, trace_id, span_id, spans, f"trace {trace_id} span {span_id}: {why}")


def answer_message(rejections: list[Rejection]) -> str:
    """The OTLP ``errorMessage``: the first reasons, and how many more there are."""
    reasons = [r.reason for r in rejections[:ANSWER_REASONS]]
    rest = len(rejections) - len(reasons)
    if rest:
        reasons.append(f"and {rest} more (GET /api/otel/rejections lists them)")
    return "; ".join(reasons)


def otel_rejections_record(*, team: Team, rejections: Iterable[Rejection]) -> int:
    """Store rejections and keep only the team's newest EVALSITE_OTEL_REJECTIONS_KEPT."""
    rows = [
        OtelRejection(
            team=team,
            kind=r.kind,
            trace_id=r.trace_id,
            span_id=r.span_id,
            spans=r.spans,
            reason=r.reason,
        )
        for r in rejections
    ]
    if not rows:
        return 0
    OtelRejection.objects.bulk_create(rows)
    keep = max(0, settings.EVALSITE_OTEL_REJECTIONS_KEPT)
    newest = OtelRejection.objects.filter(team=team).order_by("-created_at", "-id")
    # A bounded tail past the cap (this write's rows and some): the index reads it in order.
    stale = list(newest.values_list("pk", flat=True)[keep : keep + len(rows) + 100])
    if stale:
        OtelRejection.objects.filter(pk__in=stale).delete()
    return len(rows)


def otel_rejections_list(*, team: Team, limit: int) -> list[OtelRejection]:
    """The team's newest rejections first, at most ``limit``."""
    return list(OtelRejection.objects.filter(team=team).order_by("-created_at", "-id")[:limit])
