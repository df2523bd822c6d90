"""Schemas every router shares: the error shape and the response maps that document it."""

from __future__ import annotations

from typing import Any

from ninja import Schema


class ErrorOut(Schema):
    """Every error except ninja's 422: a message for people, details for programs."""

    message: str
    extra: dict[str, Any]


class FieldErrorOut(Schema):
    type: str
    loc: list[str | int]
    msg: str


class ValidationErrorOut(Schema):
    """422: one entry per invalid field; ``loc`` is [where, field, ...]."""

    detail: list[FieldErrorOut]


def errors(*codes: int) -> dict[int, type[Schema]]:
    """Documented error responses: 401 and 403 always (no or revoked key; viewer role or CSRF),
    422 always (invalid query, path or body), 429 always (the caller's request rate limit,
    with ``Retry-After``), plus ``codes`` (400, 404, 409, 413, ...)."""
    out: dict[int, type[Schema]] = {
        401: ErrorOut,
        403: ErrorOut,
        422: ValidationErrorOut,
        429: ErrorOut,
    }
    for code in codes:
        out[code] = ValidationErrorOut if code == 422 else ErrorOut
    return out


def with_errors(ok: dict[int, Any], *codes: int) -> dict[int, Any]:
    return {**ok, **errors(*codes)}
