"""Invitations: an owner revokes a pending one in team settings; whoever opens an invitation
link ``/invite/<token>/`` makes an account with the invited email and joins (signed out), or
joins with the account they are signed in with (when its email is the invited one).

A token that names no invite is a 404 and a used, withdrawn or expired one a 410; neither
page names the team. Every answer of the invite page is marked never-cache (it carries a
secret in its address).
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib import messages
from django.contrib.auth import login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.utils.log import log_response
from django.views.decorators.http import require_http_methods, require_POST

from .access import TeamRequest, owner_required, team_object_or_404
from .forms import InviteSignupForm
from .invites import (
    InviteEmailMismatch,
    InviteGone,
    invite_accept,
    invite_accept_signup,
    invite_by_token,
    invite_check_usable,
    invite_refusal,
    invite_revoke,
)
from .middleware import SESSION_KEY
from .models import TeamInvite
from .services import TeamValidationError

AUTH_BACKEND = "django.contrib.auth.backends.ModelBackend"
GONE = "This invitation is no longer valid"
NO_SUCH_INVITE = (
    "This invitation link is not valid: check that you copied all of it, or ask the person "
    "who invited you for a new one."
)


@owner_required
@require_POST
def invite_revoke_view(request: TeamRequest, invite_id: Any) -> HttpResponse:
    invite = team_object_or_404(request, TeamInvite, id=invite_id)
    invite_revoke(invite=invite)
    messages.success(request, f"Invitation of {invite.email} withdrawn: its link no longer works.")
    return redirect("/team/#members")


@require_http_methods(["GET", "POST"])
def invite_page(request: HttpRequest, token: str) -> HttpResponse:
    """Accept an invitation: the signup form (signed out) or a "Join" button (signed in)."""
    invite = invite_by_token(token=token)
    if invite is None:
        return _gone(request, "No such invitation", NO_SUCH_INVITE, status=404)
    if request.user.is_authenticated and invite.accepted_by_id == request.user.pk:
        return _joined(request, invite, "You are already in")  # accepting twice: no change
    try:
        invite_check_usable(invite=invite)
    except InviteGone as exc:
        return _gone(request, GONE, exc.message)
    if request.user.is_authenticated:
        return _join(request, invite)
    return _signup(request, invite)


def _join(request: HttpRequest, invite: TeamInvite) -> HttpResponse:
    if request.method == "POST":
        try:
            invite_accept(invite=invite, user=request.user)  # type: ignore[arg-type]
        except InviteEmailMismatch as exc:
            context = {"invite": invite, "refusal": exc.message}
            return _page(request, "teams/invite.html", context, status=409)
        except InviteGone as exc:
            return _gone(request, GONE, exc.message)
        return _joined(request, invite, "You joined")
    refusal = invite_refusal(invite=invite, user=request.user)  # type: ignore[arg-type]
    return _page(request, "teams/invite.html", {"invite": invite, "refusal": refusal})


def _signup(request: HttpRequest, invite: TeamInvite) -> HttpResponse:
    form = InviteSignupForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            user = invite_accept_signup(
                invite=invite, username=data["username"], password=data["password1"]
            )
        except TeamValidationError as exc:
            for name, message in exc.errors.items():
                form.add_error(name if name in form.fields else None, message)
        except InviteGone as exc:
            return _gone(request, GONE, exc.message)
        else:
            login(request, user, backend=AUTH_BACKEND)
            return _joined(request, invite, "Welcome! You joined")
    status = 422 if form.errors else 200
    return _page(request, "teams/invite.html", {"invite": invite, "form": form}, status=status)


def _joined(request: HttpRequest, invite: TeamInvite, lead: str) -> HttpResponse:
    request.session[SESSION_KEY] = str(invite.team_id)
    messages.success(request, f"{lead} {invite.team.name}.")
    return redirect("home")


def _gone(request: HttpRequest, heading: str, message: str, status: int = 410) -> HttpResponse:
    context = {"heading": heading, "message": message}
    return _page(request, "teams/invite_gone.html", context, status=status)


def _page(
    request: HttpRequest, template: str, context: dict[str, Any], *, status: int = 200
) -> HttpResponse:
    response = render(request, template, context, status=status)
    add_never_cache_headers(response)
    if status >= 400:
        # Logged here, as django.request would, but without the token the path carries (a
        # used or expired one was a secret); log_response marks it logged for Django.
        path = re.sub(r"/invite/[^/]+", "/invite/<token>", request.path)
        log_response("%s: %s", response.reason_phrase, path, response=response, request=request)
    return response
