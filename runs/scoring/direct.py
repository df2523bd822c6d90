"""The direct transport: one judge call as one HTTP request to an OpenAI-compatible server.

For a model litellm routes to its OpenAI provider with an ``api_base`` (a local server, vLLM,
Ollama's /v1, a gateway), litellm's work per call is building the same JSON body any client
would send, plus a request pipeline, response objects and logging that cost several
milliseconds of CPU per call under the GIL (bench/judge_overhead.py measures it). On a worker
that keeps dozens of calls in flight, that CPU is the throughput ceiling. Here the request is
posted with one long-lived aiohttp session per event loop; errors come out with the status
code, message and headers that judge.classify_exception reads, so both transports fail the same
way. Every other model goes through litellm (judge.py decides).

A session lives as long as its loop, so only loops that live as long as the process use this
transport: runs.judge_runtime enables its shared loop with `enable(loop)`. Code that scores on
a short-lived loop of its own (RubricScorer.score, asyncio.run) goes through litellm.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from typing import Any

import aiohttp

_enabled: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aiohttp.ClientSession] = (
    weakref.WeakKeyDictionary()
)


def enable(loop: asyncio.AbstractEventLoop) -> None:
    """Let judge calls on this (process-long) loop use the direct transport."""
    _enabled.add(loop)


def available() -> bool:
    try:
        return asyncio.get_running_loop() in _enabled
    except RuntimeError:
        return False


def _session() -> aiohttp.ClientSession:
    loop = asyncio.get_running_loop()
    session = _sessions.get(loop)
    if session is None or session.closed:
        # No pool limit of our own: the worker bounds calls in flight; keep-alive reuses them.
        connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
        session = aiohttp.ClientSession(connector=connector, json_serialize=json.dumps)
        _sessions[loop] = session
    return session


async def close() -> None:
    """Close the running loop's session (its loop is about to stop)."""
    session = _sessions.pop(asyncio.get_running_loop(), None)
    if session is not None:
        await session.close()


class HTTPJudgeError(Exception):
    """The server answered with an error status (or an unreadable body)."""

    def __init__(self, status_code: int, message: str, headers: Any = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.headers = dict(headers or {})


def _error_message(status: int, text: str) -> str:
    try:
        body = json.loads(text)
    except ValueError:
        return text.strip()[:500] or f"HTTP {status}"
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return text.strip()[:500]


async def post_chat(
    *, api_base: str, api_key: str | None, body: dict[str, Any], timeout: float
) -> dict[str, Any]:
    """POST {api_base}/chat/completions; the decoded answer, or HTTPJudgeError / aiohttp's
    connection errors / TimeoutError."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    url = api_base.rstrip("/") + "/chat/completions"
    async with _session().post(
        url, json=body, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout)
    ) as response:
        text = await response.text()
        if response.status >= 400:
            raise HTTPJudgeError(
                response.status, _error_message(response.status, text), response.headers
            )
    try:
        answer = json.loads(text)
        answer["choices"][0]["message"]  # noqa: B018 - the shape every caller reads
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise HTTPJudgeError(
            502, f"unreadable answer from the judge server: {text[:200]!r}"
        ) from exc
    return answer
