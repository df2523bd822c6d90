"""The one access helper for HTML views: objects of another team are a 404."""

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Model, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django_htmx.middleware import HtmxDetails

from .models import Membership, Role, Team


class TeamRequest(HttpRequest):
    """What the middlewares add (django-stubs' typing pattern): htmx details and the team."""

    htmx: HtmxDetails
    team: Team
    membership: Membership


def team_object_or_404(request: HttpRequest, queryset: QuerySet | type[Model], **lookup: Any):
    """The team's object matching ``lookup``; 404 for another team's, a missing one, or a
    lookup value the field cannot hold (a malformed UUID names no object either)."""
    team = getattr(request, "team", None)
    if team is None:
        raise Http404("No team")
    qs = queryset if isinstance(queryset, QuerySet) else queryset._default_manager.all()
    try:
        return get_object_or_404(qs, team=team, **lookup)
    except (ValidationError, ValueError, OverflowError):
        raise Http404("No such object") from None


def bad_request(request: HttpRequest, message: str) -> HttpResponse:
    """A 400 page saying what was wrong with the request (a form post no page offers)."""
    return render(request, "400.html", {"message": message}, status=400)


def team_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Signed-in users without a team are sent to a page that says so."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect(f"/accounts/login/?next={request.path}")
        if getattr(request, "team", None) is None:
            return redirect("no_team")
        return view(request, *args, **kwargs)

    return wrapper


def editor_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Viewers read; only owners and editors change anything."""

    @wraps(view)
    @team_required
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.membership.can_edit:  # type: ignore[attr-defined]
            raise PermissionDenied(
                "Your role in this team is viewer: ask an owner for edit rights."
            )
        return view(request, *args, **kwargs)

    return wrapper


def owner_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Team-wide settings (judge connections): owners only."""

    @wraps(view)
    @team_required
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.membership.role != Role.OWNER:  # type: ignore[attr-defined]
            raise PermissionDenied("Only the team's owners can change this: ask an owner.")
        return view(request, *args, **kwargs)

    return wrapper
