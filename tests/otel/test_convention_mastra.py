"""The Mastra convention (runs/otel/conventions/mastra.py) on spans Mastra's own exporter sent:
tests/otel/mastra_spans.json is a capture of tests/otel/node_mastra/run.mjs (regenerate it with
tests/otel/node_mastra/capture.py), decoded as the server decodes an export. No node, no database.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from runs.otel.conventions import normalize
from runs.otel.conventions.mastra import input_messages, output_messages
from runs.otel.convert import agent_span_ids, descendants, operation_of, rubric_ref, run_payload
from runs.otel.decode import Span

CAPTURE = Path(__file__).parent / "mastra_spans.json"
# What run.mjs scripts (tests/otel/node_mastra/run.mjs).
QUESTION = "Please refund order 77, it arrived broken."
ANSWER = "Your refund for order number 77 is on its way. Thanks for your patience!"
TASK = "Write a short brief on AI tutors in schools."
RESEARCH_PROMPT = "Find two facts about AI tutors in schools."
FACTS = "AI tutors give instant feedback; teachers still grade the essays."
WRITING_PROMPT = f"Write a two-sentence brief from these facts: {FACTS}"
BRIEF = "AI tutors give pupils instant feedback. Teachers keep the final say on essays."
FINAL = f"Here is your brief: {BRIEF}"


def captured() -> list[Span]:
    return [Span(**item) for item in json.loads(CAPTURE.read_text())]


def runs(spans: list[Span]) -> dict[str, tuple[Span, dict[str, Any]]]:
    """{agent name: (agent span, run payload)} of every trace, as the assembly makes them."""
    normalize(spans)
    out = {}
    for trace_id in {s.trace_id for s in spans}:
        trace = [s for s in spans if s.trace_id == trace_id]
        rows = ((s.span_id, s.parent_span_id, operation_of(s.attributes)) for s in trace)
        for agent_id in agent_span_ids(rows):
            agent = next(s for s in trace if s.span_id == agent_id)
            payload = run_payload(agent, descendants(agent_id, trace))
            out[payload["agent"]] = (agent, payload)
    return out


def calls_and_results(payload: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(tool name, parsed arguments, result) of every call in the output, in order."""
    results = {m["tool_call_id"]: m["content"] for m in payload["output"] if m["role"] == "tool"}
    return [
        (c["function"]["name"], json.loads(c["function"]["arguments"]), results.get(c["id"]))
        for m in payload["output"]
        for c in m.get("tool_calls", [])
    ]


def test_the_capture_holds_the_two_runs_mastra_traced_with_its_own_span_kinds():
    spans = captured()
    kinds = {s.attributes["mastra.span.type"] for s in spans}
    assert {"agent_run", "model_generation", "model_step", "model_inference", "tool_call"} <= kinds
    agents = [s.attributes["gen_ai.agent.name"] for s in spans if s.name.startswith("invoke_agent")]
    assert sorted(agents) == ["research-agent", "supervisor", "support-agent", "writing-agent"]
    # The gap the convention fills: no span of Mastra's carries the input messages.
    assert not any("gen_ai.input.messages" in s.attributes for s in spans)


