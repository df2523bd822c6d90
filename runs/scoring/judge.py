# ruff: noqa: E402  (the environment must be set before litellm is imported)
"""The only door to litellm: one JSON-answering judge call with retries, repair and accounting.

`complete_json` asks for structured JSON, retries transient failures itself (honouring
Retry-After, with capped backoff), re-asks a bounded number of times when the answer is invalid,
and records every HTTP request as a `JudgeCall`. Failures come out classified (errors.py).

litellm is configured once, at import: no telemetry, no callbacks, no message logging, and the
local price map (no network). Two measured per-call costs of `litellm.acompletion` are removed
for our calls only; see `_fast_path` (bench/judge_overhead.py prints the effect).
"""

from __future__ import annotations

import os

# Before litellm is imported: it would otherwise fetch its price map over the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import asyncio
import contextlib
import logging
import random
import time
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import litellm
import litellm.main

from . import direct, netguard
from .answers import describe_problem, parse_json, repair_request, with_schema_in_prompt
from .errors import InvalidJudgeOutput, PermanentJudgeError, TransientJudgeError
from .failures import CONNECTION_FAILURES, TIMEOUTS, caused_by, detail, retry_after_of
from .fairshare import FairSlots
from .types import JudgeCall, JudgeConfig

T = TypeVar("T")

NO_MODEL_MESSAGE = (
    "no judge model configured: set EVALSITE_JUDGE_MODEL to any litellm model string "
    "(e.g. openai/gpt-4o-mini), or EVALSITE_JUDGE_API_BASE for an OpenAI-compatible local "
    "server, or set the rubric's judge model"
)
BACKOFF_BASE_S = 0.5
# Longest wait the engine sleeps through itself; a judge asking for more gets the error back
# with retry_after, so a Celery task can reschedule instead of holding a worker thread.
BACKOFF_CAP_S = 10.0
# A bad answer is echoed back in the repair request; a runaway one is cut to keep it cheap.
MAX_ECHO_CHARS = 8000


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
_inline_ok_by_model: dict[tuple[str, str | None], bool] = {}


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


def _inline_ok(config: JudgeConfig) -> bool:
    key = (config.model, config.api_base)
    if key not in _inline_ok_by_model:
        try:
            provider = litellm.get_llm_provider(config.model, api_base=config.api_base)[1]
        except Exception:  # noqa: BLE001 - litellm will report the bad model itself
            provider = None
        _inline_ok_by_model[key] = provider in _INLINE_PROVIDERS
    return _inline_ok_by_model[key] and _install_inline_setup(asyncio.get_running_loop())


@contextlib.contextmanager
def _fast_path(config: JudgeConfig) -> Iterator[None]:
    token = _INLINE_SETUP.set(True) if _inline_ok(config) else None
    try:
        with _unlogged():
            yield
    finally:
        if token is not None:
            _INLINE_SETUP.reset(token)


# --- Where a judge's requests go (the rule for teams' judge connections) -----------------------

# Providers whose default endpoint is a server on the judge's own machine or network.
_SELF_HOSTED = frozenset(
    {
        "ollama", "ollama_chat", "lm_studio", "llamafile", "hosted_vllm", "vllm", "xinference",
        "triton", "oobabooga", "lemonade", "docker_model_runner", "openai_like", "custom_openai",
        "custom", "petals",
    }
)  # fmt: skip
# Providers that sign in with the server's own cloud identity (environment, instance role) when
# no key is given: a team's connection would spend the deployment's cloud account.
_AMBIENT_CREDENTIALS = frozenset(
    {
        "bedrock", "sagemaker", "sagemaker_chat", "sagemaker_nova", "vertex_ai", "vertex_ai_beta",
        "watsonx", "watsonx_text", "oci", "snowflake", "databricks", "github_copilot",
    }
)  # fmt: skip
_providers: dict[tuple[str, str | None], tuple[str | None, str | None]] = {}


def _provider_and_base(model: str, api_base: str | None = None) -> tuple[str | None, str | None]:
    key = (model, api_base)
    if key not in _providers:
        try:
            _, provider, _, default_base = litellm.get_llm_provider(model, api_base=api_base)
        except Exception:  # noqa: BLE001 - litellm cannot tell: no provider
            provider, default_base = None, None
        _providers[key] = (provider, default_base)
    return _providers[key]


def model_provider(model: str) -> str | None:
    """litellm's provider for a model string (``openai/x`` → "openai"), None when unknown."""
    return _provider_and_base(model)[0]


