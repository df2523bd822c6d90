"""Judge connections: /api/connections. ``{connection}`` is the connection's id or its name.

Everyone in the team may list them (rubrics choose them by name); only owners and the team's
API keys create, change or delete them. A connection's key is write-only: no answer contains
it, only whether there is one and its last four characters.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from django.http import Http404, HttpRequest
from ninja import Field, Path, Router, Schema, Status
from pydantic import ConfigDict

from evalsite.schemas import with_errors

from .api import caller, manager
from .models import JudgeConnection
from .selectors import judge_connection_get, judge_connections_list
from .services import connection_create, connection_delete, connection_update

router = Router(tags=["connections"])

ConnectionRef = Path(..., max_length=100, description="Connection id or name")


class ConnectionOut(Schema):
    id: UUID
    name: str
    model: str = Field(description="litellm model string")
    api_base: str | None = Field(description="null = the provider's default endpoint")
    has_key: bool
    key_hint: str | None = Field(description="The key's last four characters (long keys only)")
    params: dict[str, Any]
    created_at: datetime
    updated_at: datetime


class ConnectionIn(Schema):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=100)
    model: str = Field(min_length=1, max_length=200, description="e.g. openai/gpt-4o-mini")
    api_base: str = Field(default="", max_length=500, description="empty = provider default")
    api_key: str | None = Field(default=None, max_length=2000, description="Write-only")
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="temperature, max_tokens, timeout and OpenAI request body fields",
    )


UNSET: Any = None


class ConnectionPatch(Schema):
    """Only the fields sent change; ``api_key`` replaces the key (null or "" removes it)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(default=UNSET, min_length=1, max_length=100)
    model: str = Field(default=UNSET, min_length=1, max_length=200)
    api_base: str = Field(default=UNSET, max_length=500)
    api_key: str | None = Field(default=None, max_length=2000, description="Write-only")
    params: dict[str, Any] = Field(default=UNSET)


def _out(connection: JudgeConnection) -> dict[str, Any]:
    return {
        "id": connection.pk,
        "name": connection.name,
        "model": connection.model,
        "api_base": connection.api_base or None,
        "has_key": connection.has_key,
        "key_hint": connection.key_hint or None,
        "params": connection.params,
        "created_at": connection.created_at,
        "updated_at": connection.updated_at,
    }


def _found(request: HttpRequest, ref: str) -> JudgeConnection:
    connection = judge_connection_get(team=caller(request).team, ref=ref)
    if connection is None:
        raise Http404("No such judge connection in this team")
    return connection


@router.get("", response=with_errors({200: list[ConnectionOut]}))
def list_connections(request: HttpRequest):
    """The team's judge connections by name (at most one page: a team has few)."""
    return [_out(c) for c in judge_connections_list(team=caller(request).team)[:500]]


@router.post("", response=with_errors({201: ConnectionOut}, 400, 413))
def create_connection(request: HttpRequest, payload: ConnectionIn):
    """Create a connection (owners and API keys)."""
    connection = connection_create(team=manager(request).team, **payload.model_dump())
    return Status(201, _out(connection))


@router.get("/{connection}", response=with_errors({200: ConnectionOut}, 404))
def get_connection(request: HttpRequest, connection: str = ConnectionRef):
    return _out(_found(request, connection))


@router.patch("/{connection}", response=with_errors({200: ConnectionOut}, 400, 404, 413))
def update_connection(
    request: HttpRequest, payload: ConnectionPatch, connection: str = ConnectionRef
):
    """Change the fields sent (owners and API keys)."""
    manager(request)
    found = _found(request, connection)
    return _out(connection_update(connection=found, **payload.model_dump(exclude_unset=True)))


@router.delete("/{connection}", response=with_errors({204: None}, 404, 409))
def delete_connection(request: HttpRequest, connection: str = ConnectionRef):
    """Delete (owners and API keys): 409 while rubrics choose it."""
    manager(request)
    connection_delete(connection=_found(request, connection))
    return Status(204, None)
