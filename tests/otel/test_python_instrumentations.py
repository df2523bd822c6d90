"""End to end with the real Python instrumentations: the real ``openai`` client runs a one-tool
agent loop (tests/otel/python_agent.py) against a scripted fake model, instrumented in turn by
opentelemetry-instrumentation-openai-v2, openinference-instrumentation-openai and Traceloop's
opentelemetry-instrumentation-openai; the real SDK exporter (OTLP/HTTP protobuf) sends the
spans to the live server, which assembles the run in the request (no worker: nothing is
judged here)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from runs.models import AgentRun
from tests.otel.otlp import QUESTION
from tests.otel.python_agent import (
    ANSWER,
    CALL_ID,
    FLAVOURS,
    GENAI_ENV,
    SYSTEM,
    TOOL_RESULT,
    FakeAgentModel,
    flavour,
    run_agent,
)
from tests.otel.test_ingest import kinds


@pytest.fixture(scope="module")
def agent_model() -> Iterator[FakeAgentModel]:
    with FakeAgentModel() as model:
        yield model


@pytest.mark.parametrize("name", FLAVOURS)
def test_an_instrumented_openai_agent_loop_arrives_as_one_whole_run(
    name, agent_model, live_server, api_key, team, monkeypatch
):
    if name == "genai":
        for key, value in GENAI_ENV.items():
            monkeypatch.setenv(key, value)
    exporter = OTLPSpanExporter(
        endpoint=live_server.url + "/api/otel/v1/traces",
        headers={"Authorization": f"Bearer {api_key}"},
    )
    provider = TracerProvider(resource=Resource.create({"service.name": "support-agent"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    instrumentation = flavour(name)
    instrumentation.instrument(provider)
    try:
        assert run_agent(instrumentation, provider, agent_model.url) == ANSWER
    finally:
        instrumentation.uninstrument()
    assert provider.force_flush(10_000)
    provider.shutdown()

    run = AgentRun.objects.get(team=team)
    assert run.agent == "support-bot"
    assert kinds(run) == [
        ("message", "system", SYSTEM),
        ("message", "user", QUESTION),
        ("call", "lookup_order", CALL_ID, {"order": 77}),
        ("result", "lookup_order", CALL_ID, TOOL_RESULT, False),
        ("message", "assistant", ANSWER),
    ]
    assert run.task_text == QUESTION and run.output_text == ANSWER
    assert run.metadata["gen_ai.usage.input_tokens"] == 52 + 71
    assert run.metadata["gen_ai.usage.output_tokens"] == 9 + 14