def connection_route_problem(model: str, api_base: str | None) -> str | None:
    """Why a team's judge connection must not call ``model`` at ``api_base`` (None: it may).

    An api_base takes an OpenAI-compatible model string (``openai/<name>``): those requests go
    through the direct transport, which never follows a redirect. Without one the provider's
    default endpoint is used, which must be a public service: self-hosted providers default to
    this machine, and cloud providers that sign in with the server's own identity would spend
    the deployment's account."""
    provider, default_base = _provider_and_base(model, api_base or None)
    if provider is None:
        return (
            f"litellm cannot tell the provider of {model!r}: use a litellm model string such "
            "as openai/gpt-4o-mini"
        )
    if provider in _AMBIENT_CREDENTIALS:
        return (
            f"{provider} models sign in with the server's own cloud credentials, which a "
            "team's connection cannot use"
        )
    if api_base and provider != "openai":
        return (
            "with an api_base, use an OpenAI-compatible model string (openai/<model name>), "
            f"not a {provider} one"
        )
    if not api_base and (provider in _SELF_HOSTED or default_base):
        return (
            f"{provider} models run on a server of yours: give its api_base (and use "
            "openai/<model name>)"
        )
    return None


# --- Model facts (cached: litellm's lookups are slow for models it does not know) --------------

_schema_support: dict[str, bool] = {}
_priced: dict[str, bool] = {}


def _model_info(model: str) -> dict[str, Any] | None:
    try:
        return dict(litellm.get_model_info(model))
    except Exception:  # noqa: BLE001 - not in litellm's map
        return None


def _uses_json_schema(config: JudgeConfig) -> bool:
    """json_schema unless "auto" and litellm knows the model and knows it lacks schema support."""
    if config.structured_output != "auto":
        return config.structured_output == "json_schema"
    if config.model not in _schema_support:
        known = _model_info(config.model) is not None
        try:
            lacks = known and not litellm.supports_response_schema(model=config.model)
        except Exception:  # noqa: BLE001
            lacks = False
        _schema_support[config.model] = not lacks
    return _schema_support[config.model]


_CUSTOM_PRICE_KEYS = ("input_cost_per_token", "output_cost_per_token")
# For a model litellm has no price for, it still tries to price every answer, failing through a
# slow search of its price map (about a tenth of a call's CPU). A zero per-call price (a litellm
# feature) short-cuts that; we report such calls' cost as unknown (None) all the same.
_ZERO_PRICE = dict.fromkeys(_CUSTOM_PRICE_KEYS, 0.0)


def _is_priced(model: str) -> bool:
    if model not in _priced:
        info = _model_info(model) or {}
        _priced[model] = info.get("input_cost_per_token") is not None
    return _priced[model]


def _has_custom_price(config: JudgeConfig) -> bool:
    return any(k in config.extra for k in _CUSTOM_PRICE_KEYS)


def _cost(
    config: JudgeConfig, response: Any, prompt_tokens: int | None, completion_tokens: int | None
) -> float | None:
    """USD cost when litellm knows the price (its map, or prices given in `extra`), else None."""
    custom = _has_custom_price(config)
    if not (custom or _is_priced(config.model)):
        return None
    hidden = getattr(response, "_hidden_params", None) or {}
    known = hidden.get("response_cost") if isinstance(hidden, dict) else None
    if isinstance(known, int | float) or custom:
        return float(known) if isinstance(known, int | float) else None
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=config.model,
            prompt_tokens=prompt_tokens or 0,
            completion_tokens=completion_tokens or 0,
        )
        return float(prompt_cost + completion_cost)
    except Exception:  # noqa: BLE001 - a price lookup must never fail a verdict
        return None


# --- Failure classification --------------------------------------------------------------------

_AUTH_HELP = "set EVALSITE_JUDGE_API_KEY, or the key of the rubric's judge connection"


def _transient(
    exc: Exception, config: JudgeConfig, status: int | None
) -> TransientJudgeError | None:
    where = config.api_base or "the provider's endpoint"
    timed_out = status in (None, 408, 500) and caused_by(exc, TIMEOUTS)
    if isinstance(exc, litellm.Timeout) or timed_out:
        return TransientJudgeError(
            f"judge did not answer within {config.timeout:g}s (timeout): raise the judge timeout "
            f"or check that {where} is responsive"
        )
    if isinstance(exc, litellm.RateLimitError) or status == 429:
        retry_after = retry_after_of(exc)
        hint = f", asks to retry after {retry_after:g}s" if retry_after is not None else ""
        return TransientJudgeError(
            f"judge rate-limited the request (429{hint}): {detail(exc)}", retry_after=retry_after
        )
    connection = isinstance(exc, litellm.APIConnectionError) or caused_by(exc, CONNECTION_FAILURES)
    if connection and status in (None, 500):
        return TransientJudgeError(
            f"could not reach the judge at {where}: {detail(exc)}; is it running, and is the "
            "api_base right?"
        )
    if status is not None and (status >= 500 or status in (408, 409)):
        return TransientJudgeError(f"judge server error ({status}): {detail(exc)}")
    return None


