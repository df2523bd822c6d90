"""Invitations of people who have no account yet: an owner invites an email address with a
role and gets a link ``/invite/<token>/`` once; whoever opens it makes an account with that
address (or, signed in with that address, joins) and becomes a member with the role.

The token is 32 random bytes (``secrets.token_urlsafe``): only its SHA-256 is stored, so the
link cannot be shown again, and guessing one is hopeless without any rate limit. An invite is
used once: accepting it again changes nothing. It expires after ``EVALSITE_INVITE_DAYS``.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from evalsite.errors import AppError, Conflict

from .memberships import member_invite, user_find
from .models import Membership, Role, Team, TeamInvite
from .services import TeamValidationError, membership_set

INVITE_PATH = "/invite/{token}/"
DUMMY_BACKEND = "django.core.mail.backends.dummy.EmailBackend"
logger = logging.getLogger(__name__)


class InviteGone(AppError):
    """The invite was used, revoked or has expired (410); the message names no team."""

    status = 410


class InviteEmailMismatch(Conflict):
    """A signed-in user whose email is not the invited one tried to accept it."""


@dataclass(frozen=True)
class NewInvite:
    """A pending invite and its link's token: the only time the token exists in clear."""

    invite: TeamInvite
    token: str

    @property
    def path(self) -> str:
        return INVITE_PATH.format(token=self.token)


def hash_invite_token(raw: str) -> str:
    # 32 random bytes: a fast hash is enough, as for API keys.
    return hashlib.sha256(raw.encode()).hexdigest()


def invite_link(*, path: str) -> str:
    """The link as people reach this deployment (EVALSITE_PUBLIC_URL), else the path alone."""
    return f"{settings.EVALSITE_PUBLIC_URL}{path}"


def invite_create(
    *, team: Team, email: str, role: str, created_by: User | None = None
) -> NewInvite:
    """A pending invite of ``email`` to ``team``; an open invite of the same address is
    revoked (its link stops working) and replaced. Addresses of existing accounts are refused:
    those people are added as members instead."""
    email = _clean_email(email)
    if role not in Role.values:
        raise TeamValidationError({"role": "one of owner, editor, viewer"})
    if get_user_model().objects.filter(email__iexact=email).exists():
        raise TeamValidationError(
            {"email": f"{email} already has an account: add them by username or email"}
        )
    token = secrets.token_urlsafe(32)
    now = timezone.now()
    try:
        with transaction.atomic():
            _open_invites(team).filter(email=email).update(revoked_at=now)
            invite = TeamInvite.objects.create(
                team=team,
                email=email,
                role=role,
                hashed_token=hash_invite_token(token),
                created_by=created_by,
                expires_at=now + timedelta(days=settings.EVALSITE_INVITE_DAYS),
            )
    except IntegrityError:  # the same address invited at the same moment
        raise TeamValidationError(
            {"email": f"{email} was invited at the same moment: reload the page"}
        ) from None
    return NewInvite(invite=invite, token=token)


def _clean_email(email: str) -> str:
    email = (email or "").strip().lower()
    try:
        validate_email(email)
    except ValidationError:
        raise TeamValidationError(
            {"email": "enter an email address, e.g. bob@example.com"}
        ) from None
    return email


def member_add_or_invite(
    *, team: Team, who: str, role: str, created_by: User | None = None
) -> Membership | NewInvite:
    """Add the registered user named by username or email; an email address that belongs to
    no account gets a pending invite instead."""
    who = (who or "").strip()
    users = get_user_model().objects
    if user_find(who=who) is None and "@" in who and not users.filter(email__iexact=who).exists():
        return invite_create(team=team, email=who, role=role, created_by=created_by)
    return member_invite(team=team, who=who, role=role)


