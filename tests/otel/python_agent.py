"""A one-tool agent loop run with the real ``openai`` client under the real Python
instrumentations, against a scripted fake model (OpenAI-compatible HTTP on loopback).

The model first asks for ``lookup_order`` (call id ``call_lookup_77``), then, once the request
holds the tool's answer, replies with the final text. The loop wraps everything in an agent
span and each tool run in a tool span, written the way each family writes them:

* ``genai``: opentelemetry-instrumentation-openai-v2 for the chat spans; the agent and tool
  spans from opentelemetry-util-genai's TelemetryHandler (``invoke_agent`` / ``execute_tool``).
* ``openinference``: openinference-instrumentation-openai for the LLM spans; AGENT and TOOL
  spans from openinference-instrumentation's OITracer.
* ``openllmetry``: Traceloop's opentelemetry-instrumentation-openai 0.54.0 (the last release
  that writes ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``) for the LLM spans. The agent
  and tool spans carry the attributes traceloop-sdk's ``@agent`` / ``@tool`` decorators write
  (span name ``<name>.<kind>``, ``traceloop.span.kind``, ``traceloop.entity.name`` / ``.input``
  / ``.output``), written here by hand: traceloop-sdk cannot be installed beside
  opentelemetry-sdk 1.45 (it pins opentelemetry-instrumentation-threading below 0.66b1).

Regenerate the captured spans the unit tests read (tests/otel/spans/<flavour>.json, OTLP JSON):

    LITELLM_LOCAL_MODEL_COST_MAP=True .venv/bin/python -m tests.otel.python_agent
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aiohttp import web
from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from openinference.instrumentation import OITracer, TraceConfig
from openinference.instrumentation.openai import OpenAIInstrumentor as OpenInferenceInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.instrumentation.openai import OpenAIInstrumentor as TraceloopInstrumentor
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor as GenAIInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util.genai.handler import TelemetryHandler
from opentelemetry.util.genai.types import InputMessage, OutputMessage, Text

from tests.fake_judge import FakeJudge, JudgeState
from tests.otel.otlp import QUESTION

SYSTEM = "You are Acme support. Look the order up before you answer."
ANSWER = "Order 77 arrived damaged: I have opened a refund for you."
MODEL = "gpt-4o-mini"
AGENT = "support-bot"
CALL_ID = "call_lookup_77"
TOOL_RESULT = '{"status": "delivered", "damaged": true}'
USAGE = [(52, 9), (71, 14)]  # (prompt, completion) tokens of the two model calls
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look an order up by its number.",
            "parameters": {
                "type": "object",
                "properties": {"order": {"type": "integer"}},
                "required": ["order"],
            },
        },
    }
]
SPANS_DIR = Path(__file__).parent / "spans"
FLAVOURS = ("genai", "openinference", "openllmetry")
# What opentelemetry-instrumentation-openai-v2 needs to put message content on its spans
# (with 2.4b0 / opentelemetry-util-genai 1.3b0 the latest conventions are always on; the opt-in
# is kept for older releases, where it selects them).
GENAI_ENV = {
    "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
}


# --- the fake model ----------------------------------------------------------------------------


def _completion(message: dict[str, Any], finish: str, usage: tuple[int, int]) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{finish}",
        "object": "chat.completion",
        "created": 1_767_000_000,
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        },
    }


async def _scripted(request: web.Request) -> web.Response:
    body = await request.json()
    answered = any(m.get("role") == "tool" for m in body.get("messages") or [])
    if answered:
        message = {"role": "assistant", "content": ANSWER}
        return web.json_response(_completion(message, "stop", USAGE[1]))
    call = {
        "id": CALL_ID,
        "type": "function",
        "function": {"name": "lookup_order", "arguments": '{"order": 77}'},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return web.json_response(_completion(message, "tool_calls", USAGE[0]))


class FakeAgentModel(FakeJudge):
    """The fake judge's server machinery answering with the two scripted replies."""

    def __init__(self) -> None:
        super().__init__()
        self.app = web.Application()
        self.app["state"] = JudgeState(0.0)
        self.app.router.add_post("/v1/chat/completions", _scripted)


# --- the agent loop ----------------------------------------------------------------------------

Finish = Callable[[str], None]


def lookup_order(order: int) -> str:
    assert order == 77
    return TOOL_RESULT


def run_agent(flavour: Any, provider: TracerProvider, base_url: str) -> str:
    """System + user -> tool call -> tool result -> answer, inside the flavour's agent span."""
    client = OpenAI(base_url=base_url, api_key="fake", max_retries=0)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
    ]
    with flavour.agent(provider) as finish_agent:
        reply = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        asked = reply.choices[0].message
        calls = [c.model_dump() for c in asked.tool_calls or []]
        messages.append({"role": "assistant", "content": asked.content, "tool_calls": calls})
        for call in asked.tool_calls or []:
            arguments = json.loads(call.function.arguments)
            with flavour.tool(provider, call.id, call.function.name, arguments) as finish_tool:
                result = lookup_order(**arguments)
                finish_tool(result)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        final = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        answer = final.choices[0].message.content or ""
        finish_agent(answer)
    return answer


# --- the three flavours ------------------------------------------------------------------------


