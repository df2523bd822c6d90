"""One HTTP request to the judge, through the direct transport or litellm (routes.py decides),
with the address of a team's api_base checked right before it."""

from __future__ import annotations

from typing import Any, NamedTuple

from . import direct, llm, netguard
from .errors import PermanentJudgeError
from .pricing import CUSTOM_PRICE_KEYS, ZERO_PRICE, unpriced
from .routes import direct_model
from .types import JudgeConfig


class Reply(NamedTuple):
    """What one request brought back; `response` is litellm's object (None: direct)."""

    content: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    response: Any


def litellm_kwargs(config: JudgeConfig, messages: list[dict], response_format: dict) -> dict:
    kwargs: dict[str, Any] = (
        {**ZERO_PRICE, **config.extra} if unpriced(config) else dict(config.extra)
    )
    kwargs.update(
        model=config.model,
        messages=messages,
        timeout=config.timeout,
        num_retries=0,  # retries are ours, with Retry-After and a cap
        response_format=response_format,
    )
    optional = {
        "api_base": config.api_base,
        "api_key": config.api_key,
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
    }
    kwargs.update({k: v for k, v in optional.items() if v is not None})
    return kwargs


def direct_body(config: JudgeConfig, name: str, messages: list[dict], response_format: dict):
    body: dict[str, Any] = {k: v for k, v in config.extra.items() if k not in CUSTOM_PRICE_KEYS}
    body.update(model=name, messages=messages, response_format=response_format)
    if config.temperature is not None:
        body["temperature"] = config.temperature
    if config.max_tokens is not None:
        body["max_tokens"] = config.max_tokens
    return body


async def request(config: JudgeConfig, messages: list[dict], response_format: dict) -> Reply:
    """One HTTP request, through the direct transport or litellm; the answer's content,
    finish reason, token counts and (litellm only) response object."""
    await check_address(config)
    name = direct_model(config)
    if name is None and config.connection is not None and config.api_base:
        # litellm's HTTP clients follow redirects: a team's address is only called directly.
        raise PermanentJudgeError(
            "a judge connection with an api_base needs an OpenAI-compatible model string "
            "(openai/<model name>) and only OpenAI request body fields in its parameters"
        )
    if name is not None:
        answer = await direct.post_chat(
            api_base=config.api_base or "",
            api_key=config.api_key,
            body=direct_body(config, name, messages, response_format),
            timeout=config.timeout,
            guarded=config.address_guard,
        )
        choice = answer["choices"][0]
        usage = answer.get("usage") or {}
        return Reply(
            choice["message"].get("content") or "",
            choice.get("finish_reason"),
            usage.get("prompt_tokens"),
            usage.get("completion_tokens"),
            None,
        )
    response = await llm.acompletion(litellm_kwargs(config, messages, response_format))
    return Reply(*llm.read(response), response)


async def check_address(config: JudgeConfig) -> None:
    """A team's api_base is looked up again right before each request (DNS may have changed
    since it was accepted) and refused when it reaches a non-public address."""
    if not (config.address_guard and config.api_base):
        return
    refusal = await netguard.url_refusal_async(config.api_base)
    if refusal is not None:
        raise PermanentJudgeError(f"judge address refused: the api_base {refusal}")
