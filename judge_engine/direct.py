"""The direct transport: one judge call as one HTTP request to an OpenAI-compatible server.

For a model litellm routes to its OpenAI provider with an ``api_base`` (a local server, vLLM,
Ollama's /v1, a gateway), litellm's work per call is building the same JSON body any client
would send, plus a request pipeline, response objects and logging that cost several
milliseconds of CPU per call under the GIL (bench/judge_overhead.py measures it). On a worker
that keeps dozens of calls in flight, and in an agent loop scoring concurrently, that CPU is
the throughput ceiling. Here the request is posted over a pool of keep-alive connections per
event loop; errors come out with the status code, message and headers that
failures.classify_exception reads, so both transports fail the same way. Every other model
goes through litellm (routes.py decides).

Any running loop may use it. An aiohttp session belongs to the loop it was made on, so each
loop gets its own pool (`_Pool`), held weakly by the loop and closed with it:

* a loop that lives as long as the process (the worker's, judging.judge_runtime) is marked with
  `enable(loop)`; its pool is closed by `close()` at exit;
* any other loop (``asyncio.run``, ``RubricScorer.score()``, a user's server) gets a pool
  whose keeper is an async generator suspended for the loop's life: the loop finalizes its
  async generators when it shuts down (``asyncio.run`` and ``asyncio.Runner`` call
  ``shutdown_asyncgens()``), which closes the pool's connections while the loop still runs;
* a loop that does not track async generators (no asyncgen hooks installed) gets a session
  per call, closed before the call returns.

A loop closed without ``shutdown_asyncgens()`` cannot close its pool; it is dropped the next
time a pool is made (aiohttp then warns about the unclosed session, as it would for any).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
import sys
import threading
import weakref
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from aiohttp.resolver import ThreadedResolver

from .netguard import address_refusal

# What a team sees of a judge's error: the provider's message, on one line, this long at most.
MAX_ERROR_CHARS = 300


class _PublicOnlyResolver(ThreadedResolver):
    """Resolves as usual, then refuses a host that has a non-public address (netguard)."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> Any:
        found = await super().resolve(host, port, family)
        for item in found:
            refusal = address_refusal(ipaddress.ip_address(str(item["host"]).split("%")[0]))
            if refusal is not None:
                raise OSError(f"the judge host {host} {refusal}")
        return found


def _new_session(guarded: bool) -> aiohttp.ClientSession:
    """A session for the deployment's judge, or (``guarded``) for teams' api_bases, whose
    resolver refuses non-public addresses (so the address checked is the address connected
    to). No pool limit of our own: callers bound calls in flight; keep-alive reuses them."""
    connector = (
        aiohttp.TCPConnector(limit=0, resolver=_PublicOnlyResolver(), use_dns_cache=False)
        if guarded
        else aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
    )
    return aiohttp.ClientSession(connector=connector, json_serialize=json.dumps)


# --- One pool of connections per event loop ------------------------------------------------


class _Pool:
    """The sessions of one event loop, made when first needed."""

    def __init__(self) -> None:
        self.sessions: dict[bool, aiohttp.ClientSession] = {}
        self.keeper: Any = None  # the async generator that closes this pool with its loop

    def session(self, guarded: bool) -> aiohttp.ClientSession:
        session = self.sessions.get(guarded)
        if session is None or session.closed:
            session = self.sessions[guarded] = _new_session(guarded)
        return session

    async def close(self) -> None:
        sessions, self.sessions = list(self.sessions.values()), {}
        for session in sessions:
            await session.close()


_process_long: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pool] = weakref.WeakKeyDictionary()
_pools_lock = threading.Lock()  # loops of several threads make pools at once


def enable(loop: asyncio.AbstractEventLoop) -> None:
    """Mark a loop that lives as long as the process: its pool stays open until `close()`."""
    _process_long.add(loop)


