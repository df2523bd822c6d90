"""Keyset pagination helpers shared by the API and the HTML lists.

A cursor is an opaque, URL-safe token holding the sort key of the last row of a page. It says
nothing about the filters: the caller sends the same filters with the cursor, and a cursor that
does not decode is an error the caller reports on its ``cursor`` field.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from django.conf import settings

from evalsite.errors import FieldErrors

DEFAULT_PAGE_SIZE = 50


class InvalidCursor(FieldErrors):
    """The cursor was not produced by us (or for another list): a 422 on the ``cursor`` query
    parameter; ``str(exc)`` is the bare message."""

    location = "query"

    def __init__(self, message: str) -> None:
        super().__init__({"cursor": message}, message)


def page_size(limit: int | None) -> int:
    """The page size to use: the requested one, clamped to 1..EVALSITE_PAGE_SIZE_MAX."""
    wanted = DEFAULT_PAGE_SIZE if limit is None else limit
    return max(1, min(wanted, settings.EVALSITE_PAGE_SIZE_MAX))


def cursor_encode(*values: Any) -> str:
    raw = json.dumps([str(v) for v in values], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def cursor_decode(cursor: str, *, size: int) -> list[str]:
    """The ``size`` string values packed by cursor_encode; InvalidCursor for anything else."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (UnicodeError, binascii.Error, ValueError) as exc:
        raise InvalidCursor("not a cursor returned by this list") from exc
    if not isinstance(values, list) or len(values) != size:
        raise InvalidCursor("not a cursor returned by this list")
    if not all(isinstance(v, str) for v in values):
        raise InvalidCursor("not a cursor returned by this list")
    return values
