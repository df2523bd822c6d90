"""Attach the signed-in user's current team and membership to every request."""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from .selectors import memberships_for_user

SESSION_KEY = "current_team_id"


class CurrentTeamMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.team = None  # type: ignore[attr-defined]
        request.membership = None  # type: ignore[attr-defined]
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            self._attach(request)
        return self.get_response(request)

    def _attach(self, request: HttpRequest) -> None:
        wanted = request.session.get(SESSION_KEY)
        memberships = list(memberships_for_user(user=request.user))
        chosen = next((m for m in memberships if str(m.team_id) == wanted), None)
        chosen = chosen or (memberships[0] if memberships else None)
        request.memberships = memberships  # type: ignore[attr-defined]
        if chosen is not None:
            request.team = chosen.team  # type: ignore[attr-defined]
            request.membership = chosen  # type: ignore[attr-defined]
