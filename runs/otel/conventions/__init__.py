"""Agent frameworks' own span conventions, mapped onto the OpenTelemetry GenAI ones.

runs.otel.convert reads one shape: the GenAI semantic conventions (``gen_ai.operation.name``
``invoke_agent`` / ``chat`` / ``execute_tool``; ``gen_ai.input.messages``,
``gen_ai.output.messages``, ``gen_ai.system_instructions`` as JSON parts; ``gen_ai.agent.name``;
``gen_ai.tool.name`` / ``.call.id`` / ``.call.arguments`` / ``.call.result``;
``gen_ai.usage.input_tokens`` / ``output_tokens``). Each module here knows one framework's
attributes and says which of those keys a span of that framework means, so the staged span
carries them beside its own (a span is normalised once, when it is received, before its
operation is stored).

A convention never overwrites a ``gen_ai.*`` key the span already has: what the framework
wrote in the standard form wins. The first convention that recognises a span fills it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from . import mastra, openinference, openllmetry, vercel_ai


class _Attributed(Protocol):
    name: str
    attributes: dict[str, Any]
    events: list[dict[str, Any]]


# (name, recognises(span), genai_attributes(span)) in the order they are tried.
Convention = tuple[str, Callable[[Any], bool], Callable[[Any], dict[str, Any]]]
CONVENTIONS: list[Convention] = [
    mastra.CONVENTION,
    vercel_ai.CONVENTION,
    openinference.CONVENTION,
    openllmetry.CONVENTION,
]


def normalize(spans: Iterable[_Attributed]) -> None:
    """Add the GenAI attributes each span's framework means (in place)."""
    for span in spans:
        for _name, recognises, genai in CONVENTIONS:
            if recognises(span):
                for key, value in genai(span).items():
                    if value is not None and key not in span.attributes:
                        span.attributes[key] = value
                break
