"""One HTTP call with retries: backoff on 429/502/503/504 and connection errors, honouring
``Retry-After``; errors turned into ``EvalsiteError`` with the API's message and field.

Retrying a write is only safe when a second delivery cannot do the work twice. The caller says
so per call (``idempotent``): reads, PUT/PATCH/DELETE, runs carrying an ``external_id`` and
re-scores carrying an ``Idempotency-Key`` are; for the others only answers that prove nothing
was done are retried (a 429, which stores nothing, and a connection that was never opened).
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from .errors import EvalsiteError, error_from_answer

RETRY_STATUSES = frozenset({429, 502, 503, 504})
MAX_RETRY_AFTER = 300.0  # never sleep longer than this on a server's say-so

RetryHook = Callable[[int, float, str], None]


@dataclass(frozen=True)
class RetryPolicy:
    """``retries`` further attempts after the first; waits ``backoff * 2**n`` (with jitter, at
    most ``max_backoff``) unless the answer's ``Retry-After`` says how long."""

    retries: int = 4
    backoff: float = 0.5
    max_backoff: float = 30.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER)
        base = min(self.backoff * (2**attempt), self.max_backoff)
        return float(base * (0.5 + random.random() / 2))


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds: a number of seconds or an HTTP date; None when absent or
    unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class Transport:
    """Sends requests to ``<url>/api`` with the bearer key, retrying as the policy says."""

    def __init__(
        self,
        http: httpx.Client,
        policy: RetryPolicy,
        on_retry: RetryHook | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.http, self.policy, self.on_retry, self.sleep = http, policy, on_retry, sleep

    def request(
        self,
        method: str,
        path: str,
        *,
        idempotent: bool,
        json: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> httpx.Response:
        """The answer (any 2xx); raises EvalsiteError for every other outcome."""
        clean = {k: _param(v) for k, v in (params or {}).items() if v is not None}
        extra: dict[str, Any] = {} if timeout is None else {"timeout": _timeout(timeout)}
        attempt = 0
        while True:
            try:
                response = self.http.request(
                    method, path, json=json, params=clean, headers=headers, **extra
                )
            except httpx.TransportError as exc:
                if not self._may_retry_transport(exc, idempotent, attempt):
                    raise EvalsiteError(None, f"cannot reach evalsite: {_describe(exc)}") from exc
                self._wait(attempt, None, _describe(exc))
                attempt += 1
                continue
            if response.is_success:
                return response
            if not self._may_retry_status(response.status_code, idempotent, attempt):
                raise _error(response)
            wait = retry_after_seconds(response.headers.get("retry-after"))
            self._wait(attempt, wait, f"HTTP {response.status_code}")
            attempt += 1

    def _may_retry_transport(self, exc: Exception, idempotent: bool, attempt: int) -> bool:
        if attempt >= self.policy.retries:
            return False
        # A connection that was never opened carried nothing: any request may be sent again.
        return idempotent or isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)

    def _may_retry_status(self, status: int, idempotent: bool, attempt: int) -> bool:
        if attempt >= self.policy.retries or status not in RETRY_STATUSES:
            return False
        return idempotent or status == 429

    def _wait(self, attempt: int, retry_after: float | None, reason: str) -> None:
        delay = self.policy.delay(attempt, retry_after)
        if self.on_retry is not None:
            self.on_retry(attempt + 1, delay, reason)
        self.sleep(delay)


def _param(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _timeout(seconds: float) -> httpx.Timeout:
    return httpx.Timeout(seconds, connect=min(10.0, seconds))


def _describe(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _error(response: httpx.Response) -> EvalsiteError:
    try:
        body = response.json()
    except ValueError:
        body = None
    fallback = f"HTTP {response.status_code} {response.reason_phrase}".strip()
    return error_from_answer(response.status_code, body, fallback)
