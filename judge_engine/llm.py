# ruff: noqa: E402  (the environment must be set before litellm is imported)
"""The only module that imports litellm: its configuration, and the few things we ask of it.

litellm is configured once, at import: no telemetry, no callbacks, no message logging, and the
local price map (no network). Everything else in the engine asks litellm through the functions
here (a provider lookup, model facts and prices, the request itself, its exception classes),
so what we depend on in litellm is listed in one place.
"""

from __future__ import annotations

import os

# Before litellm is imported: it would otherwise fetch its price map over the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import contextlib
import logging
from typing import Any, NamedTuple

import litellm

# The exception classes failures.classify_exception tells apart.
Timeout = litellm.Timeout
RateLimitError = litellm.RateLimitError
APIConnectionError = litellm.APIConnectionError
ContextWindowExceededError = litellm.ContextWindowExceededError
AuthenticationError = litellm.AuthenticationError
PermissionDeniedError = litellm.PermissionDeniedError
NotFoundError = litellm.NotFoundError
BadRequestError = litellm.BadRequestError


def _configure_litellm() -> None:
    litellm.telemetry = False
    litellm.suppress_debug_info = True
    litellm.turn_off_message_logging = True
    for name in (
        "callbacks",
        "success_callback",
        "failure_callback",
        "input_callback",
        "service_callback",
        "_async_success_callback",
        "_async_failure_callback",
        "_async_input_callback",
    ):
        setattr(litellm, name, [])
    # litellm's loggers inherit the root level: under a worker logging at INFO they would write
    # a line per judge call. Quiet unless someone chose a level (LITELLM_LOG or setLevel).
    if "LITELLM_LOG" not in os.environ:
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
            logger = logging.getLogger(name)
            if logger.level == logging.NOTSET:
                logger.setLevel(logging.WARNING)


_configure_litellm()


# --- Lookups (cached: litellm's lookups are slow for models it does not know) ------------------


class Route(NamedTuple):
    """How litellm routes a model string: the model name it sends, the provider, and the
    provider's default endpoint (all None when litellm cannot tell)."""

    name: str | None
    provider: str | None
    default_base: str | None


_routes: dict[tuple[str, str | None], Route] = {}


def route(model: str, api_base: str | None = None) -> Route:
    key = (model, api_base)
    if key not in _routes:
        try:
            name, provider, _, default_base = litellm.get_llm_provider(model, api_base=api_base)
        except Exception:  # noqa: BLE001 - litellm cannot tell: no provider
            name, provider, default_base = None, None, None
        _routes[key] = Route(name, provider, default_base)
    return _routes[key]


def model_info(model: str) -> dict[str, Any] | None:
    """litellm's facts about a model (prices, capabilities), None when not in its map."""
    try:
        return dict(litellm.get_model_info(model))
    except Exception:  # noqa: BLE001 - not in litellm's map
        return None


def lacks_response_schema(model: str) -> bool:
    """True when litellm knows the model does not take a JSON schema (False when unsure)."""
    try:
        return not litellm.supports_response_schema(model=model)
    except Exception:  # noqa: BLE001
        return False


def token_cost(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """USD for the tokens at litellm's price of the model; raises when it has none."""
    prompt_cost, completion_cost = litellm.cost_per_token(
        model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
    )
    return float(prompt_cost + completion_cost)


# --- The request -------------------------------------------------------------------------------


# litellm builds a logging payload for every call (pricing it again) on its logging worker, even
# with no callback registered, and a call on a short-lived loop (`RubricScorer.score`) leaves that
# work to be carried to the next loop with a warning. Calls marked as litellm-internal skip all
# of it; we register no callbacks, so nothing is lost. A private helper of litellm's: without
# it, litellm just logs more (tests/judge_engine/test_judge_loop.py notices).
try:
    from litellm._internal_context import internal_sub_call as _unlogged
except ImportError:  # pragma: no cover
    _unlogged = contextlib.nullcontext  # type: ignore[assignment]


async def acompletion(kwargs: dict[str, Any]) -> Any:
    """One litellm.acompletion call (its retries off: ours are in calls.py)."""
    with _unlogged():
        return await litellm.acompletion(**kwargs)


def read(response: Any) -> tuple[str, str | None, int | None, int | None]:
    """Content, finish reason and token counts of a litellm response."""
    choice = response.choices[0]
    usage = getattr(response, "usage", None)
    return (
        choice.message.content or "",
        getattr(choice, "finish_reason", None),
        getattr(usage, "prompt_tokens", None),
        getattr(usage, "completion_tokens", None),
    )


def response_cost(response: Any) -> Any:
    """The cost litellm computed for a response, when it did (anything else: not a number)."""
    hidden = getattr(response, "_hidden_params", None) or {}
    return hidden.get("response_cost") if isinstance(hidden, dict) else None


def count_tokens(model: str, text: str) -> int:
    """Tokens of ``text`` for ``model``'s tokenizer (litellm's counter, which falls back to a
    bundled tiktoken encoding for models it does not know); 4 characters a token if even that
    fails, so rendering never depends on a tokenizer being present."""
    try:
        return int(litellm.token_counter(model=model, text=text))
    except Exception:  # noqa: BLE001 - an estimate is the right answer here
        return (len(text) + 3) // 4