class GenAI:
    """opentelemetry-instrumentation-openai-v2 plus opentelemetry-util-genai's agent/tool spans."""

    def instrument(self, provider: TracerProvider) -> None:
        self.instrumentor = GenAIInstrumentor()
        self.instrumentor.instrument(tracer_provider=provider)

    def uninstrument(self) -> None:
        self.instrumentor.uninstrument()

    @contextmanager
    def agent(self, provider: TracerProvider) -> Iterator[Finish]:
        handler = TelemetryHandler(tracer_provider=provider)
        with handler.invoke_local_agent(agent_name=AGENT, request_model=MODEL) as invocation:
            # What a framework knows of its run: the user's task (its system prompt goes to the
            # model, so only the chat spans hold it).
            invocation.input_messages = [InputMessage("user", [Text(content=QUESTION)])]

            def finish(answer: str) -> None:
                invocation.output_messages = [
                    OutputMessage("assistant", [Text(content=answer)], "stop")
                ]

            yield finish

    @contextmanager
    def tool(self, provider: TracerProvider, call_id: str, name: str, arguments: dict):
        handler = TelemetryHandler(tracer_provider=provider)
        with handler.tool(name, tool_call_id=call_id, tool_type="function") as invocation:
            invocation.arguments = arguments

            def finish(result: str) -> None:
                invocation.tool_result = result

            yield finish


class OpenInference:
    """openinference-instrumentation-openai plus OITracer AGENT and TOOL spans."""

    def instrument(self, provider: TracerProvider) -> None:
        self.instrumentor = OpenInferenceInstrumentor()
        self.instrumentor.instrument(tracer_provider=provider)

    def uninstrument(self) -> None:
        self.instrumentor.uninstrument()

    def _tracer(self, provider: TracerProvider) -> Any:
        return OITracer(provider.get_tracer(__name__), config=TraceConfig())

    @contextmanager
    def agent(self, provider: TracerProvider) -> Iterator[Finish]:
        tracer = self._tracer(provider)
        with tracer.start_as_current_span(
            AGENT,
            openinference_span_kind="agent",
            attributes={"agent.name": AGENT, "graph.node.id": AGENT},
        ) as span:
            span.set_input(QUESTION)

            def finish(answer: str) -> None:
                span.set_output(answer)

            yield finish

    @contextmanager
    def tool(self, provider: TracerProvider, call_id: str, name: str, arguments: dict):
        tracer = self._tracer(provider)
        with tracer.start_as_current_span(
            name, openinference_span_kind="tool", attributes={"tool.id": call_id}
        ) as span:
            span.set_tool(name=name, description="Look an order up by its number.", parameters={})
            span.set_input(arguments)

            def finish(result: str) -> None:
                span.set_output(result)

            yield finish


class OpenLLMetry:
    """Traceloop's opentelemetry-instrumentation-openai plus traceloop-sdk-shaped entity spans."""

    def instrument(self, provider: TracerProvider) -> None:
        self.instrumentor = TraceloopInstrumentor()
        self.instrumentor.instrument(tracer_provider=provider)

    def uninstrument(self) -> None:
        self.instrumentor.uninstrument()

    @contextmanager
    def _entity(self, provider: TracerProvider, name: str, kind: str, kwargs: dict):
        tracer = provider.get_tracer("traceloop.tracer")
        with tracer.start_as_current_span(f"{name}.{kind}") as span:
            span.set_attribute("traceloop.span.kind", kind)
            span.set_attribute("traceloop.entity.name", name)
            span.set_attribute("traceloop.workflow.name", AGENT)
            span.set_attribute("traceloop.entity.input", json.dumps({"args": [], "kwargs": kwargs}))

            def finish(result: str) -> None:
                span.set_attribute("traceloop.entity.output", json.dumps(result))

            yield finish

    def agent(self, provider: TracerProvider):
        return self._entity(provider, AGENT, "agent", {"question": QUESTION})

    def tool(self, provider: TracerProvider, call_id: str, name: str, arguments: dict):
        return self._entity(provider, name, "tool", arguments)


def flavour(name: str) -> Any:
    return {"genai": GenAI, "openinference": OpenInference, "openllmetry": OpenLLMetry}[name]()


# --- capturing the spans -----------------------------------------------------------------------


def otlp_json(spans: Any) -> dict[str, Any]:
    """Finished SDK spans as an OTLP/JSON export (ids in hex, as the OTLP JSON mapping says)."""
    export = MessageToDict(encode_spans(spans))
    for resource_spans in export["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = _b64_to_hex(span[key])
    return export


def _b64_to_hex(value: str) -> str:
    return base64.b64decode(value).hex()


def capture(name: str, base_url: str) -> dict[str, Any]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    chosen = flavour(name)
    chosen.instrument(provider)
    try:
        run_agent(chosen, provider, base_url)
    finally:
        chosen.uninstrument()
    return otlp_json(exporter.get_finished_spans())


def main() -> None:
    os.environ.update(GENAI_ENV)
    SPANS_DIR.mkdir(exist_ok=True)
    with FakeAgentModel() as model:
        for name in FLAVOURS:
            export = capture(name, model.url)
            path = SPANS_DIR / f"{name}.json"
            path.write_text(json.dumps(export, indent=1, sort_keys=True) + "\n")
            print(path)


if __name__ == "__main__":
    main()