def test_an_agent_run_span_gets_its_input_and_answer_as_genai_messages():
    support, _ = runs(captured())["support-agent"]
    assert support.attributes["mastra.agent_run.input"] == QUESTION  # text, as Mastra writes it
    assert json.loads(support.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
    ]
    assert json.loads(support.attributes["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}
    ]


def test_a_single_agent_with_a_tool_becomes_a_run_with_system_user_the_call_and_the_answer():
    _, run = runs(captured())["support-agent"]

    assert run["input"]["messages"] == [
        {"role": "system", "content": "You are Acme support. Look orders up before answering."},
        {"role": "user", "content": QUESTION},
    ]
    assert calls_and_results(run) == [
        ("lookupOrder", {"order": 77}, '{"order":77,"status":"delivered","damaged":true}')
    ]
    assert run["output"][-1] == {"role": "assistant", "content": ANSWER}
    assert [m for m in run["output"] if m["role"] == "assistant" and m["content"]] == [
        run["output"][-1]
    ]
    assert run["metadata"]["gen_ai.usage.input_tokens"] == 24  # two model calls of 12 and 7
    assert run["metadata"]["gen_ai.usage.output_tokens"] == 14
    assert run["metadata"]["service.name"] == "mastra-fixture"


def test_a_supervisor_is_one_run_whose_delegations_are_calls_with_the_task_and_the_answer():
    found = runs(captured())
    assert set(found) == {"support-agent", "supervisor"}  # the sub-agents are no runs of their own
    _, run = found["supervisor"]

    assert [m["role"] for m in run["input"]["messages"]] == ["system", "user"]
    assert run["input"]["messages"][1]["content"] == TASK
    assert calls_and_results(run) == [
        ("research-agent", {"input": RESEARCH_PROMPT}, FACTS),
        ("writing-agent", {"input": WRITING_PROMPT}, BRIEF),
    ]
    ids = [c["id"] for m in run["output"] for c in m.get("tool_calls", [])]
    assert ids == ["call_research", "call_writing"]  # the supervisor model's own call ids
    texts = [m["content"] for m in run["output"] if m["role"] == "assistant" and m["content"]]
    assert texts == [FINAL]  # the sub-agents' answers are results, not the supervisor's words
    # Every model call of the run, the sub-agents' included: 3 + 2 + 1 of 12 and 7 tokens.
    assert run["metadata"]["gen_ai.usage.input_tokens"] == 72
    assert run["metadata"]["gen_ai.usage.output_tokens"] == 42


def test_spans_inside_a_sub_agent_stay_out_even_when_they_start_in_the_same_millisecond():
    spans = captured()
    supervisor_trace = next(
        s.trace_id for s in spans if s.attributes.get("gen_ai.agent.name") == "supervisor"
    )
    start = min(s.start_ns for s in spans if s.trace_id == supervisor_trace)
    # A coarser clock: every span of the trace starts together, children before parents.
    tied = [
        dataclasses.replace(s, start_ns=start, end_ns=start)
        if s.trace_id == supervisor_trace
        else s
        for s in spans
    ]
    _, run = runs(tied)["supervisor"]

    assert sorted(name for name, _, _ in calls_and_results(run)) == [
        "research-agent",
        "writing-agent",
    ]
    texts = [m["content"] for m in run["output"] if m["role"] == "assistant" and m["content"]]
    assert texts == [FINAL]


def test_the_rubric_comes_from_the_runs_metadata_else_from_the_resource():
    found = runs(captured())
    supervisor, _ = found["supervisor"]
    support, _ = found["support-agent"]
    # capture.py runs run.mjs with EVALSITE_SUPERVISOR_RUBRIC and EVALSITE_RUBRIC set so.
    assert supervisor.attributes["mastra.metadata.evalsite.rubric"] == "brief-quality"
    assert rubric_ref(supervisor) == "brief-quality"
    assert "evalsite.rubric" not in support.attributes
    assert rubric_ref(support) == "support-quality"


def test_genai_keys_the_span_already_has_are_kept():
    span = next(s for s in captured() if s.attributes.get("gen_ai.agent.name") == "support-agent")
    mine = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "mine"}]}])
    span.attributes["gen_ai.input.messages"] = mine
    normalize([span])
    assert span.attributes["gen_ai.input.messages"] == mine
    assert "gen_ai.output.messages" in span.attributes


def test_spans_of_other_frameworks_are_not_mastras():
    span = Span("a" * 32, "b" * 16, "", "invoke_agent x", 0, 1, {"mastra.agent_run.input": "hi"})
    normalize([span])
    assert "gen_ai.input.messages" not in span.attributes


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("42", [{"role": "user", "parts": [{"type": "text", "content": "42"}]}]),
        ('["a", "b"]', [{"role": "user", "parts": [{"type": "text", "content": '["a", "b"]'}]}]),
        ("", []),
        (
            json.dumps({"role": "user", "content": {"format": 2, "parts": [{"type": "text", "text": "hi"}]}}),
            [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}],
        ),
    ],
    ids=["text-that-parses-as-a-number", "text-that-parses-as-a-list", "empty", "stored-format"],
)  # fmt: skip
def test_an_agent_input_is_messages_only_when_it_is_a_list_of_messages(raw, expected):
    assert input_messages(raw) == expected


def test_ai_sdk_parts_in_an_agent_input_become_genai_parts():
    raw = json.dumps(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Refund 77"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool-call", "toolCallId": "c1", "toolName": "t", "input": {"o": 77}}
                ],
            },
            {
                "role": "tool",
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": "c1",
                        "toolName": "t",
                        "output": {"type": "json", "value": {"ok": True}},
                    }
                ],
            },
        ]
    )
    assert input_messages(raw) == [
        {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Refund 77"}]},
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "t", "arguments": {"o": 77}}],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": {"ok": True}}]},
    ]  # fmt: skip


def test_an_agent_output_is_its_text():
    assert output_messages('{"text": "done", "files": []}') == [
        {"role": "assistant", "parts": [{"type": "text", "content": "done"}]}
    ]
    assert output_messages('{"text": "", "files": []}') == []
    assert output_messages(None) == []
