"""The judge seam: one JSON-answering judge call with retries, repair and accounting.

`complete_json` asks for structured JSON, retries transient failures itself (honouring
Retry-After, with capped backoff), re-asks a bounded number of times when the answer is invalid,
and records every HTTP request as a `JudgeCall`. Failures come out classified (errors.py).

The parts, one module each: llm.py (the only module that imports litellm, configured there),
pricing.py (model facts and prices), routes.py (direct transport or litellm; what a team's
connection may call), failures.py (classification), request.py (one HTTP request), calls.py
(call slots, recording, retries). This module keeps the entry points the rest of the server
imports.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from .answers import describe_problem, parse_json, repair_request, with_schema_in_prompt
from .calls import call_with_retries, limit_calls_in_flight
from .errors import InvalidJudgeOutput, PermanentJudgeError
from .failures import classify_exception
from .pricing import uses_json_schema
from .routes import BODY_PARAMS, connection_route_problem, model_provider
from .types import JudgeCall, JudgeConfig

__all__ = [
    "BODY_PARAMS",
    "classify_exception",
    "complete_json",
    "connection_route_problem",
    "limit_calls_in_flight",
    "model_provider",
]

T = TypeVar("T")

NO_MODEL_MESSAGE = (
    "no judge model configured: set EVALSITE_JUDGE_MODEL to any litellm model string "
    "(e.g. openai/gpt-4o-mini), or EVALSITE_JUDGE_API_BASE for an OpenAI-compatible local "
    "server, or set the rubric's judge model"
)
# A bad answer is echoed back in the repair request; a runaway one is cut to keep it cheap.
MAX_ECHO_CHARS = 8000


def _response_format(config: JudgeConfig, name: str, schema: dict) -> dict:
    if uses_json_schema(config):
        return {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": True},
        }
    return {"type": "json_object"}


async def complete_json(
    config: JudgeConfig,
    messages: list[dict],
    *,
    schema_name: str,
    schema: dict,
    validate: Callable[[Any], T],
) -> tuple[T, list[JudgeCall]]:
    """Ask the judge; return `validate(parsed JSON answer)` and the calls it took.

    `validate` raises ValueError (a pydantic ValidationError is one) saying what is wrong; the
    judge is then re-asked up to `config.repair_retries` times with its answer and that reason.
    Raises PermanentJudgeError (no model, 4xx), TransientJudgeError (after `config.retries`
    retries) or InvalidJudgeOutput; each carries the calls made.
    """
    if config.unusable:
        raise PermanentJudgeError(config.unusable)
    if not (config.model or "").strip():
        raise PermanentJudgeError(NO_MODEL_MESSAGE)
    response_format = _response_format(config, schema_name, schema)
    prompt = (
        messages
        if response_format["type"] == "json_schema"
        else with_schema_in_prompt(messages, schema)
    )
    calls: list[JudgeCall] = []
    problem = ""
    for _ in range(config.repair_retries + 1):
        answer = await call_with_retries(config, prompt, response_format, calls)
        try:
            return validate(parse_json(answer.content)), calls
        except ValueError as exc:
            problem = describe_problem(exc)
            if answer.finish_reason == "length":
                problem += " (the answer was cut off at max_tokens: raise the judge's max_tokens)"
            calls[-1].error = f"invalid judge output: {problem}"
        echo = {"role": "assistant", "content": answer.content[:MAX_ECHO_CHARS]}
        prompt = [*prompt, echo, repair_request(problem)]
    attempts = config.repair_retries + 1
    raise InvalidJudgeOutput(
        f"judge output invalid after {attempts} attempt{'s' if attempts > 1 else ''}: {problem}",
        calls=calls,
    )
