"""A judge request as the engine makes it: in a call slot, recorded as a `JudgeCall`, its
failure classified, transient failures retried with capped backoff (honouring Retry-After)."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import weakref
from typing import Any, NamedTuple

from .errors import PermanentJudgeError, TransientJudgeError
from .failures import classify_exception
from .fairshare import FairShare, FairSlots, Ledger
from .pricing import call_cost
from .request import request
from .types import JudgeCall, JudgeConfig

BACKOFF_BASE_S = 0.5
# Longest wait the engine sleeps through itself; a judge asking for more gets the error back
# with retry_after, so a Celery task can reschedule instead of holding a worker thread.
BACKOFF_CAP_S = 10.0


class Answer(NamedTuple):
    content: str
    finish_reason: str | None


# --- Call slots ----------------------------------------------------------------------------------

_call_limit: int | None = None
_call_ledger: Ledger | None = None
_call_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, FairSlots] = (
    weakref.WeakKeyDictionary()
)


def limit_calls_in_flight(limit: int | None, ledger: Ledger | None = None) -> None:
    """At most ``limit`` judge requests in flight per event loop of this process (None: no
    limit), shared fairly between tenants (fairshare.py: the ``TENANT`` context variable names
    the caller's; one tenant alone gets every slot, a tenant under its share may overdraw up to
    twice the limit). A worker sets it to its concurrency; each request, however many an
    evaluation makes at once (independent criteria, both alignment perspectives), takes one.
    With a ``ledger`` the share is computed from every process's requests in flight."""
    global _call_limit, _call_ledger
    _call_limit = limit if limit and limit > 0 else None
    _call_ledger = ledger
    _call_slots.clear()


def call_shares() -> list[FairShare]:
    """The call slots' shares of this process (for a ledger's beat to resync)."""
    return [slots.share for slots in list(_call_slots.values())]


def _call_slot() -> contextlib.AbstractAsyncContextManager[Any]:
    if _call_limit is None:
        return contextlib.nullcontext()
    loop = asyncio.get_running_loop()
    slots = _call_slots.get(loop)
    if slots is None:
        slots = _call_slots[loop] = FairSlots(_call_limit, _call_ledger)
    return slots


# --- One recorded call ---------------------------------------------------------------------------


async def _call_once(
    config: JudgeConfig, messages: list[dict], response_format: dict, calls: list[JudgeCall]
) -> Answer:
    async with _call_slot():
        return await _call_once_now(config, messages, response_format, calls)


async def _call_once_now(
    config: JudgeConfig, messages: list[dict], response_format: dict, calls: list[JudgeCall]
) -> Answer:
    started = time.perf_counter()
    try:
        reply = await request(config, messages, response_format)
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
            raw_response=reply.content,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            cost=call_cost(config, reply.response, reply.prompt_tokens, reply.completion_tokens),
            latency_ms=latency,
        )
    )
    return Answer(reply.content, reply.finish_reason)


# --- Retries -------------------------------------------------------------------------------------


def _retry_delay(attempt: int, retry_after: float | None) -> float | None:
    """Seconds to wait before retry number `attempt + 1`; None when the judge wants too long."""
    if retry_after is not None and retry_after > BACKOFF_CAP_S:
        return None
    # Jitter spreads out the retries of many calls that were rate-limited together.
    backoff = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**attempt * random.uniform(1.0, 1.25))
    return max(retry_after or 0.0, backoff)


async def call_with_retries(
    config: JudgeConfig, messages: list[dict], response_format: dict, calls: list[JudgeCall]
) -> Answer:
    """One answer from the judge, appending every request made to `calls`; raises
    PermanentJudgeError at once, TransientJudgeError once `config.retries` retries are spent."""
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
