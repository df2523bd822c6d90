"""The API's per-caller request limit: a token bucket per API key, and per signed-in user and
team for the browser's API calls, shared by every web process (evalsite.ratelimit's backend:
Redis when the broker is Redis, else the SQLite bucket file). Over the limit the API answers
429 with ``Retry-After`` (evalsite.api). Requests whose key is not a team's have no caller:
they share their address's allowance instead (``unknown_key_refusal``)."""

from __future__ import annotations

import logging
import math

from django.conf import settings
from django.http import HttpRequest

from evalsite.errors import TooManyRequests
from evalsite.login import api_key_attempt, client_address
from evalsite.ratelimit import api_take
from teams.api import Caller

logger = logging.getLogger(__name__)


class Throttled(TooManyRequests):
    """The caller spent its request allowance; ``retry_after`` whole seconds until the next."""

    def __init__(self, retry_after: float) -> None:
        wait = max(1, math.ceil(retry_after))
        limit = settings.EVALSITE_API_RATE
        super().__init__(
            f"too many requests: this caller's limit is {limit} per minute "
            f"(EVALSITE_API_RATE, bursts of {settings.EVALSITE_API_BURST}); "
            f"retry after {wait} s",
            limit=limit,
            retry_after=wait,
        )


def caller_key(request: HttpRequest) -> str | None:
    """Whose bucket a request draws from; None when it has no authenticated caller."""
    who = getattr(request, "auth", None)
    if not isinstance(who, Caller):
        return None
    if who.api_key is not None:
        return f"key:{who.api_key.pk}"
    user_id = getattr(who.user, "pk", None)
    return f"user:{user_id}:{who.team.pk}" if user_id is not None else None


def api_throttle(request: HttpRequest) -> None:
    """Take one request from the caller's bucket; raises Throttled when it is empty. A limiter
    that cannot be reached lets the request through (logged): the limit protects the service,
    it must not take it down."""
    who = caller_key(request)
    if who is None:
        return
    try:
        wait = api_take(who=who)
    except Exception:  # noqa: BLE001 - fail open, loudly
        logger.exception("request limiter unavailable; letting %s through", who)
        return
    if wait > 0:
        raise Throttled(wait)


class UnknownKeys(TooManyRequests):
    """This address sent too many requests with keys that are no team's."""

    def __init__(self, retry_after: float) -> None:
        wait = max(1, math.ceil(retry_after))
        limit = settings.EVALSITE_LOGIN_MAX_ATTEMPTS_PER_IP
        super().__init__(
            f"too many requests with an unknown or revoked API key from your network address: "
            f"the limit is {limit} per {settings.EVALSITE_LOGIN_WINDOW:g} s "
            f"(EVALSITE_LOGIN_MAX_ATTEMPTS_PER_IP); retry after {wait} s",
            limit=limit,
            retry_after=wait,
        )


def unknown_key_refusal(request: HttpRequest) -> UnknownKeys | None:
    """For a request that sent ``Authorization`` and was not authenticated: take one attempt
    from its address's allowance; the refusal to answer once it is used up. A valid key is
    never counted, nor refused for its neighbours' bad ones."""
    if not request.headers.get("Authorization"):
        return None
    refusal = api_key_attempt(address=client_address(request))
    return None if refusal is None else UnknownKeys(refusal.wait)