def invite_send(*, new: NewInvite, link: str) -> bool:
    """Mail the link to the invited address when the deployment has email settings. False
    when it has none or sending failed (logged): the owner still has the link to copy."""
    if settings.EMAIL_BACKEND == DUMMY_BACKEND:
        return False
    invite = new.invite
    subject = f"You are invited to {invite.team.name} on evalsite"
    body = (
        f"You are invited to join the team {invite.team.name} as "
        f"{invite.get_role_display().lower()}.\n\nOpen this link to make your account and join "
        f"(valid until {invite.expires_at:%Y-%m-%d %H:%M} UTC, once):\n\n{link}\n"
    )
    try:
        send_mail(subject, body, None, [invite.email])
    except OSError as exc:  # smtplib's errors are OSErrors, as are refused connections
        logger.warning("invite email to team %s not sent: %s", invite.team_id, exc)
        return False
    return True


def invite_revoke(*, invite: TeamInvite) -> TeamInvite:
    """Stop the invite's link from working (an accepted one stays accepted)."""
    TeamInvite.objects.filter(pk=invite.pk, accepted_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    invite.refresh_from_db()
    return invite


def invites_pending(*, team: Team) -> QuerySet[TeamInvite]:
    """The team's open invites, newest first, expired ones included (owners revoke them)."""
    return _open_invites(team).select_related("created_by").order_by("-created_at")


def _open_invites(team: Team) -> QuerySet[TeamInvite]:
    return TeamInvite.objects.filter(team=team, accepted_at__isnull=True, revoked_at__isnull=True)


def invite_by_token(*, token: str) -> TeamInvite | None:
    """The invite whose link carries ``token`` (any state), or None."""
    if not token or len(token) > 100:
        return None
    return (
        TeamInvite.objects.select_related("team")
        .filter(hashed_token=hash_invite_token(token))
        .first()
    )


def invite_check_usable(*, invite: TeamInvite) -> None:
    """Raise InviteGone unless the invite can still be accepted."""
    if not invite.is_open or invite.is_expired:
        raise InviteGone(
            "This invitation link is no longer valid: it was used, withdrawn or has expired. "
            "Ask the person who invited you for a new one."
        )


def invite_accept(*, invite: TeamInvite, user: User) -> Membership:
    """``user`` (whose email must be the invited one) joins the team with the invite's role.
    An existing membership keeps its role; a second acceptance changes nothing."""
    refusal = invite_refusal(invite=invite, user=user)
    if refusal is not None:
        raise InviteEmailMismatch(refusal)
    with transaction.atomic():
        locked = _lock_usable(invite)
        membership = Membership.objects.filter(team=locked.team, user=user).first()
        if membership is None:
            membership = membership_set(team=locked.team, user=user, role=locked.role)
        _mark_accepted(locked, user)
    return membership


def invite_refusal(*, invite: TeamInvite, user: User) -> str | None:
    """Why ``user`` may not accept the invite (its email is another one), or None."""
    if (user.email or "").strip().lower() == invite.email:
        return None
    return (
        "This invitation is for another email address than your account's: sign out and open "
        "the link again to make an account with it, or ask the owner to invite "
        f"{user.email or 'your email address'}."
    )


def invite_accept_signup(*, invite: TeamInvite, username: str, password: str) -> User:
    """Make an account with the invited email (``username`` and ``password`` already
    validated by Django's user-creation form) and add it to the team with the invite's role."""
    users = get_user_model().objects
    try:
        with transaction.atomic():
            locked = _lock_usable(invite)
            if users.filter(username__iexact=username).exists():
                raise TeamValidationError({"username": "a user with that username exists"})
            user = users.create_user(username=username, email=locked.email, password=password)
            membership_set(team=locked.team, user=user, role=locked.role)
            _mark_accepted(locked, user)
    except IntegrityError:  # the same username made at the same moment
        raise TeamValidationError({"username": "a user with that username exists"}) from None
    return user


def _lock_usable(invite: TeamInvite) -> TeamInvite:
    locked = TeamInvite.objects.select_for_update().select_related("team").get(pk=invite.pk)
    invite_check_usable(invite=locked)
    return locked


def _mark_accepted(invite: TeamInvite, user: User) -> None:
    invite.accepted_at = timezone.now()
    invite.accepted_by = user
    invite.save(update_fields=["accepted_at", "accepted_by"])
