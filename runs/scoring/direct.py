"""The direct transport: one judge call as one HTTP request to an OpenAI-compatible server.

For a model litellm routes to its OpenAI provider with an ``api_base`` (a local server, vLLM,
Ollama's /v1, a gateway), litellm's work per call is building the same JSON body any client
would send, plus a request pipeline, response objects and logging that cost several
milliseconds of CPU per call under the GIL (bench/judge_overhead.py measures it). On a worker
that keeps dozens of calls in flight, that CPU is the throughput ceiling. Here the request is
posted with one long-lived aiohttp session per event loop; errors come out with the status
code, message and headers that failures.classify_exception reads, so both transports fail the
same way. Every other model goes through litellm (routes.py decides).

A session lives as long as its loop, so only loops that live as long as the process use this
transport: runs.judge_runtime enables its shared loop with `enable(loop)`. Code that scores on
a short-lived loop of its own (RubricScorer.score, asyncio.run) goes through litellm.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
import weakref
from typing import Any

import aiohttp
from aiohttp.resolver import ThreadedResolver

from .netguard import address_refusal

_enabled: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
# Per loop: the session for the deployment's judge, and one for teams' api_bases whose resolver
# refuses non-public addresses (so the address checked is the address connected to).
_sessions: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[bool, aiohttp.ClientSession]
] = weakref.WeakKeyDictionary()
# What a team sees of a judge's error: the provider's message, on one line, this long at most.
MAX_ERROR_CHARS = 300


def enable(loop: asyncio.AbstractEventLoop) -> None:
    """Let judge calls on this (process-long) loop use the direct transport."""
    _enabled.add(loop)


def available() -> bool:
    try:
        return asyncio.get_running_loop() in _enabled
    except RuntimeError:
        return False


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


def _session(guarded: bool = False) -> aiohttp.ClientSession:
    loop = asyncio.get_running_loop()
    sessions = _sessions.setdefault(loop, {})
    session = sessions.get(guarded)
    if session is None or session.closed:
        # No pool limit of our own: the worker bounds calls in flight; keep-alive reuses them.
        connector = (
            aiohttp.TCPConnector(limit=0, resolver=_PublicOnlyResolver(), use_dns_cache=False)
            if guarded
            else aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
        )
        session = aiohttp.ClientSession(connector=connector, json_serialize=json.dumps)
        sessions[guarded] = session
    return session


async def close() -> None:
    """Close the running loop's sessions (its loop is about to stop)."""
    for session in _sessions.pop(asyncio.get_running_loop(), {}).values():
        await session.close()


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
    async with _session(guarded).post(
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
    try:
        answer = json.loads(text)
        answer["choices"][0]["message"]  # noqa: B018 - the shape every caller reads
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise HTTPJudgeError(
            502,
            f"unreadable answer from the judge server (HTTP {response.status}, "
            "not an OpenAI chat completion)",
        ) from exc
    return answer
