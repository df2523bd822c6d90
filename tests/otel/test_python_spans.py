"""The conventions on spans the real Python instrumentations wrote (tests/otel/spans/*.json,
captured by ``python -m tests.otel.python_agent``) and on the forms those files do not hold.
No database: decode, normalise and convert, as an export would."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runs.otel.conventions import normalize
from runs.otel.convert import agent_span_ids, descendants, operation_of, run_payload
from runs.otel.decode import Span, export_decode
from tests.otel.otlp import QUESTION, new_span_id
from tests.otel.python_agent import ANSWER, CALL_ID, FLAVOURS, SPANS_DIR, SYSTEM, TOOL_RESULT

EXPECTED_STEPS = [
    ("system", SYSTEM),
    ("user", QUESTION),
    ("call", CALL_ID, "lookup_order", {"order": 77}),
    ("result", CALL_ID, TOOL_RESULT),
    ("assistant", ANSWER),
]


def runs_of(spans: list[Span]) -> list[dict[str, Any]]:
    normalize(spans)
    rows = [(s.span_id, s.parent_span_id, operation_of(s.attributes)) for s in spans]
    by_id = {s.span_id: s for s in spans}
    return [run_payload(by_id[a], descendants(a, spans)) for a in agent_span_ids(rows)]


def steps(payload: dict[str, Any]) -> list[tuple]:
    out: list[tuple] = []
    for m in payload["input"]["messages"] + payload["output"]:
        if m["role"] == "tool":
            out.append(("result", m["tool_call_id"], m["content"]))
        elif m.get("tool_calls"):
            for c in m["tool_calls"]:
                fn = c["function"]
                out.append(("call", c["id"], fn["name"], json.loads(fn["arguments"])))
        else:
            out.append((m["role"], m["content"]))
    return out


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_captured_python_agent_trace_becomes_one_whole_run(flavour):
    body = (SPANS_DIR / f"{flavour}.json").read_bytes()
    [payload] = runs_of(export_decode(body, "application/json"))

    assert payload["agent"] == "support-bot"
    assert [m["role"] for m in payload["input"]["messages"]] == ["system", "user"]
    assert steps(payload) == EXPECTED_STEPS
    usage = {k: v for k, v in payload["metadata"].items() if k.startswith("gen_ai.usage")}
    assert usage == {"gen_ai.usage.input_tokens": 52 + 71, "gen_ai.usage.output_tokens": 9 + 14}


def span(name: str, attributes: dict[str, Any], parent: str = "", span_id: str = "") -> Span:
    return Span(
        trace_id="ab" * 16,
        span_id=span_id or new_span_id(),
        parent_span_id=parent,
        name=name,
        start_ns=len(parent),
        end_ns=100,
        attributes=attributes,
    )


def test_an_openinference_root_chain_with_no_agent_is_the_run_and_nested_chains_add_nothing():
    root = span("LangGraph", {
        "openinference.span.kind": "CHAIN", "input.mime_type": "application/json",
        "input.value": json.dumps({"messages": [{"type": "human", "content": QUESTION}]}),
        "output.mime_type": "application/json",
        "output.value": json.dumps({"messages": [{"type": "human", "content": QUESTION},
                                                 {"type": "ai", "content": ANSWER}]}),
    }, span_id="1" * 16)  # fmt: skip
    node = span("agent", {"openinference.span.kind": "CHAIN", "input.value": "step input",
                          "output.value": "step output"}, parent=root.span_id)  # fmt: skip
    llm = span("ChatOpenAI", {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.contents.0.message_content.type": "text",
        "llm.input_messages.0.message.contents.0.message_content.text": QUESTION,
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": ANSWER,
        "llm.token_count.prompt": 30, "llm.token_count.completion": 7, "session.id": "s-1",
    }, parent=node.span_id)  # fmt: skip

    [payload] = runs_of([root, node, llm])

    assert payload["agent"] == "LangGraph"
    assert steps(payload) == [("user", QUESTION), ("assistant", ANSWER)]
    assert node.attributes.get("gen_ai.input.messages") is None
    assert llm.attributes["gen_ai.conversation.id"] == "s-1"
    assert payload["metadata"]["gen_ai.usage.input_tokens"] == 30


def test_an_openinference_tool_span_takes_its_call_id_and_a_tool_message_its_answer():
    tool = span("search", {"openinference.span.kind": "TOOL", "tool.name": "search",
                           "tool_call.id": "c9", "input.value": '{"q": "x"}',
                           "output.value": "found"})  # fmt: skip
    llm = span("llm", {"openinference.span.kind": "LLM",
                       "llm.input_messages.0.message.role": "tool",
                       "llm.input_messages.0.message.tool_call_id": "c9",
                       "llm.input_messages.0.message.content": "found"})  # fmt: skip
    normalize([tool, llm])

    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.call.id"] == "c9"
    assert tool.attributes["gen_ai.tool.call.arguments"] == '{"q": "x"}'
    assert json.loads(llm.attributes["gen_ai.input.messages"]) == [
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c9", "response": "found"}]}
    ]


def test_older_openllmetry_usage_names_and_content_parts_are_read():
    llm = span("openai.chat", {
        "llm.request.type": "chat",
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": json.dumps([{"type": "text", "text": QUESTION}]),
        "gen_ai.completion.0.content": ANSWER,
        "gen_ai.usage.prompt_tokens": 11, "gen_ai.usage.completion_tokens": 4,
    })  # fmt: skip
    [payload] = runs_of([llm])

    assert steps(payload) == [("user", QUESTION), ("assistant", ANSWER)]
    assert payload["metadata"]["gen_ai.usage.input_tokens"] == 11
    assert payload["metadata"]["gen_ai.usage.output_tokens"] == 4


def test_a_root_traceloop_workflow_is_the_run_and_a_task_adds_nothing():
    workflow = span("answer.workflow", {
        "traceloop.span.kind": "workflow", "traceloop.entity.name": "answer",
        "traceloop.entity.input": json.dumps({"args": [QUESTION], "kwargs": {}}),
        "traceloop.entity.output": json.dumps(ANSWER),
    }, span_id="2" * 16)  # fmt: skip
    task = span("draft.task", {"traceloop.span.kind": "task", "traceloop.entity.name": "draft",
                               "traceloop.entity.input": '{"args": ["x"], "kwargs": {}}'},
                parent=workflow.span_id)  # fmt: skip

    [payload] = runs_of([workflow, task])

    assert payload["agent"] == "answer.workflow"  # no agent name: the span's
    assert steps(payload) == [("user", QUESTION), ("assistant", ANSWER)]
    assert "gen_ai.operation.name" not in task.attributes


def test_keys_the_span_already_has_in_genai_form_are_kept():
    llm = span("chat", {"llm.request.type": "chat", "gen_ai.prompt.0.content": "old form",
                        "gen_ai.input.messages": '[{"role": "user", "parts": []}]'})  # fmt: skip
    normalize([llm])

    assert llm.attributes["gen_ai.input.messages"] == '[{"role": "user", "parts": []}]'
