"""API authentication: team API keys (``Authorization: Bearer <key>``) and the browser session.

Either way an operation receives a :class:`Caller` as ``request.auth``: the team every read and
write is scoped to, and whether the caller may change things. API keys act with editor rights;
a signed-in user acts with the role of their membership in their current team. Team-wide
settings (judge connections) are for owners and API keys only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja.errors import AuthorizationError
from ninja.security import APIKeyCookie, HttpBearer
from ninja.utils import check_csrf

from .models import ApiKey, Role, Team
from .selectors import api_key_authenticate


@dataclass(frozen=True)
class Caller:
    team: Team
    can_edit: bool
    user: Any = None
    api_key: ApiKey | None = None
    # Team-wide settings (judge connections): owners, and the team's API keys.
    can_manage: bool = False


def caller(request: HttpRequest) -> Caller:
    """The authenticated caller of an API operation (set by one of the auth classes below)."""
    return request.auth  # type: ignore[attr-defined]


def manager(request: HttpRequest) -> Caller:
    """The caller, who must be an owner or use a team API key: others get a 403."""
    found = caller(request)
    if not found.can_manage:
        raise AuthorizationError(
            message="Only the team's owners (or a team API key) can manage this: ask an owner."
        )
    return found


def editor(request: HttpRequest) -> Caller:
    """The caller, who must be allowed to write: viewers get a 403 with the error shape."""
    found = caller(request)
    if not found.can_edit:
        raise AuthorizationError(
            message="Your role in this team is viewer: ask an owner for edit rights."
        )
    return found


def bearer_token(header: str) -> str | None:
    """The credential of an ``Authorization: Bearer <token>`` header (the scheme in any case,
    as RFC 9110 has it), or None for any other header. Never logged: whatever a client sends
    there may be a key, even in the wrong place."""
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


class ApiKeyAuth(HttpBearer):
    """``Authorization: Bearer <key>`` with an active key of a team. The header is parsed
    here, not by ninja's HttpBearer, which logs a malformed header whole (the key with it)."""

    def __call__(self, request: HttpRequest) -> Caller | None:
        token = bearer_token(request.headers.get(self.header) or "")
        return None if token is None else self.authenticate(request, token)

    def authenticate(self, request: HttpRequest, token: str) -> Caller | None:
        key = api_key_authenticate(raw=token.strip())
        if key is None:
            return None
        return Caller(team=key.team, can_edit=True, api_key=key, can_manage=True)


class SessionAuth(APIKeyCookie):
    """The signed-in user's session, for browser calls. Unsafe methods need the CSRF token.

    Unlike ninja's own SessionAuth, the CSRF check only runs for a signed-in user, so an
    anonymous call (or one with a revoked key) answers 401, not a CSRF 403.
    """

    param_name = settings.SESSION_COOKIE_NAME

    def _get_key(self, request: HttpRequest) -> str | None:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return None
        if check_csrf(request):
            raise AuthorizationError(
                message="CSRF check failed: send the csrftoken cookie's value in X-CSRFToken."
            )
        return request.COOKIES.get(self.param_name)

    def authenticate(self, request: HttpRequest, key: str | None) -> Caller | None:
        membership = getattr(request, "membership", None)
        if key is None or membership is None:
            return None
        return Caller(
            team=membership.team,
            can_edit=membership.can_edit,
            user=request.user,
            can_manage=membership.role == Role.OWNER,
        )


api_auth = [ApiKeyAuth(), SessionAuth()]
