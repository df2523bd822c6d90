"""``GET /healthz``: whether this web process can serve, for container healthchecks and load
balancers.

Answered by a middleware placed first, before anything that reads the Host header (so a probe
from inside the container is answered whatever ALLOWED_HOSTS says), redirects to HTTPS, opens a
session or looks for a user: no sign-in, no cookie, nothing cached. It opens (or checks) its connection
to the database and answers ``ok`` (200) or ``unavailable`` (503), never why: the reason goes to
the log only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import connection
from django.http import HttpRequest, HttpResponse

logger = logging.getLogger(__name__)

HEALTH_PATH = "/healthz"


class HealthCheckMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info != HEALTH_PATH or request.method not in ("GET", "HEAD"):
            return self.get_response(request)
        return health_answer()


def health_answer() -> HttpResponse:
    try:
        connection.ensure_connection()
        if not connection.is_usable():  # PostgreSQL: a round trip (SQLite's file is always)
            raise ConnectionError("the database connection is not usable")
    except Exception:  # noqa: BLE001 - any failure means "not healthy"; the log has which
        logger.exception("health check failed: the database cannot be reached")
        return _plain("unavailable", 503)
    return _plain("ok", 200)


def _plain(text: str, status: int) -> HttpResponse:
    response = HttpResponse(text, status=status, content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response
