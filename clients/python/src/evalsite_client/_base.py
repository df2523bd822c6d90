"""The client's plumbing: configuration from the environment, calls through the operations
table, pages and waiting. The methods per area live in the mixins that ``Client`` combines."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

from ._http import RetryHook, RetryPolicy, Transport
from .errors import ConfigurationError, EvalsiteError
from .operations import OPERATIONS

__version__ = "0.1.0"
T = TypeVar("T")


def new_key(prefix: str) -> str:
    """A fresh idempotency key (``external_id`` of a run, ``Idempotency-Key`` of a re-score)."""
    return f"{prefix}-{uuid.uuid4().hex}"


def base_url(url: str) -> str:
    """``https://evalsite.example.com``, ``.../`` and ``.../api`` all name the same server."""
    url = url.strip().rstrip("/")
    return url[: -len("/api")] if url.endswith("/api") else url


class BaseClient:
    """Configuration and transport. ``url`` and ``api_key`` default to ``EVALSITE_URL`` and
    ``EVALSITE_API_KEY``; ``timeout`` is per request (``score`` waits longer by itself);
    ``retries``/``backoff`` set the retry policy; ``on_retry(attempt, delay, reason)`` is told
    before each wait; ``transport`` and ``event_hooks`` are passed to ``httpx.Client``."""

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 4,
        backoff: float = 0.5,
        on_retry: RetryHook | None = None,
        transport: httpx.BaseTransport | None = None,
        event_hooks: Mapping[str, list[Callable[..., Any]]] | None = None,
    ) -> None:
        url = url or os.environ.get("EVALSITE_URL", "")
        api_key = api_key or os.environ.get("EVALSITE_API_KEY", "")
        if not url:
            raise ConfigurationError("no server URL: pass url= or set EVALSITE_URL", "EVALSITE_URL")
        if not api_key:
            raise ConfigurationError(
                "no API key: pass api_key= or set EVALSITE_API_KEY", "EVALSITE_API_KEY"
            )
        self.url = base_url(url)
        self._http = httpx.Client(
            base_url=self.url,
            headers={
                "Authorization": f"Bearer {api_key}",
                "User-Agent": f"evalsite-client/{__version__}",
                "Accept": "application/json",
            },
            timeout=httpx.Timeout(timeout, connect=min(10.0, timeout)),
            transport=transport,
            event_hooks=dict(event_hooks or {}),
        )
        policy = RetryPolicy(retries=retries, backoff=backoff)
        self._transport = Transport(self._http, policy, on_retry)

    def close(self) -> None:
        self._http.close()

    def __enter__(self: T) -> T:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- Calls ----------------------------------------------------------------------------------

    def _request(
        self,
        operation: str,
        path: Mapping[str, Any] | None = None,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> httpx.Response:
        op = OPERATIONS[operation]
        url = op.path.format(**{k: quote(str(v), safe="") for k, v in (path or {}).items()})
        return self._transport.request(
            op.method, url, idempotent=op.idempotent, json=json, params=params,
            headers=headers, timeout=timeout,
        )  # fmt: skip

    def _json(self, operation: str, path: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        response = self._request(operation, path, **kw)
        return response.json() if response.content else None

    def _pages(
        self, operation: str, path: Mapping[str, Any] | None, params: dict[str, Any]
    ) -> Iterator[Any]:
        """Every item of a keyset-paginated list, page after page."""
        cursor = None
        while True:
            page = self._json(operation, path, params=params | {"cursor": cursor})
            yield from page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return

    @staticmethod
    def _wait(
        fetch: Callable[[], T],
        done: Callable[[T], bool],
        *,
        poll: float,
        timeout: float | None,
        what: str,
        on_progress: Callable[[T], None] | None = None,
    ) -> T:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            value = fetch()
            if on_progress is not None:
                on_progress(value)
            if done(value):
                return value
            if deadline is not None and time.monotonic() > deadline:
                raise EvalsiteError(None, f"timed out after {timeout:g}s waiting for {what}")
            time.sleep(poll)


def body(**fields: Any) -> dict[str, Any]:
    """A request body of the fields given (None means "not sent")."""
    return {k: v for k, v in fields.items() if v is not None}
