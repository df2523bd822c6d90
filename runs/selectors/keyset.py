"""Keyset pagination on (created_at, id), shared by the runs and batches lists."""

from __future__ import annotations

import uuid

from django.db.models import Q
from django.utils.dateparse import parse_datetime

from evalsite.pagination import InvalidCursor, cursor_decode, cursor_encode

from ..models import (
    AgentRun,
)


def cursor_of(run: AgentRun) -> str:
    return cursor_encode(run.created_at.isoformat(), run.id)


def after_cursor(cursor: str, *, oldest: bool = False) -> Q:
    created_raw, id_raw = cursor_decode(cursor, size=2)
    try:
        created = parse_datetime(created_raw)
        run_id = uuid.UUID(id_raw)
    except ValueError as exc:
        raise InvalidCursor("not a cursor returned by this list") from exc
    if created is None:
        raise InvalidCursor("not a cursor returned by this list")
    # The redundant bound on created_at alone is what lets PostgreSQL start the index scan at
    # the cursor; with only the OR it walks the index from the top (slow on deep pages).
    if oldest:
        return Q(created_at__gte=created) & (
            Q(created_at__gt=created) | Q(created_at=created, id__gt=run_id)
        )
    return Q(created_at__lte=created) & (
        Q(created_at__lt=created) | Q(created_at=created, id__lt=run_id)
    )
