"""The one NinjaAPI: every router is mounted here. OpenAPI at /api/openapi.json, docs at /api/docs.

Errors: ninja's own 422 (``{"detail": [{"loc", "msg", "type"}]}``) for invalid input, which our
services' field errors (``evalsite.errors.FieldErrors``) join so every field error looks the
same; every other application error (``evalsite.errors.AppError``) answers
``{"message": str, "extra": {...}}`` with its own status and headers. Two handlers do that,
keyed on those base classes, so this module imports no app's errors and routers raise without
importing anything from here. No input makes the API answer 500: anything unexpected is logged
and answered with the error shape.
"""

from __future__ import annotations

import json
import logging
import math
import re
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.db import OperationalError
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.parser import Parser

from judge_engine.redact import internal_error, new_ref, tenant_error
from teams.api import api_auth
from teams.api_throttle import api_throttle, unknown_key_refusal

from .bodies import TRUNCATED
from .errors import AppError, FieldErrors, TooLarge

logger = logging.getLogger(__name__)

# Bodies are refused before parsing above these sizes. A run's own limit
# (EVALSITE_MAX_RUN_BYTES, on its compact UTF-8 JSON) is checked exactly by the ingest service;
# the raw body may be up to three times larger for the same run, because clients escape
# non-ASCII text (json.dumps' default: "\ud83d\ude00" is 12 bytes for a 4-byte emoji).
BODY_MARGIN = 3
BULK_PATH = re.compile(r"/runs/bulk/?$")
# An OTLP export carries many traces; each trace's own limit is checked by runs/otel.
OTEL_PATH = re.compile(r"/otel/v1/traces/?$")


def body_limit(request: HttpRequest) -> tuple[int, str]:
    """The largest body accepted before parsing, and the setting it comes from."""
    if BULK_PATH.search(request.path) or OTEL_PATH.search(request.path):
        return settings.EVALSITE_MAX_BULK_BYTES, "EVALSITE_MAX_BULK_BYTES"
    return settings.EVALSITE_MAX_RUN_BYTES * BODY_MARGIN + 16_384, "EVALSITE_MAX_RUN_BYTES"


class PayloadTooLarge(TooLarge):
    """The body is over body_limit(request), refused before parsing. The message names the
    documented limit (the setting's value) and the setting, not the raw byte margin kept for
    escaped text; ``extra`` carries both."""

    def __init__(self, length: int, limit: int, setting: str, *, truncated: bool = False) -> None:
        documented = getattr(settings, setting)
        kind = "a bulk request" if setting == "EVALSITE_MAX_BULK_BYTES" else "a run"
        # A chunked body is read only up to the largest limit: its length is a lower bound.
        size = f"over {length - 1:,}" if truncated else f"{length:,}"
        super().__init__(
            f"request body is {size} bytes; the limit for {kind} is {documented:,} bytes "
            f"({setting})",
            extra={"limit": documented, "setting": setting, "body_limit": limit},
        )


# Text PostgreSQL cannot store (NUL, lone surrogates): refused at the door, not at the INSERT.
UNSTORABLE_TEXT = re.compile("[\x00\ud800-\udfff]")


class StrictJsonParser(Parser):
    """JSON bodies that the database can store: no NaN/Infinity, no NUL, no lone surrogates."""

    def parse_body(self, request: HttpRequest) -> Any:
        data = json.loads(request.body, parse_constant=_reject_constant, parse_float=_finite)
        _check_text(data)
        return data


def _check_query(request: HttpRequest) -> None:
    """Text the database could not compare (NUL on PostgreSQL) fails here, not in a query: in
    the path it names nothing (404), in a query parameter it is a 422 on that parameter."""
    if UNSTORABLE_TEXT.search(request.path):
        raise Http404("No such object: the path contains NUL or unpaired surrogates")
    bad = {
        name: "may not contain NUL (\\u0000) or unpaired surrogates"
        for name, values in request.GET.lists()
        if any(UNSTORABLE_TEXT.search(v) for v in values)
    }
    if bad:
        raise FieldErrors(bad, location="query")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def _check_text(data: Any) -> None:
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if UNSTORABLE_TEXT.search(item):
                raise ValueError("strings may not contain NUL (\\u0000) or unpaired surrogates")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


class EvalsiteAPI(NinjaAPI):
    def create_temporal_response(self, request: HttpRequest) -> HttpResponse:
        # Called after authentication and before the body is read: the cheapest place to
        # refuse a caller over its request rate, or an oversized body, without parsing it.
        api_throttle(request)
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        limit, setting = body_limit(request)
        if length > limit:
            raise PayloadTooLarge(
                length, limit, setting, truncated=bool(request.META.get(TRUNCATED))
            )
        _check_query(request)
        return super().create_temporal_response(request)

    def get_openapi_schema(self, **kwargs: Any) -> Any:
        """Document the answers every operation with a body can give, whichever router it
        comes from: 400 (malformed JSON) and 413 (body too large), in the error shape."""
        schema = super().get_openapi_schema(**kwargs)
        error_ref = {"$ref": "#/components/schemas/ErrorOut"}
        for operations in schema["paths"].values():
            for operation in operations.values():
                if "requestBody" not in operation:
                    continue
                for code, what in ((400, "Malformed JSON body"), (413, "Body too large")):
                    operation["responses"].setdefault(
                        code,
                        {
                            "description": what,
                            "content": {"application/json": {"schema": error_ref}},
                        },
                    )
        return schema