def _permanent(exc: Exception, config: JudgeConfig, status: int | None) -> PermanentJudgeError:
    said = detail(exc)
    if isinstance(exc, litellm.ContextWindowExceededError):
        return PermanentJudgeError(
            f"the prompt does not fit the judge model's context window ({said}): use a judge "
            "model with a larger context"
        )
    if isinstance(exc, litellm.AuthenticationError) or status == 401:
        return PermanentJudgeError(f"judge rejected the API key (401) — {_AUTH_HELP} ({said})")
    if isinstance(exc, litellm.PermissionDeniedError) or status == 403:
        return PermanentJudgeError(
            f"judge refused access (403) to model {config.model!r}: check that the API key may "
            f"use this model ({said})"
        )
    if isinstance(exc, litellm.NotFoundError) or status == 404:
        return PermanentJudgeError(
            f"judge model {config.model!r} not found (404) at "
            f"{config.api_base or 'its provider'}: check the litellm model string and the "
            f"api_base ({said})"
        )
    if status is not None and 300 <= status < 400:
        return PermanentJudgeError(said)  # direct.py's own words: redirects are not followed
    if isinstance(exc, litellm.BadRequestError) or status in (400, 422):
        return PermanentJudgeError(
            f"judge rejected the request ({status or 400}): {said}; check the judge model "
            "string and its parameters (temperature, max_tokens, extra)"
        )
    return PermanentJudgeError(f"judge call failed: {type(exc).__name__}: {said}")


def classify_exception(
    exc: Exception, config: JudgeConfig
) -> TransientJudgeError | PermanentJudgeError:
    """Transient (worth retrying later) or permanent, with a message a person can act on."""
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    return _transient(exc, config, status) or _permanent(exc, config, status)


# --- One HTTP request --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Answer:
    content: str
    finish_reason: str | None


def _request_kwargs(config: JudgeConfig, messages: list[dict], response_format: dict) -> dict:
    unpriced = not (_has_custom_price(config) or _is_priced(config.model))
    kwargs: dict[str, Any] = {**_ZERO_PRICE, **config.extra} if unpriced else dict(config.extra)
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


def _read(response: Any) -> tuple[str, str | None, int | None, int | None]:
    choice = response.choices[0]
    usage = getattr(response, "usage", None)
    return (
        choice.message.content or "",
        getattr(choice, "finish_reason", None),
        getattr(usage, "prompt_tokens", None),
        getattr(usage, "completion_tokens", None),
    )


_openai_route: dict[tuple[str, str | None], str | None] = {}
# `extra` keys that are fields of an OpenAI chat request body, sent as they are. Any other key
# (extra_headers, drop_params, api_version, ...) is a litellm option: such a judge goes
# through litellm, which knows what it means.
_BODY_PARAMS = frozenset(
    {
        "top_p",
        "seed",
        "stop",
        "n",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "user",
        "reasoning_effort",
        "service_tier",
        "max_completion_tokens",
        *_CUSTOM_PRICE_KEYS,
    }
)
# What a team's judge connection may set besides temperature, max_tokens and timeout.
BODY_PARAMS = _BODY_PARAMS


def _direct_model(config: JudgeConfig) -> str | None:
    """The model name to send straight to an OpenAI-compatible api_base, or None when this
    call goes through litellm (another provider, no api_base, or transport="litellm"). A
    team's connection always goes direct where it can: litellm follows redirects."""
    if not config.api_base or not direct.available():
        return None
    if config.transport != "auto" and config.connection is None:
        return None
    if not _BODY_PARAMS.issuperset(config.extra):
        return None
    key = (config.model, config.api_base)
    if key not in _openai_route:
        try:
            name, provider, *_ = litellm.get_llm_provider(config.model, api_base=config.api_base)
        except Exception:  # noqa: BLE001 - litellm will report the bad model itself
            name, provider = None, None
        _openai_route[key] = name if provider == "openai" else None
    return _openai_route[key]


def _direct_body(config: JudgeConfig, name: str, messages: list[dict], response_format: dict):
    body: dict[str, Any] = {k: v for k, v in config.extra.items() if k not in _CUSTOM_PRICE_KEYS}
    body.update(model=name, messages=messages, response_format=response_format)
    if config.temperature is not None:
        body["temperature"] = config.temperature
    if config.max_tokens is not None:
        body["max_tokens"] = config.max_tokens
    return body


