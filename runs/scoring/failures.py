"""Reading an exception from the HTTP stack: its message, its causes, its Retry-After.

Duck-typed on purpose (attribute and class names), so it needs no import of litellm: judge.py
stays the only module that does.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from typing import Any

_NOISE = re.compile(r"^(?:litellm\.\w+:\s*)?(?:\w+Error:\s*)?(?:\w+Exception\s*-\s*)?")
# Where an HTTP client's message starts quoting the response body (the SDK's "Error code: 400 -
# {...}", litellm's "Received: '...'", an HTML page): what follows is not shown to a team.
_BODY_QUOTE = re.compile(r"\s*(?:-\s*[{\[]|Received:|<[a-zA-Z!]|\{['\"]).*$", re.S)
MAX_DETAIL_CHARS = 300


def detail(exc: Exception) -> str:
    """The provider's own words (a JSON error's ``message``), without litellm's prefixes and
    never a quoted response body, on one line, capped: the server at a team's api_base may be
    anything, and its body must not come back through an error."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        text = body["message"]
    else:
        text = str(getattr(exc, "message", None) or exc)
        text = _BODY_QUOTE.sub("", _NOISE.sub("", text.strip()))
    text = " ".join(text.split())
    if len(text) > MAX_DETAIL_CHARS:
        text = text[: MAX_DETAIL_CHARS - 1] + "…"
    return text or type(exc).__name__


def _header(headers: Any, name: str) -> str | None:
    try:
        items = headers.items()
    except AttributeError:
        return None
    return next((str(v) for k, v in items if str(k).lower() == name), None)


def _seconds(value: str) -> float | None:
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:  # Retry-After may also be an HTTP date
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def retry_after_of(exc: Exception) -> float | None:
    """Retry-After (or retry-after-ms) from the error's response headers, in seconds."""
    response = getattr(exc, "response", None)
    for headers in (
        getattr(response, "headers", None),
        getattr(exc, "litellm_response_headers", None),
        getattr(exc, "headers", None),
    ):
        if not headers:
            continue
        millis = _header(headers, "retry-after-ms")
        if millis is not None and (value := _seconds(millis)) is not None:
            return value / 1000
        plain = _header(headers, "retry-after")
        if plain is not None and (value := _seconds(plain)) is not None:
            return value
    return None


CONNECTION_FAILURES = {
    "APIConnectionError",
    "ConnectError",
    "ClientConnectorError",
    "ServerDisconnectedError",
    "ClientOSError",
    "ClientPayloadError",
}
TIMEOUTS = {"APITimeoutError", "ReadTimeout", "ConnectTimeout", "TimeoutError"}


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception and its causes: litellm reports a refused connection as a 500."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 10:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def caused_by(exc: Exception, names: set[str]) -> bool:
    return any(type(e).__name__ in names for e in _chain(exc))