api = EvalsiteAPI(
    title="evalsite API",
    version="1",
    description=(
        "Ingest agent runs, author rubrics, score and re-score with an LLM judge. "
        "Authenticate with `Authorization: Bearer <api key>` (or a browser session with its "
        'CSRF token). Errors other than 422 answer `{"message": ..., "extra": {...}}`.'
    ),
    urls_namespace="api",
    auth=api_auth,
    parser=StrictJsonParser(),
)


def error(request: HttpRequest, status: int, message: str, **extra: Any) -> HttpResponse:
    return api.create_response(request, {"message": message, "extra": extra}, status=status)


def field_errors(location: str, errors: dict[str, str]) -> NinjaValidationError:
    """Service field errors in ninja's 422 shape, so clients read one kind of 422. Ninja
    names a body field ["body", "payload", field] (after the operations' body parameter)."""
    prefix = [location, "payload"] if location == "body" else [location]
    return NinjaValidationError(
        [
            {"type": "value_error", "loc": [*prefix, *_path(field)], "msg": message}
            for field, message in errors.items()
        ]
    )


def _path(field: str) -> list[str | int]:
    """``criteria[2].description`` → ["criteria", 2, "description"]."""
    parts: list[str | int] = []
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", field):
        parts.append(int(index) if index else name)
    return parts or [field]


@api.exception_handler(AuthenticationError)
def on_unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    refused = unknown_key_refusal(request)
    if refused is not None:
        return on_app_error(request, refused)
    return error(
        request,
        401,
        "Authentication required: send `Authorization: Bearer <api key>` with an active key "
        "(or sign in to the site).",
    )


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    message = str(exc)
    cause = exc.__cause__
    if exc.status_code == 400 and cause is not None:
        # ninja wraps any body parse failure in "Cannot parse request body": say why.
        message = f"Malformed JSON body: {_describe(cause)}"
    return error(request, exc.status_code, message)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} (line {exc.lineno}, column {exc.colno})"
    if isinstance(exc, RequestDataTooBig):
        return "the body is too large"
    if isinstance(exc, UnicodeDecodeError):
        return "the body is not UTF-8 text"
    return tenant_error(str(exc), limit=300) or type(exc).__name__


@api.exception_handler(NinjaValidationError)
def on_validation_error(request: HttpRequest, exc: NinjaValidationError) -> HttpResponse:
    return api.create_response(request, {"detail": exc.errors}, status=422)


@api.exception_handler(FieldErrors)
def on_field_errors(request: HttpRequest, exc: FieldErrors) -> HttpResponse:
    """Every service's field errors (rubrics, runs, re-scoring, reviews, teams, cursors)."""
    return on_validation_error(request, field_errors(exc.location, exc.errors))


@api.exception_handler(AppError)
def on_app_error(request: HttpRequest, exc: AppError) -> HttpResponse:
    """Every other application error: its message, extra and status (409 conflicts, 413
    limits, 429 caps with ``Retry-After``, the bulk 422 listing its items)."""
    response = error(request, exc.status, exc.message, **exc.extra)
    for name, value in exc.headers().items():
        response[name] = value
    return response


@api.exception_handler(RequestDataTooBig)
def on_request_too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return error(request, 413, "request body is too large", limit=body_limit(request))


@api.exception_handler(Http404)
def on_not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error(request, 404, str(exc) or "Not found")


@api.exception_handler(PermissionDenied)
def on_forbidden(request: HttpRequest, exc: PermissionDenied) -> HttpResponse:
    return error(request, 403, str(exc) or "Forbidden")


@api.exception_handler(OperationalError)
def on_database_away(request: HttpRequest, exc: OperationalError) -> HttpResponse:
    """The database cannot be reached, or every pooled connection stayed busy for
    EVALSITE_DB_POOL_TIMEOUT: nothing was stored by the failed statement, and the caller
    should try again. The reason goes to the log under the reference, never to the caller."""
    ref = new_ref()
    logger.warning(
        "database unavailable in %s %s (ref %s): %s", request.method, request.path, ref, exc
    )
    response = error(
        request,
        503,
        f"The database is unavailable or busy; try again shortly (ref {ref}).",
        ref=ref,
    )
    response["Retry-After"] = "5"
    return response


@api.exception_handler(Exception)
def on_unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
    ref = new_ref()
    logger.exception("unhandled error in %s %s (ref %s)", request.method, request.path, ref)
    return error(request, 500, internal_error(ref), ref=ref)


api.add_router("/rubrics", "rubrics.api.router")
api.add_router("/connections", "teams.api_connections.router")
api.add_router("/team/invites", "teams.api_invites.router")
api.add_router("/team", "teams.api_team.router")
# Mounted in any order: every path is answered by one route (tests/api/test_routes_unique.py).
api.add_router("", "reviews.api_export.router")
api.add_router("", "runs.api.router")
api.add_router("", "judging.api_rescore.router")
api.add_router("", "reviews.api_compare.router")
api.add_router("", "judging.api_usage.router")
api.add_router("", "reviews.api.router")
api.add_router("", "reviews.api_suggest.router")
api.add_router("", "reviews.api_draft.router")
api.add_router("/alerts", "reviews.api_alerts.router")
api.add_router("/otel", "runs.api_otel.router")