async def _request(config: JudgeConfig, messages: list[dict], response_format: dict) -> Any:
    """One HTTP request, through the direct transport or litellm; the answer's content,
    finish reason, token counts and (litellm only) response object."""
    name = _direct_model(config)
    if name is None and config.connection is not None and config.api_base:
        # litellm's HTTP clients follow redirects: a team's address is only called directly.
        raise PermanentJudgeError(
            "a judge connection with an api_base needs an OpenAI-compatible model string "
            "(openai/<model name>), called from the server's judge loop"
        )
    if name is not None:
        answer = await direct.post_chat(
            api_base=config.api_base or "",
            api_key=config.api_key,
            body=_direct_body(config, name, messages, response_format),
            timeout=config.timeout,
            guarded=config.address_guard,
        )
        choice = answer["choices"][0]
        usage = answer.get("usage") or {}
        return (
            choice["message"].get("content") or "",
            choice.get("finish_reason"),
            usage.get("prompt_tokens"),
            usage.get("completion_tokens"),
            None,
        )
    with _fast_path(config):
        response = await litellm.acompletion(**_request_kwargs(config, messages, response_format))
    return (*_read(response), response)


_call_limit: int | None = None
_call_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, FairSlots] = (
    weakref.WeakKeyDictionary()
)


def limit_calls_in_flight(limit: int | None) -> None:
    """At most ``limit`` judge requests in flight per event loop of this process (None: no
    limit), shared fairly between tenants (fairshare.py: the ``TENANT`` context variable names
    the caller's; one tenant alone gets every slot, a tenant under its share may overdraw up to
    twice the limit). A worker sets it to its concurrency; each request, however many an
    evaluation makes at once (independent criteria, both alignment perspectives), takes one."""
    global _call_limit
    _call_limit = limit if limit and limit > 0 else None
    _call_slots.clear()


def _call_slot() -> contextlib.AbstractAsyncContextManager[Any]:
    if _call_limit is None:
        return contextlib.nullcontext()
    loop = asyncio.get_running_loop()
    slots = _call_slots.get(loop)
    if slots is None:
        slots = _call_slots[loop] = FairSlots(_call_limit)
    return slots


async def _call_once(
    config: JudgeConfig, messages: list[dict], response_format: dict, calls: list[JudgeCall]
) -> _Answer:
    async with _call_slot():
        return await _call_once_now(config, messages, response_format, calls)


async def _call_once_now(
    config: JudgeConfig, messages: list[dict], response_format: dict, calls: list[JudgeCall]
) -> _Answer:
    started = time.perf_counter()
    try:
        await _check_address(config)
        content, finish_reason, prompt_tokens, completion_tokens, response = await _request(
            config, messages, response_format
        )
    except Exception as exc:
        error = exc if isinstance(exc, PermanentJudgeError) else classify_exception(exc, config)
        latency = (time.perf_counter() - started) * 1000
        calls.append(
            JudgeCall(model=config.model, messages=messages, error=str(error), latency_ms=latency)
        )
        error.calls = list(calls)
        raise error from exc
    latency = (time.perf_counter() - started) * 1000
    calls.append(
        JudgeCall(
            model=config.model,
            messages=messages,
            raw_response=content,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost=_cost(config, response, prompt_tokens, completion_tokens),
            latency_ms=latency,
        )
    )
    return _Answer(content, finish_reason)


async def _check_address(config: JudgeConfig) -> None:
    """A team's api_base is looked up again right before each request (DNS may have changed
    since it was accepted) and refused when it reaches a non-public address."""
    if not (config.address_guard and config.api_base):
        return
    refusal = await netguard.url_refusal_async(config.api_base)
    if refusal is not None:
        raise PermanentJudgeError(f"judge address refused: the api_base {refusal}")


def _retry_delay(attempt: int, retry_after: float | None) -> float | None:
    """Seconds to wait before retry number `attempt + 1`; None when the judge wants too long."""
    if retry_after is not None and retry_after > BACKOFF_CAP_S:
        return None
    # Jitter spreads out the retries of many calls that were rate-limited together.
    backoff = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**attempt * random.uniform(1.0, 1.25))
    return max(retry_after or 0.0, backoff)


async def _call_with_retries(
    config: JudgeConfig, messages: list[dict], response_format: dict, calls: list[JudgeCall]
) -> _Answer:
    for attempt in range(config.retries + 1):
        try:
            return await _call_once(config, messages, response_format, calls)
        except TransientJudgeError as exc:
            delay = _retry_delay(attempt, exc.retry_after)
            if attempt == config.retries or delay is None:
                tries = attempt + 1
                raise TransientJudgeError(
                    f"{exc.message} (gave up after {tries} attempt{'s' if tries > 1 else ''})",
                    retry_after=exc.retry_after,
                    calls=calls,
                ) from exc
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


# --- The call with repair ----------------------------------------------------------------------


def _response_format(config: JudgeConfig, name: str, schema: dict) -> dict:
    if _uses_json_schema(config):
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
        answer = await _call_with_retries(config, prompt, response_format, calls)
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