def available() -> bool:
    """Whether a judge call made here can use the direct transport: in any running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def _closes_with_loop(pool: _Pool, loop: asyncio.AbstractEventLoop) -> AsyncIterator[None]:
    """Suspended for the loop's life; its ``finally`` runs when the loop shuts down its async
    generators (``shutdown_asyncgens``), while the loop can still close connections."""
    try:
        yield
    finally:
        with _pools_lock:
            if _pools.get(loop) is pool:
                del _pools[loop]
        await pool.close()


async def _pool() -> _Pool | None:
    """The running loop's pool; None when the loop could not close one (a session per call)."""
    loop = asyncio.get_running_loop()
    pool = _pools.get(loop)
    if pool is not None:
        return pool
    process_long = loop in _process_long
    if not process_long and sys.get_asyncgen_hooks().firstiter is None:
        return None
    pool = _Pool()
    with _pools_lock:
        for closed in [other for other in _pools if other.is_closed()]:
            del _pools[closed]  # closed without shutdown_asyncgens(): nothing left to do
        _pools[loop] = pool
    if not process_long:
        pool.keeper = _closes_with_loop(pool, loop)
        await pool.keeper.__anext__()  # registered with the loop's asyncgen hooks
    return pool


async def close() -> None:
    """Close the running loop's pool now (a process-long loop is about to stop)."""
    with _pools_lock:
        pool = _pools.pop(asyncio.get_running_loop(), None)
    if pool is not None:
        await pool.close()


class HTTPJudgeError(Exception):
    """The server answered with an error status (or an unreadable body)."""

    def __init__(self, status_code: int, message: str, headers: Any = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.headers = dict(headers or {})


def bounded(text: str) -> str:
    """One line, at most MAX_ERROR_CHARS characters."""
    line = " ".join(text.split())
    return line if len(line) <= MAX_ERROR_CHARS else line[: MAX_ERROR_CHARS - 1] + "…"


def _error_message(status: int, text: str) -> str:
    """The provider's own message (``error.message`` of a JSON error, or a string ``error``),
    bounded; never the raw body, which may be anything the server at that address holds."""
    try:
        body = json.loads(text)
    except ValueError:
        return f"HTTP {status}"
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    if isinstance(message, str) and message.strip():
        return bounded(message)
    return f"HTTP {status}"


async def post_chat(
    *,
    api_base: str,
    api_key: str | None,
    body: dict[str, Any],
    timeout: float,
    guarded: bool = False,
) -> dict[str, Any]:
    """POST {api_base}/chat/completions; the decoded answer, or HTTPJudgeError / aiohttp's
    connection errors / TimeoutError. Redirects are not followed (a 3xx is an error): a
    judge's address is checked before the request, and a redirect would skip that check.
    ``guarded``: a team's api_base, connected to only at public addresses."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    url = api_base.rstrip("/") + "/chat/completions"
    pool = await _pool()
    if pool is None:
        async with _new_session(guarded) as session:
            status, text = await _post(session, url, body, headers, timeout)
    else:
        status, text = await _post(pool.session(guarded), url, body, headers, timeout)
    try:
        answer = json.loads(text)
        answer["choices"][0]["message"]  # noqa: B018 - the shape every caller reads
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise HTTPJudgeError(
            502,
            f"unreadable answer from the judge server (HTTP {status}, "
            "not an OpenAI chat completion)",
        ) from exc
    return answer


async def _post(
    session: aiohttp.ClientSession,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    timeout: float,
) -> tuple[int, str]:
    """The status and text of a 2xx answer; HTTPJudgeError for a redirect or an error."""
    async with session.post(
        url,
        json=body,
        headers=headers,
        timeout=aiohttp.ClientTimeout(total=timeout),
        allow_redirects=False,
    ) as response:
        text = await response.text()
        if 300 <= response.status < 400:
            raise HTTPJudgeError(
                response.status,
                f"judge answered with a redirect ({response.status}); evalsite does not follow "
                "redirects: set the api_base to the final address",
            )
        if response.status >= 400:
            raise HTTPJudgeError(
                response.status, _error_message(response.status, text), response.headers
            )
        return response.status, text
