"""Runs' Celery tasks (OpenTelemetry ingest, runs/otel/services.py): parse ids, call one
service. The judging tasks are judging/tasks.py."""

from celery import shared_task

from teams.models import Team

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
