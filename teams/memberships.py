"""Writes for teams a user makes and the people in them: onboarding (a signed-in user without
a team makes one), inviting members by username or email, changing roles, removing members.

A team always keeps an owner: removing or demoting its last owner is refused with a message
saying what to do instead.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.utils.text import slugify

from evalsite.errors import Conflict

from .models import Membership, Role, Team
from .services import TeamValidationError, membership_set, team_create

TEAM_NAME_MAX = 120


class LastOwner(Conflict):
    """The change would leave the team without an owner (409)."""


def team_creation_allowed(*, user: User) -> bool:
    """Whether ``user`` may make a team in the UI: always the first user of a fresh
    deployment (no team exists yet), else anyone unless EVALSITE_ALLOW_TEAM_CREATION is off."""
    if not user.is_authenticated:
        return False
    return settings.EVALSITE_ALLOW_TEAM_CREATION or not Team.objects.exists()


def team_create_for(*, name: str, owner: User | None) -> Team:
    """A new team named ``name`` (slug made from it, unique), with ``owner`` as its owner."""
    name = (name or "").strip()
    if not name or len(name) > TEAM_NAME_MAX:
        raise TeamValidationError({"name": f"1 to {TEAM_NAME_MAX} characters"})
    return team_create(name=name, slug=_free_slug(name), owner=owner)


def _free_slug(name: str) -> str:
    base = (slugify(name) or "team")[:50].strip("-") or "team"
    slug, n = base, 1
    while Team.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def user_find(*, who: str) -> User | None:
    """The user with this username, or the one user with this email (case-insensitive)."""
    who = (who or "").strip()
    if not who:
        return None
    users = get_user_model().objects
    found = users.filter(username__iexact=who).first()
    if found is None and "@" in who:
        matches = list(users.filter(email__iexact=who)[:2])
        found = matches[0] if len(matches) == 1 else None
    return found


def member_invite(*, team: Team, who: str, role: str) -> Membership:
    """Add the registered user named by username or email to ``team`` with ``role``."""
    if role not in Role.values:
        raise TeamValidationError({"role": "one of owner, editor, viewer"})
    user = user_find(who=who)
    if user is None:
        raise TeamValidationError(
            {
                "who": f"no registered user has the username or email {who.strip()!r}: "
                "enter their email address to invite them (they make their account from the "
                "invitation link)"
            }
        )
    if Membership.objects.filter(team=team, user=user).exists():
        raise TeamValidationError({"who": f"{user.get_username()} is already in this team"})
    return membership_set(team=team, user=user, role=role)


def member_role_set(*, membership: Membership, role: str) -> Membership:
    """Change a member's role; the team's last owner cannot be demoted."""
    if role not in Role.values:
        raise TeamValidationError({"role": "one of owner, editor, viewer"})
    with transaction.atomic():
        if role != Role.OWNER:
            _keep_an_owner(membership, "demote")
        membership.role = role
        membership.save(update_fields=["role"])
    return membership


def member_remove(*, membership: Membership) -> None:
    """Take a member out of the team; the team's last owner cannot be removed."""
    with transaction.atomic():
        _keep_an_owner(membership, "remove")
        membership.delete()


def _keep_an_owner(membership: Membership, action: str) -> None:
    if membership.role != Role.OWNER:
        return
    owners = Membership.objects.select_for_update().filter(team=membership.team, role=Role.OWNER)
    if not owners.exclude(pk=membership.pk).exists():
        raise LastOwner(
            f"{membership.user.get_username()} is the team's last owner: make another member "
            f"an owner before you {action} them"
        )
