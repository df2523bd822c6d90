"""Bad exports cost bounded work: garbage, too many attributes or events on a span, too many
spans in a trace. Each is a 4xx naming the limit (the setting), and nothing is stored."""

from __future__ import annotations

import pytest

from runs.models import AgentRun, OtelSpan
from tests.api_client import assert_error
from tests.otel.otlp import S, new_trace_id, two_tool_trace


@pytest.mark.parametrize("encoding", ["json", "protobuf"])
def test_a_span_with_more_attributes_than_allowed_is_a_413_naming_the_setting(
    send, team, settings, encoding
):
    settings.EVALSITE_OTEL_MAX_ATTRIBUTES = 100
    trace = two_tool_trace()
    trace["tool1"].attributes.update({f"attr.{i}": i for i in range(10_000)})

    error = assert_error(send(list(trace.values()), encoding), 413)

    assert error["extra"]["setting"] == "EVALSITE_OTEL_MAX_ATTRIBUTES"
    assert error["extra"]["limit"] == 100
    assert "10,00" in error["message"]  # 10,002 attributes: the span's own and ours
    assert not OtelSpan.objects.exists() and not AgentRun.objects.exists()


@pytest.mark.parametrize("encoding", ["json", "protobuf"])
def test_a_span_with_more_events_than_allowed_is_a_413(send, team, settings, encoding):
    settings.EVALSITE_OTEL_MAX_EVENTS = 10
    trace = two_tool_trace()
    trace["chat1"].events = [("log", {"i": i}) for i in range(11)]

    error = assert_error(send(list(trace.values()), encoding), 413)

    assert error["extra"]["setting"] == "EVALSITE_OTEL_MAX_EVENTS"
    assert not OtelSpan.objects.exists()


def test_a_trace_of_more_spans_than_allowed_is_a_413_even_over_several_exports(
    send, team, settings
):
    settings.EVALSITE_OTEL_MAX_TRACE_SPANS = 50
    t = new_trace_id()
    root = S("invoke_agent big", t, attributes={"gen_ai.operation.name": "invoke_agent"})
    children = [S(f"step {i}", t, parent=root.span_id) for i in range(60)]

    assert send(children[:30]).status_code == 200  # staged: the trace is not over yet
    error = assert_error(send([*children[30:], root], "protobuf"), 413)

    assert error["extra"]["setting"] == "EVALSITE_OTEL_MAX_TRACE_SPANS"
    assert error["extra"]["trace_id"] == t
    assert "61 spans" in error["message"]
    assert OtelSpan.objects.count() == 30 and not AgentRun.objects.exists()


def test_garbage_protobuf_is_a_400_saying_what_it_is_not(post_raw, team):
    error = assert_error(post_raw(b"\xff\x00garbage" * 100, "application/x-protobuf"), 400)
    assert "ExportTraceServiceRequest" in error["message"]
