"""Failure classification: an exception from the HTTP stack (litellm's, the direct
transport's, aiohttp's) becomes a transient or a permanent judge error a person can act on.

Reading an exception (its message, its causes, its Retry-After) is duck-typed on purpose
(attribute and class names), so it works the same for both transports; litellm's own exception
classes come from llm.py, the only module that imports litellm.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from typing import Any

from . import llm
from .errors import PermanentJudgeError, TransientJudgeError
from .types import JudgeConfig

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


# --- Classification ----------------------------------------------------------------------------

_AUTH_HELP = "set EVALSITE_JUDGE_API_KEY, or the key of the rubric's judge connection"


def _transient(
    exc: Exception, config: JudgeConfig, status: int | None
) -> TransientJudgeError | None:
    where = config.api_base or "the provider's endpoint"
    timed_out = status in (None, 408, 500) and caused_by(exc, TIMEOUTS)
    if isinstance(exc, llm.Timeout) or timed_out:
        return TransientJudgeError(
            f"judge did not answer within {config.timeout:g}s (timeout): raise the judge timeout "
            f"or check that {where} is responsive"
        )
    if isinstance(exc, llm.RateLimitError) or status == 429:
        retry_after = retry_after_of(exc)
        hint = f", asks to retry after {retry_after:g}s" if retry_after is not None else ""
        return TransientJudgeError(
            f"judge rate-limited the request (429{hint}): {detail(exc)}", retry_after=retry_after
        )
    connection = isinstance(exc, llm.APIConnectionError) or caused_by(exc, CONNECTION_FAILURES)
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
    if isinstance(exc, llm.ContextWindowExceededError):
        return PermanentJudgeError(
            f"the prompt does not fit the judge model's context window ({said}): use a judge "
            "model with a larger context"
        )
    if isinstance(exc, llm.AuthenticationError) or status == 401:
        return PermanentJudgeError(f"judge rejected the API key (401) — {_AUTH_HELP} ({said})")
    if isinstance(exc, llm.PermissionDeniedError) or status == 403:
        return PermanentJudgeError(
            f"judge refused access (403) to model {config.model!r}: check that the API key may "
            f"use this model ({said})"
        )
    if isinstance(exc, llm.NotFoundError) or status == 404:
        return PermanentJudgeError(
            f"judge model {config.model!r} not found (404) at "
            f"{config.api_base or 'its provider'}: check the litellm model string and the "
            f"api_base ({said})"
        )
    if status is not None and 300 <= status < 400:
        return PermanentJudgeError(said)  # direct.py's own words: redirects are not followed
    if isinstance(exc, llm.BadRequestError) or status in (400, 422):
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
