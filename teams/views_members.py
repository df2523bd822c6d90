"""Onboarding and the people in a team: making a team from the "no team" page, and (owners
only) adding members or inviting email addresses without an account, changing roles and
removing members in team settings."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from evalsite.errors import page_message

from .access import TeamRequest, owner_required, team_object_or_404
from .forms import InviteForm, RoleForm, TeamCreateForm
from .invites import NewInvite, invite_send, member_add_or_invite
from .memberships import (
    LastOwner,
    member_remove,
    member_role_set,
    team_create_for,
    team_creation_allowed,
)
from .middleware import SESSION_KEY
from .models import Membership
from .services import TeamValidationError
from .views import settings_page


def apply_errors(
    form: forms.Form, error: TeamValidationError, aliases: dict[str, str] | None = None
) -> None:
    for name, message in error.errors.items():
        name = (aliases or {}).get(name, name)
        form.add_error(name if name in form.fields else None, message)


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def no_team(request: HttpRequest) -> HttpResponse:
    """The page of a signed-in user without a team: make one (when allowed), or ask an owner."""
    allowed = team_creation_allowed(user=request.user)  # type: ignore[arg-type]
    form = TeamCreateForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and allowed and form.is_valid():
        try:
            team = team_create_for(name=form.cleaned_data["name"], owner=request.user)  # type: ignore[arg-type]
        except TeamValidationError as exc:
            apply_errors(form, exc)
        else:
            request.session[SESSION_KEY] = str(team.id)
            messages.success(request, f"Team “{team.name}” created: you are its owner.")
            return redirect("home")
    status = 403 if request.method == "POST" and not allowed else 200
    status = 422 if form.errors else status
    context = {"form": form, "can_create": allowed}
    return render(request, "teams/no_team.html", context, status=status)


@never_cache
@owner_required
@require_POST
def member_invite_view(request: TeamRequest) -> HttpResponse:
    """Add a registered user, or invite an email address without an account: the invite's
    link is shown on this response only (it is stored hashed, hence no redirect)."""
    form = InviteForm(request.POST)
    if form.is_valid():
        try:
            added = member_add_or_invite(
                team=request.team,
                created_by=request.user,  # type: ignore[arg-type]
                **form.cleaned_data,
            )
        except TeamValidationError as exc:
            apply_errors(form, exc, aliases={"email": "who"})
        else:
            if isinstance(added, NewInvite):
                link = request.build_absolute_uri(added.path)
                mailed = invite_send(new=added, link=link)
                return settings_page(request, new_invite=added, invite_url=link, mailed=mailed)
            name = added.user.get_username()
            messages.success(request, f"{name} added as {added.get_role_display().lower()}.")
            return redirect("/team/#members")
    return settings_page(request, invite_form=form, status=422)


@owner_required
@require_POST
def member_role_view(request: TeamRequest, membership_id: Any) -> HttpResponse:
    membership = team_object_or_404(
        request, Membership.objects.select_related("user"), pk=membership_id
    )
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Pick a role: owner, editor or viewer.")
        return redirect("/team/#members")
    try:
        member_role_set(membership=membership, role=form.cleaned_data["role"])
    except LastOwner as exc:
        messages.error(request, page_message(exc))
    else:
        messages.success(
            request,
            f"{membership.user.get_username()} is now {membership.get_role_display().lower()}.",
        )
    return redirect("/team/#members")


@owner_required
@require_POST
def member_remove_view(request: TeamRequest, membership_id: Any) -> HttpResponse:
    membership = team_object_or_404(
        request, Membership.objects.select_related("user"), pk=membership_id
    )
    try:
        member_remove(membership=membership)
    except LastOwner as exc:
        messages.error(request, page_message(exc))
    else:
        messages.success(request, f"{membership.user.get_username()} removed from the team.")
    return redirect("/team/#members")
