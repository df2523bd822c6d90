"""Schemas every router shares: the error shape, the response maps that document it, and the
bounds of every number the API accepts."""

from __future__ import annotations

from typing import Annotated, Any

from ninja import Schema
from pydantic import Field

# --- Numbers in range ------------------------------------------------------------------------
# Every integer and decimal input is bounded by what its column holds (PostgreSQL's types;
# SQLite's are no narrower), so an out-of-range value is a 422 naming the field, never a
# database error. Domain limits (1..168 hours, 0..1 fractions) stay with the services, whose
# messages say what the value means; these bounds only keep a value storable.
SMALLINT_MAX = 32_767  # SmallIntegerField, PositiveSmallIntegerField
INT_MAX = 2_147_483_647  # IntegerField, PositiveIntegerField
BIGINT_MAX = 9_223_372_036_854_775_807  # BigIntegerField, PositiveBigIntegerField
# A FloatField holds any double, but past 2**53 doubles no longer count whole units: no
# amount of ours (USD, percent, points, seconds) comes near it.
FLOAT_MAX = float(2**53)

Count = Annotated[int, Field(ge=0, le=INT_MAX)]  # a PositiveIntegerField
BigCount = Annotated[int, Field(ge=0, le=BIGINT_MAX)]  # a PositiveBigIntegerField
Amount = Annotated[float, Field(ge=0, le=FLOAT_MAX)]  # a FloatField of a non-negative amount
SignedAmount = Annotated[float, Field(ge=-FLOAT_MAX, le=FLOAT_MAX)]  # any other FloatField


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
