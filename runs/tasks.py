"""Runs' Celery tasks (OpenTelemetry ingest, runs/otel/services.py): parse ids, call one
service. The judging tasks are judging/tasks.py."""

from celery import shared_task
from django.conf import settings

from teams.models import Team

from .otel.export import DRAIN_TASK, otel_export_kick, otel_exports_drain
from .otel.services import ASSEMBLE_TASK, otel_sweep, otel_trace_assemble


@shared_task(name=ASSEMBLE_TASK, acks_late=True, ignore_result=True, time_limit=120, max_retries=0)
def otel_assemble(team_id: str, trace_ids: list[str]) -> int:
    """Make the runs of the agent spans of these traces and merge their stragglers (sent
    EVALSITE_OTEL_ASSEMBLE_DELAY seconds after an export brought them); what cannot be made a
    run is recorded as the team's rejections. Idempotent: a redelivered message finds the spans
    assembled. The number of runs made. (Celery's Django fix-up closes stale database
    connections around every task.)"""
    team = Team.objects.filter(pk=team_id).first()
    if team is None:
        return 0
    return sum(len(otel_trace_assemble(team=team, trace_id=t).made) for t in trace_ids)


@shared_task(name="runs.tasks.otel_sweep", ignore_result=True, time_limit=120)
def otel_sweep_task() -> dict:
    made, deleted = otel_sweep()
    return {"assembled": made, "deleted": deleted}


@shared_task(
    name=DRAIN_TASK,
    acks_late=True,
    ignore_result=True,
    time_limit=int(
        settings.EVALSITE_OTEL_EXPORT_TIMEOUT * settings.EVALSITE_OTEL_EXPORT_MAX_BATCHES
    )
    + 120,
    max_retries=0,
)
def otel_export_drain() -> dict:
    """Send the verdicts owed to teams' OTLP endpoints (runs/otel/export.py). Failures are
    retried through the outbox's own backoff, never by Celery; a redelivered message finds the
    sent rows gone and the claimed ones held."""
    report = otel_exports_drain()
    if report.more:
        otel_export_kick(0)
    return {"sent_events": report.sent_events, "failed": report.failed_requests}
