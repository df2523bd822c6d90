"""POST /api/otel/v1/traces: an agent trace becomes one run, in either encoding, once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from runs.models import AgentRun, Evaluation, OtelSpan
from runs.otel.services import otel_sweep
from tests.otel.otlp import ANSWER, QUESTION, S, call, msgs, new_trace_id, text, two_tool_trace


def kinds(run: AgentRun) -> list[tuple]:
    out = []
    for s in run.trajectory():
        if s["kind"] == "message":
            out.append(("message", s["role"], s["text"]))
        elif s["kind"] == "tool_call":
            out.append(("call", s["tool"], s["call_id"], s["arguments"]))
        elif s["kind"] == "tool_result":
            out.append(("result", s["tool"], s["call_id"], s["content"], s["is_error"]))
        else:
            out.append((s["kind"], s.get("raw")))
    return out


EXPECTED = [
    ("message", "system", "You are Acme support."),
    ("message", "user", QUESTION),
    ("call", "lookup_order", "call_1", {"order": 77}),
    ("result", "lookup_order", "call_1", '{"status": "delivered", "damaged": true}', False),
    ("call", "refund", "call_2", {"order": 77}),
    ("result", "refund", "call_2", "refund R-9 issued", False),
    ("message", "assistant", ANSWER),
]


@pytest.mark.parametrize("encoding", ["json", "protobuf", "gzip"])
def test_a_two_tool_agent_trace_becomes_one_run_with_every_step_in_order(send, team, encoding):
    trace = two_tool_trace()
    response = send(list(trace.values()), encoding)

    assert response.status_code == 200, response.content
    if encoding == "protobuf":
        assert response["Content-Type"] == "application/x-protobuf"
        answer = ExportTraceServiceResponse.FromString(response.content)
        assert not answer.HasField("partial_success")
    else:
        assert response.json() == {}
    run = AgentRun.objects.get(team=team)
    agent = trace["agent"]
    assert run.external_id == f"otel:{agent.trace_id}:{agent.span_id}"
    assert run.agent == "support-bot"
    assert run.metadata == {
        "otel": True,
        "trace_id": agent.trace_id,
        "span_id": agent.span_id,
        "service.name": "support-agent",
    }
    assert kinds(run) == EXPECTED
    assert [s["source"] for s in run.trajectory()][:2] == ["input", "input"]
    assert run.task_text == QUESTION and run.output_text == ANSWER
    assert sorted(run.tools.values_list("tool", flat=True)) == ["lookup_order", "refund"]
    assert not Evaluation.objects.filter(run=run).exists()  # no rubric named: stored, not judged


def test_the_same_export_twice_stores_every_span_and_the_run_once(send, team):
    spans = list(two_tool_trace().values())
    assert send(spans).status_code == 200
    assert send(spans, "protobuf").status_code == 200

    assert AgentRun.objects.filter(team=team).count() == 1
    assert OtelSpan.objects.filter(team=team).count() == len(spans)


def test_children_exported_before_their_agent_span_join_its_run_and_are_pruned_after_the_window(
    send, team, settings
):
    trace = two_tool_trace()
    children = [trace[k] for k in ("chat1", "tool1", "chat2", "tool2", "chat3")]
    send(children[:2])
    send(children[2:], "protobuf")
    assert not AgentRun.objects.exists()  # no agent span yet

    send([trace["agent"]])

    [run] = AgentRun.objects.filter(team=team)
    assert kinds(run) == EXPECTED
    assembled = OtelSpan.objects.filter(run=run, assembled_at__isnull=False)
    assert assembled.count() == 6 and all(s.attributes for s in assembled)  # kept for stragglers
    otel_sweep(now=timezone.now() + timedelta(seconds=settings.EVALSITE_OTEL_LATE_WINDOW + 1))
    assert not any(s.attributes or s.size for s in assembled.all())


def test_a_failed_tool_span_is_an_error_result(send, team):
    t = new_trace_id()
    agent = S(
        "agent",
        t,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.input.messages": msgs(text("user", "Cancel it")),
        },
    )
    tool = S("execute_tool cancel", t, parent=agent.span_id, start=1, error="order is locked",
             attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "cancel",
                         "gen_ai.tool.call.id": "c1", "gen_ai.tool.call.arguments": "not json"})  # fmt: skip
    send([tool, agent])

    steps = AgentRun.objects.get(team=team).trajectory()
    call = next(s for s in steps if s["kind"] == "tool_call")
    result = next(s for s in steps if s["kind"] == "tool_result")
    assert call["arguments"] == "not json" and "arguments_not_json" in call["flags"]
    assert result["is_error"] is True and result["content"] == "order is locked"
    assert result["tool"] == "cancel"


def test_a_root_span_without_invoke_agent_is_the_agent_and_old_message_events_are_read(send, team):
    t = new_trace_id()
    root = S("handle request", t, start=0, end=50)
    chat = S(
        "chat",
        t,
        parent=root.span_id,
        start=1,
        attributes={"gen_ai.operation.name": "chat", "gen_ai.unknown.thing": "ignored"},
        events=[
            ("gen_ai.system.message", {"content": "Be brief."}),
            ("gen_ai.user.message", {"content": "Weather in Oslo?"}),
            ("gen_ai.choice", {"message": '{"role": "assistant", "content": "", "tool_calls": '
                               '[{"id": "w1", "type": "function", "function": {"name": "weather", '
                               '"arguments": "{\\"city\\": \\"Oslo\\"}"}}]}'}),
        ],
    )  # fmt: skip
    chat2 = S(
        "chat",
        t,
        parent=root.span_id,
        start=5,
        attributes={"gen_ai.operation.name": "chat"},
        events=[
            ("gen_ai.tool.message", {"id": "w1", "content": "4°C, rain"}),
            ("gen_ai.choice", {"content": "4°C and rain in Oslo."}),
        ],
    )
    send([chat, chat2, root], "protobuf", resource={"service.name": "weather"})

    run = AgentRun.objects.get(team=team)
    assert run.agent == "weather"
    assert kinds(run) == [
        ("message", "system", "Be brief."),
        ("message", "user", "Weather in Oslo?"),
        ("call", "weather", "w1", {"city": "Oslo"}),
        ("result", "weather", "w1", "4°C, rain", False),
        ("message", "assistant", "4°C and rain in Oslo."),
    ]


def test_a_nested_agent_is_one_tool_step_of_its_supervisor(send, team):
    t = new_trace_id()
    boss = S("invoke_agent supervisor", t, end=90, attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "supervisor",
        "gen_ai.input.messages": msgs(text("user", "Write about otters")),
        "gen_ai.output.messages": msgs(text("assistant", "Here is the article."))})  # fmt: skip
    research = S("invoke_agent research", t, parent=boss.span_id, start=1, end=40, attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "research",
        "gen_ai.input.messages": msgs(text("user", "Find otter facts")),
        "gen_ai.output.messages": msgs(text("assistant", "Otters hold hands."))})  # fmt: skip
    inner = S("chat", t, parent=research.span_id, start=2, attributes={
        "gen_ai.operation.name": "chat",
        "gen_ai.output.messages": msgs(text("assistant", "inner thought"))})  # fmt: skip
    send([inner, research, boss])

    run = AgentRun.objects.get(team=team)
    assert run.external_id.endswith(boss.span_id) and run.agent == "supervisor"
    assert kinds(run) == [
        ("message", "user", "Write about otters"),
        ("call", "research", f"agent:{research.span_id}", {"input": "Find otter facts"}),
        ("result", "research", f"agent:{research.span_id}", "Otters hold hands.", False),
        ("message", "assistant", "Here is the article."),
    ]


def test_a_sub_agent_exported_before_its_supervisor_ended_is_not_a_run_of_its_own(send, team):
    t = new_trace_id()
    boss = S("invoke_agent supervisor", t, end=90, attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "supervisor",
        "gen_ai.input.messages": msgs(text("user", "Write about otters"))})  # fmt: skip
    research = S("invoke_agent research", t, parent=boss.span_id, start=1, end=40, attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "research",
        "gen_ai.output.messages": msgs(text("assistant", "Otters hold hands."))})  # fmt: skip
    send([research])  # the supervisor is still running
    assert not AgentRun.objects.exists()

    send([boss])

    [run] = AgentRun.objects.filter(team=team)
    assert run.agent == "supervisor"
    assert [s.get("tool") for s in run.trajectory() if s["kind"] == "tool_call"] == ["research"]


def test_an_agent_under_a_request_span_is_assembled_when_the_root_arrives(send, team):
    t = new_trace_id()
    root = S("POST /chat", t, end=200)
    trace = two_tool_trace(t)
    trace["agent"].parent = root.span_id
    send(list(trace.values()))
    assert not AgentRun.objects.exists()  # the agent's parent may still be running

    send([root])

    [run] = AgentRun.objects.filter(team=team)
    assert run.external_id == f"otel:{t}:{trace['agent'].span_id}"
    assert kinds(run) == EXPECTED
    assert OtelSpan.objects.get(span_id=root.span_id).assembled_at is not None  # pruned


def test_the_system_prompt_only_the_first_chat_span_holds_leads_the_run_when_the_agent_span_has_its_own_input(
    send, team
):
    t = new_trace_id()
    agent = S("invoke_agent bot", t, start=0, end=20,
              attributes={"gen_ai.operation.name": "invoke_agent",
                          "gen_ai.input.messages": msgs(text("user", QUESTION))})  # fmt: skip
    chat = S("chat", t, parent=agent.span_id, start=1, end=10,
             attributes={"gen_ai.operation.name": "chat",
                         "gen_ai.input.messages": msgs(text("system", "You are Acme support."),
                                                       text("user", QUESTION)),
                         "gen_ai.output.messages": msgs(text("assistant", ANSWER))})  # fmt: skip
    send([chat, agent])

    assert kinds(AgentRun.objects.get(team=team)) == [
        ("message", "system", "You are Acme support."),
        ("message", "user", QUESTION),
        ("message", "assistant", ANSWER),
    ]


def test_a_tool_span_without_a_call_id_answers_the_open_call_of_that_tool(send, team):
    t = new_trace_id()
    agent = S("agent", t, start=0, end=40, attributes={"gen_ai.operation.name": "invoke_agent"})
    chat = S("chat", t, parent=agent.span_id, start=1, end=10,
             attributes={"gen_ai.operation.name": "chat",
                         "gen_ai.input.messages": msgs(text("user", QUESTION)),
                         "gen_ai.output.messages": msgs(call("c7", "lookup_order", {"order": 77}))})  # fmt: skip
    tool = S("lookup_order.tool", t, parent=agent.span_id, start=11, end=20,
             attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_order",
                         "gen_ai.tool.call.arguments": '{"order": 77}',
                         "gen_ai.tool.call.result": "delivered"})  # fmt: skip
    send([chat, tool, agent])

    assert kinds(AgentRun.objects.get(team=team)) == [
        ("message", "user", QUESTION),
        ("call", "lookup_order", "c7", {"order": 77}),
        ("result", "lookup_order", "c7", "delivered", False),
    ]
