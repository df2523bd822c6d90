"""End to end: the real OpenTelemetry Python SDK and its OTLP/HTTP (protobuf) exporter send a
two-tool agent trace in two batches to the live server; a real worker assembles and judges it."""

from __future__ import annotations

import json

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode

from runs.models import AgentRun, CriterionVerdict, Evaluation
from runs.models import Status as RunStatus
from tests.conftest import wait_for
from tests.otel.otlp import ANSWER, QUESTION, call, msgs, response, text

pytestmark = pytest.mark.worker


def _tool(tracer, name: str, call_id: str, arguments: dict, result: str) -> None:
    with tracer.start_as_current_span(f"execute_tool {name}") as span:
        span.set_attributes(
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.call.arguments": json.dumps(arguments),
                "gen_ai.tool.call.result": result,
            }
        )
        span.set_status(Status(StatusCode.OK))


def _chat(tracer, inputs: list, outputs: list) -> None:
    with tracer.start_as_current_span("chat gpt-4o") as span:
        span.set_attributes(
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": msgs(*inputs),
                "gen_ai.output.messages": msgs(*outputs),
            }
        )


def test_the_sdk_exporter_sends_a_two_tool_trace_in_two_batches_and_it_is_judged_once(
    worker, fake_judge, live_server, api_key, team, make_rubric
):
    rubric = make_rubric()
    exporter = OTLPSpanExporter(
        endpoint=live_server.url + "/api/otel/v1/traces",
        headers={"Authorization": f"Bearer {api_key}"},
    )
    provider = TracerProvider(resource=Resource.create({"service.name": "support-agent"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("tests")
    user = text("user", QUESTION)

    with tracer.start_as_current_span("invoke_agent support-bot") as agent:
        agent.set_attributes(
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "support-bot",
                "evalsite.rubric": rubric.slug,
                "gen_ai.input.messages": msgs(user),
            }
        )
        _chat(tracer, [user], [call("call_1", "lookup_order", {"order": 77})])
        _tool(tracer, "lookup_order", "call_1", {"order": 77}, '{"damaged": true}')
        assert provider.force_flush(10_000)  # batch 1: the first chat and tool spans
        assert not AgentRun.objects.exists()  # their agent span has not ended yet

        history = [user, call("call_1", "lookup_order", {"order": 77}), response("call_1", "ok")]
        _chat(tracer, history, [call("call_2", "refund", {"order": 77})])
        _tool(tracer, "refund", "call_2", {"order": 77}, "refund R-9 issued")
        _chat(
            tracer, [*history, response("call_2", "refund R-9 issued")], [text("assistant", ANSWER)]
        )
        agent.set_attribute("gen_ai.output.messages", msgs(text("assistant", ANSWER)))
    assert provider.force_flush(10_000)  # batch 2: the rest and the agent span
    provider.shutdown()

    run = wait_for(lambda: AgentRun.objects.filter(team=team).first(), timeout=30, message="run")
    final = (RunStatus.SUCCEEDED, RunStatus.FAILED)
    evaluation = wait_for(
        lambda: Evaluation.objects.filter(run=run, status__in=final).first(),
        timeout=60,
        message="the run judged",
    )
    assert evaluation.status == RunStatus.SUCCEEDED, evaluation.error
    assert AgentRun.objects.filter(team=team).count() == 1
    assert Evaluation.objects.filter(run=run).count() == 1
    assert evaluation.rubric_version == rubric.current_version and evaluation.judge_calls == 1
    assert CriterionVerdict.objects.filter(evaluation=evaluation).count() == 3
    steps = run.trajectory()
    calls = [(s["tool"], s["call_id"]) for s in steps if s["kind"] == "tool_call"]
    results = [(s["tool"], s["content"]) for s in steps if s["kind"] == "tool_result"]
    assert calls == [("lookup_order", "call_1"), ("refund", "call_2")]
    assert results == [("lookup_order", '{"damaged": true}'), ("refund", "refund R-9 issued")]
    assert run.metadata["service.name"] == "support-agent" and run.metadata["otel"] is True
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED and run.passed is not None
