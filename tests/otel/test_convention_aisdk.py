"""The Vercel AI SDK's spans (runs.otel.conventions.vercel_ai), from a capture of the real library
(tests/otel/node_aisdk/spans.otlp.json; its README says how to regenerate it): each span kind
gets its GenAI attributes, and the export posted as it is makes one run per call, every step in
order. tests/otel/test_aisdk.py runs the library itself against the live server."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from judge_engine.trajectory import normalise
from runs.models import AgentRun, Evaluation
from runs.otel.conventions import normalize
from runs.otel.conventions.vercel_ai import recognises
from runs.otel.convert import descendants, run_payload
from runs.otel.decode import Span, export_decode
from tests.otel.test_ingest import kinds

CAPTURE = Path(__file__).parent / "node_aisdk" / "spans.otlp.json"
SYSTEM = "You are the support bot of Acme. Always quote the order number."
QUESTION = "My order 77 arrived damaged. Can I get a refund?"
LOOKUP = {"order": 77, "status": "delivered", "damaged": True}
GENERATE_ANSWER = "Order 77 is refunded: refund R-9 is on its way. Sorry about the damage!"
STREAM_ANSWER = "Order 77 is delivered but damaged; I could not email you, so here it is."
# What the script's mock model reports per step (run.mjs): 50+80+120 in, 12+20+25 out.
GENERATE_USAGE = {"gen_ai.usage.input_tokens": 250, "gen_ai.usage.output_tokens": 57}
STREAM_USAGE = {"gen_ai.usage.input_tokens": 190, "gen_ai.usage.output_tokens": 51}

GENERATE_STEPS = [
    ("message", "system", SYSTEM),
    ("message", "user", QUESTION),
    ("call", "lookup_order", "call_1", {"order": 77}),
    ("result", "lookup_order", "call_1", json.dumps(LOOKUP, sort_keys=True), False),
    ("message", "assistant", "The order is damaged; refunding it."),
    ("call", "refund", "call_2", {"order": 77, "reason": "damaged"}),
    ("result", "refund", "call_2", "refund R-9 issued for order 77", False),
    ("message", "assistant", GENERATE_ANSWER),
]
STREAM_STEPS = [
    ("message", "system", SYSTEM),
    ("message", "user", QUESTION),
    ("call", "lookup_order", "call_a", {"order": 77}),
    ("result", "lookup_order", "call_a", json.dumps(LOOKUP, sort_keys=True), False),
    ("call", "send_email", "call_b", {"to": "jo@example.com"}),
    ("result", "send_email", "call_b", "mail server unavailable", True),
    ("message", "assistant", STREAM_ANSWER),
]


def captured() -> list[Span]:
    return export_decode(CAPTURE.read_bytes(), "application/json")


def normalized() -> list[Span]:
    spans = captured()
    normalize(spans)
    return spans


def one(spans: list[Span], operation: str, **attributes) -> Span:
    [span] = [
        s
        for s in spans
        if s.attributes.get("ai.operationId") == operation
        and all(s.attributes.get(k) == v for k, v in attributes.items())
    ]
    return span


def parsed(span: Span, key: str):
    return json.loads(span.attributes[key])


def test_the_capture_holds_only_the_sdks_own_attributes_and_no_genai_operation():
    spans = captured()
    assert {s.attributes["ai.operationId"] for s in spans} == {
        "ai.generateText",
        "ai.generateText.doGenerate",
        "ai.streamText",
        "ai.streamText.doStream",
        "ai.toolCall",
    }
    assert all(recognises(s) and "gen_ai.operation.name" not in s.attributes for s in spans)


def test_each_span_kind_gets_its_genai_operation():
    operations = {
        (s.attributes["ai.operationId"], s.attributes["gen_ai.operation.name"])
        for s in normalized()
    }
    assert operations == {
        ("ai.generateText", "invoke_agent"),
        ("ai.streamText", "invoke_agent"),
        ("ai.generateText.doGenerate", "chat"),
        ("ai.streamText.doStream", "chat"),
        ("ai.toolCall", "execute_tool"),
    }


def test_the_call_span_is_the_agent_named_by_its_function_id_with_the_calls_prompt():
    spans = normalized()
    generate = one(spans, "ai.generateText")
    stream = one(spans, "ai.streamText")

    assert generate.attributes["gen_ai.agent.name"] == "support-bot"
    assert stream.attributes["gen_ai.agent.name"] == "support-bot-stream"
    assert parsed(generate, "gen_ai.system_instructions") == [{"type": "text", "content": SYSTEM}]
    user = [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
    assert parsed(generate, "gen_ai.input.messages") == user  # from `prompt`
    assert parsed(stream, "gen_ai.input.messages") == user  # from `messages`
    assert parsed(stream, "gen_ai.output.messages") == [
        {"role": "assistant", "parts": [{"type": "text", "content": STREAM_ANSWER}]}
    ]
    # generateText's own ai.usage.* is its last step's: the run sums the model calls instead.
    assert generate.attributes["ai.usage.promptTokens"] == 120
    assert "gen_ai.usage.input_tokens" not in generate.attributes


def test_a_model_call_gets_its_prompt_with_the_system_and_its_text_and_tool_calls():
    spans = normalized()
    second = one(spans, "ai.generateText.doGenerate", **{"ai.response.id": _second_step(spans)})

    inputs = parsed(second, "gen_ai.input.messages")
    assert inputs[:2] == [
        {"role": "system", "parts": [{"type": "text", "content": SYSTEM}]},
        {"role": "user", "parts": [{"type": "text", "content": QUESTION}]},
    ]
    assert inputs[3] == {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "call_1", "response": LOOKUP}],
    }
    assert parsed(second, "gen_ai.output.messages") == [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "The order is damaged; refunding it."},
                {
                    "type": "tool_call",
                    "id": "call_2",
                    "name": "refund",
                    "arguments": {"order": 77, "reason": "damaged"},
                },
            ],
        }
    ]


def _second_step(spans: list[Span]) -> str:
    steps = sorted(
        (s for s in spans if s.attributes["ai.operationId"] == "ai.generateText.doGenerate"),
        key=lambda s: len(s.attributes["ai.prompt.messages"]),
    )
    return steps[1].attributes["ai.response.id"]


def test_a_streamed_model_calls_tool_call_input_is_an_object_and_reads_the_same():
    spans = normalized()
    [first] = [
        s
        for s in spans
        if s.attributes["ai.operationId"] == "ai.streamText.doStream"
        and "call_a" in s.attributes.get("ai.response.toolCalls", "")
    ]
    assert parsed(first, "ai.response.toolCalls")[0]["input"] == {"order": 77}
    [message] = parsed(first, "gen_ai.output.messages")
    assert message["parts"] == [
        {"type": "tool_call", "id": "call_a", "name": "lookup_order", "arguments": {"order": 77}}
    ]


def test_a_tool_call_span_gets_its_name_id_arguments_and_result_and_a_throw_stays_an_error():
    spans = normalized()
    lookup = one(spans, "ai.toolCall", **{"ai.toolCall.id": "call_1"})
    failed = one(spans, "ai.toolCall", **{"ai.toolCall.id": "call_b"})

    assert {k: v for k, v in lookup.attributes.items() if k.startswith("gen_ai.")} == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup_order",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.call.arguments": '{"order":77}',
        "gen_ai.tool.call.result": LOOKUP,
    }
    assert failed.status == "error" and failed.status_message == "mail server unavailable"
    assert failed.attributes["gen_ai.tool.name"] == "send_email"
    assert "gen_ai.tool.call.result" not in failed.attributes


def test_a_span_of_another_ai_operation_is_recognised_and_left_alone():
    span = Span(
        "0" * 31 + "1", "0" * 15 + "1", "", "ai.embed", 1, 2, {"ai.operationId": "ai.embed"}
    )
    normalize([span])
    assert span.attributes == {"ai.operationId": "ai.embed"}


def test_the_captured_export_makes_one_run_per_call_every_step_in_order(
    post_raw, team, make_rubric
):
    resource_rubric = make_rubric(name="Support quality")
    metadata_rubric = make_rubric(name="Strict support")

    response = post_raw(CAPTURE.read_bytes())

    assert response.status_code == 200, response.content
    generate = AgentRun.objects.get(team=team, agent="support-bot")
    stream = AgentRun.objects.get(team=team, agent="support-bot-stream")
    assert kinds(generate) == GENERATE_STEPS
    assert kinds(stream) == STREAM_STEPS
    assert generate.output_text == GENERATE_ANSWER and stream.output_text == STREAM_ANSWER
    assert {k: generate.metadata[k] for k in GENERATE_USAGE} == GENERATE_USAGE
    assert {k: stream.metadata[k] for k in STREAM_USAGE} == STREAM_USAGE
    assert generate.metadata["service.name"] == "support-service"
    # The resource names the rubric; streamText's telemetry metadata overrides it for its call.
    assert Evaluation.objects.get(run=generate).rubric == resource_rubric
    assert Evaluation.objects.get(run=stream).rubric == metadata_rubric


@pytest.mark.parametrize("tied_with", ["the model call that asked for it", "the next model call"])
def test_a_tool_span_starting_in_the_same_millisecond_as_a_model_call_keeps_the_order(tied_with):
    # The JS SDK's start times have millisecond precision (end times do not): a quick tool often
    # starts in the millisecond of a model call, and may seem to end before it.
    spans = normalized()
    refund = one(spans, "ai.toolCall", **{"ai.toolCall.id": "call_2"})
    asking = one(spans, "ai.generateText.doGenerate", **{"ai.response.id": _second_step(spans)})
    model_calls = sorted(
        (s for s in spans if s.attributes["ai.operationId"] == "ai.generateText.doGenerate"),
        key=lambda s: s.start_ns,
    )
    tied = asking if tied_with.endswith("asked for it") else model_calls[-1]
    refund.start_ns, refund.end_ns = tied.start_ns, tied.start_ns + 1
    agent = one(spans, "ai.generateText")
    tree = descendants(agent.span_id, [s for s in spans if s.trace_id == agent.trace_id])

    payload = run_payload(agent, tree)

    steps = normalise(payload["input"]["messages"], payload["output"])
    assert kinds(SimpleNamespace(trajectory=lambda: steps)) == GENERATE_STEPS


@pytest.mark.parametrize("key", ["gen_ai.usage.input_tokens", "gen_ai.operation.name"])
def test_genai_attributes_the_sdk_wrote_itself_are_kept(key):
    spans = captured()
    chat = one(spans, "ai.generateText.doGenerate", **{"ai.response.id": _second_step(spans)})
    chat.attributes[key] = "as written"
    normalize([chat])
    assert chat.attributes[key] == "as written"
