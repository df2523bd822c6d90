"""A span arriving after its agent span's run was assembled (a straggler) joins the run within
EVALSITE_OTEL_LATE_WINDOW: the run is assembled again, its content replaced and judged again
once per change (the earlier evaluation kept); after the window it is rejected."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from judging.services.execute import evaluation_claim, evaluation_execute
from runs.models import AgentRun, Evaluation, OtelRejection, OtelSpan
from runs.otel.services import otel_sweep
from runs.tasks import otel_assemble
from tests.otel.otlp import S, two_tool_trace


def tool_results(run: AgentRun) -> list[str]:
    run.refresh_from_db()
    return [s["tool"] for s in run.trajectory() if s["kind"] == "tool_result"]


def judged_trace(send, make_rubric):
    """A trace whose run was assembled from the agent and first chat span, and judged."""
    rubric = make_rubric()
    trace = two_tool_trace(rubric=rubric.slug)
    assert send([trace["agent"], trace["chat1"]]).json() == {}
    run = AgentRun.objects.get()
    [first] = Evaluation.objects.filter(run=run)
    assert evaluation_execute(evaluation_id=str(first.id)).status == "succeeded"
    return trace, run, first


def test_a_straggler_joins_its_run_which_is_judged_again_once_and_a_retry_changes_nothing(
    send, team, make_rubric, fake_judge
):
    trace, run, first = judged_trace(send, make_rubric)
    assert tool_results(run) == []

    assert send([trace["tool1"]]).json() == {}

    assert tool_results(run) == ["lookup_order"]
    assert sorted(run.tools.values_list("tool", flat=True)) == ["lookup_order"]
    second = Evaluation.objects.filter(run=run).exclude(pk=first.pk).get()
    assert second.status == "queued" and run.status == "queued"
    first.refresh_from_db()
    assert first.status == "succeeded"  # kept as history
    assert run.external_id.endswith(trace["agent"].span_id) and AgentRun.objects.count() == 1

    retried = send([trace["tool1"]], "protobuf")  # the SDK retried the export

    assert not ExportTraceServiceResponse.FromString(retried.content).HasField("partial_success")
    assert Evaluation.objects.filter(run=run).count() == 2
    assert tool_results(run) == ["lookup_order"] and not OtelRejection.objects.exists()


def test_stragglers_before_the_re_judge_ran_are_judged_by_that_one_evaluation(
    send, team, make_rubric, fake_judge
):
    trace, run, _ = judged_trace(send, make_rubric)

    send([trace["tool1"], trace["chat2"]])
    send([trace["tool2"]], "protobuf")

    assert tool_results(run) == ["lookup_order", "refund"]
    [queued] = Evaluation.objects.filter(run=run, status="queued")
    assert evaluation_execute(evaluation_id=str(queued.id)).status == "succeeded"
    assert Evaluation.objects.filter(run=run).count() == 2


def test_a_straggler_adding_nothing_to_the_run_joins_it_and_is_not_judged_again(
    send, team, make_rubric, fake_judge
):
    trace, run, _ = judged_trace(send, make_rubric)
    before = run.content_hash
    http = S("GET /orders/77", run.metadata["trace_id"], parent=trace["agent"].span_id, start=12)

    assert send([http]).json() == {}

    run.refresh_from_db()
    assert run.content_hash == before and Evaluation.objects.filter(run=run).count() == 1
    assert OtelSpan.objects.get(span_id=http.span_id).run == run


def test_a_straggler_while_the_run_is_being_judged_is_judged_once_that_evaluation_ends(
    send, team, make_rubric, fake_judge
):
    rubric = make_rubric()
    trace = two_tool_trace(rubric=rubric.slug)
    send([trace["agent"], trace["chat1"]])
    run = AgentRun.objects.get()
    [first] = Evaluation.objects.filter(run=run)
    claim = evaluation_claim(evaluation_id=str(first.id))
    assert claim is not None  # a worker is judging the earlier content

    send([trace["tool1"]])

    assert tool_results(run) == ["lookup_order"]
    assert Evaluation.objects.filter(run=run).count() == 1  # one pending per version and judge
    agent = OtelSpan.objects.get(span_id=trace["agent"].span_id)
    assert agent.rejudge
    assert otel_sweep() == (0, 0) and Evaluation.objects.filter(run=run).count() == 1

    Evaluation.objects.filter(pk=first.pk).update(status="succeeded")  # the worker ended
    otel_sweep()

    assert Evaluation.objects.filter(run=run, status="queued").count() == 1
    agent.refresh_from_db()
    assert not agent.rejudge
    otel_sweep()
    assert Evaluation.objects.filter(run=run).count() == 2


def test_after_the_window_a_straggler_is_rejected_naming_the_window(
    send, team, make_rubric, settings
):
    settings.EVALSITE_OTEL_LATE_WINDOW = 60
    trace = two_tool_trace()
    send([trace["agent"], trace["chat1"]])
    run = AgentRun.objects.get()
    OtelSpan.objects.update(assembled_at=timezone.now() - timedelta(seconds=61))

    answer = send([trace["tool1"]]).json()["partialSuccess"]
    proto = ExportTraceServiceResponse.FromString(send([trace["tool2"]], "protobuf").content)

    assert answer["rejectedSpans"] == "1"
    assert "60 s (EVALSITE_OTEL_LATE_WINDOW)" in answer["errorMessage"]
    assert trace["tool1"].span_id in answer["errorMessage"]
    assert proto.partial_success.rejected_spans == 1
    assert "EVALSITE_OTEL_LATE_WINDOW" in proto.partial_success.error_message
    assert tool_results(run) == []
    assert list(OtelRejection.objects.filter(team=team).values_list("kind", flat=True)) == [
        "late",
        "late",
    ]


def test_with_a_delay_the_task_merges_stragglers_and_rejects_those_past_the_window(
    send, team, settings
):
    settings.EVALSITE_OTEL_ASSEMBLE_DELAY = 30
    settings.EVALSITE_OTEL_LATE_WINDOW = 60
    trace = two_tool_trace()
    t = trace["agent"].trace_id
    send([trace["agent"], trace["chat1"]])
    assert otel_assemble(str(team.pk), [t]) == 1
    run = AgentRun.objects.get()

    assert send([trace["tool1"]]).json() == {}  # staged; merged by the task
    assert tool_results(run) == []
    otel_assemble(str(team.pk), [t])
    assert tool_results(run) == ["lookup_order"]

    send([trace["tool2"]])
    earlier = timezone.now() - timedelta(seconds=61)
    OtelSpan.objects.filter(assembled_at__isnull=False).update(assembled_at=earlier)
    otel_assemble(str(team.pk), [t])  # the window passed before the task ran

    assert tool_results(run) == ["lookup_order"]
    [row] = OtelRejection.objects.filter(team=team)
    assert row.kind == "late" and row.span_id == trace["tool2"].span_id
