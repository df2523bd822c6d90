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

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar
from functools import partial
from typing import Any, NamedTuple

import litellm
import litellm.main

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


async def acompletion(kwargs: dict[str, Any]) -> Any:
    """One litellm.acompletion call (its retries off: ours are in calls.py)."""
    with _fast_path(kwargs["model"], kwargs.get("api_base")):
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


# --- Fast path ---------------------------------------------------------------------------------
#
# Profiling 2,000 calls at 32 in flight against the fake judge showed two avoidable costs inside
# litellm.acompletion, together about a third of its CPU time per call:
#  1. success/failure logging: every call builds a standard logging payload (and prices the
#     call again) on litellm's logging worker even with no callback registered. litellm skips
#     all of it for calls marked internal (`internal_sub_call`); we register no callbacks, so
#     nothing is lost.
#  2. a thread hop: litellm runs its synchronous request setup (pure CPU for OpenAI-compatible
#     providers) in the loop's default executor. Under load the GIL hand-offs between that
#     thread and the event loop cost more than the setup itself. `_InlineSetupExecutor` runs
#     exactly that setup function inline, only when our call asked for it, and behaves as the
#     stock default executor for everything else (DNS lookups, to_thread, ...).

try:
    from litellm._internal_context import internal_sub_call as _unlogged
except ImportError:  # pragma: no cover - a litellm without it just logs more
    _unlogged = contextlib.nullcontext  # type: ignore[assignment]

_INLINE_SETUP: ContextVar[bool] = ContextVar("evalsite_judge_inline_setup", default=False)
# Providers whose litellm request setup does no I/O (no credential refresh, no file reads).
_INLINE_PROVIDERS = frozenset({"openai"})


def _is_litellm_setup(fn: Any) -> bool:
    """True for litellm's `partial(ctx.run, partial(completion, ...))` setup job."""
    inner = fn.args[0] if isinstance(fn, partial) and fn.args else None
    return isinstance(inner, partial) and inner.func is litellm.main.completion


class _InlineSetupExecutor(ThreadPoolExecutor):
    """The loop's default executor, except that it runs our calls' litellm setup inline."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future:  # type: ignore[override]
        if not (_INLINE_SETUP.get() and _is_litellm_setup(fn)):
            return super().submit(fn, *args, **kwargs)
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # as a worker thread would: hand everything to the caller
            future.set_exception(exc)
        return future


def _install_inline_setup(loop: asyncio.AbstractEventLoop) -> bool:
    """Make sure the loop's default executor is ours; False when the loop already has another."""
    current = getattr(loop, "_default_executor", False)
    if current is None:  # asyncio creates its default lazily; we create ours in its place
        loop.set_default_executor(_InlineSetupExecutor(thread_name_prefix="asyncio"))
        return True
    return isinstance(current, _InlineSetupExecutor)


def _inline_ok(model: str, api_base: str | None) -> bool:
    inline = route(model, api_base).provider in _INLINE_PROVIDERS
    return inline and _install_inline_setup(asyncio.get_running_loop())


@contextlib.contextmanager
def _fast_path(model: str, api_base: str | None) -> Iterator[None]:
    token = _INLINE_SETUP.set(True) if _inline_ok(model, api_base) else None
    try:
        with _unlogged():
            yield
    finally:
        if token is not None:
            _INLINE_SETUP.reset(token)
