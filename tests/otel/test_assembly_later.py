"""With EVALSITE_OTEL_ASSEMBLE_DELAY > 0 the export request only stages; the assembly task (or,
when its message was lost, the sweeper) makes the run; staged spans expire."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from runs.models import AgentRun, OtelSpan
from runs.otel.services import otel_sweep
from runs.tasks import otel_assemble
from tests.otel.otlp import S, new_trace_id, two_tool_trace


def test_the_request_stages_and_the_task_assembles_once(send, team, settings):
    settings.EVALSITE_OTEL_ASSEMBLE_DELAY = 30
    trace = two_tool_trace()
    assert send(list(trace.values())).status_code == 200
    assert not AgentRun.objects.exists() and OtelSpan.objects.count() == 6

    assert otel_assemble(str(team.pk), [trace["agent"].trace_id]) == 1
    assert otel_assemble(str(team.pk), [trace["agent"].trace_id]) == 0  # redelivered: nothing

    [run] = AgentRun.objects.filter(team=team)
    assert [s["kind"] for s in run.trajectory()].count("tool_result") == 2


def test_the_sweeper_assembles_a_trace_whose_task_was_lost_and_expires_old_spans(
    send, team, settings
):
    settings.EVALSITE_OTEL_ASSEMBLE_DELAY = 30
    settings.EVALSITE_OTEL_SPAN_TTL_HOURS = 1
    trace = two_tool_trace()
    send(list(trace.values()))
    orphan = S("tool", new_trace_id(), parent="00f067aa0ba902b7")  # its agent never comes
    send([orphan])

    assert otel_sweep() == (0, 0)  # too early: the task may still come
    made, deleted = otel_sweep(now=timezone.now() + timedelta(minutes=2))
    assert (made, deleted) == (1, 0)
    assert AgentRun.objects.filter(team=team).count() == 1

    made, deleted = otel_sweep(now=timezone.now() + timedelta(hours=2))
    assert (made, deleted) == (0, 7)
    assert not OtelSpan.objects.exists() and AgentRun.objects.count() == 1


def test_an_agent_whose_root_never_comes_is_assembled_by_the_sweeper_after_a_while(send, team):
    trace = two_tool_trace()
    trace["agent"].parent = "00f067aa0ba902b7"  # a parent span in another service
    send(list(trace.values()))
    assert not AgentRun.objects.exists()

    assert otel_sweep(now=timezone.now() + timedelta(minutes=2)) == (0, 0)  # may still come
    assert otel_sweep(now=timezone.now() + timedelta(minutes=11)) == (1, 0)
    [run] = AgentRun.objects.filter(team=team)
    assert run.external_id.endswith(trace["agent"].span_id)
