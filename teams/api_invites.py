"""Invitations over the API: /api/team/invites (owners and team API keys).

The same invitations as the team page's: an email address with no account gets a link that
makes an account with that address and joins with the role. The link is in the answer that
creates it, once (only its hash is stored), and is mailed when the deployment has email
settings.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from django.http import Http404, HttpRequest
from django.utils import timezone
from ninja import Field, Router, Schema, Status

from evalsite.schemas import with_errors

from .api import manager
from .invites import invite_create, invite_revoke, invite_send, invites_pending
from .models import TeamInvite

router = Router(tags=["team"])


class InviteIn(Schema):
    email: str = Field(..., max_length=254, description="An address that has no account yet")
    role: Literal["owner", "editor", "viewer"] = "editor"


class InviteOut(Schema):
    id: UUID
    email: str
    role: str
    invited_by: str | None = Field(None, description="The owner who made it (null: an API key)")
    created_at: datetime
    expires_at: datetime
    expired: bool


class InviteCreatedOut(InviteOut):
    link: str = Field(..., description="The invitation link: shown this once, never again")
    mailed: bool = Field(..., description="Sent to the address (the deployment has email)")


def _invite_out(invite: TeamInvite) -> dict:
    return {
        "id": invite.id,
        "email": invite.email,
        "role": invite.role,
        "invited_by": invite.created_by.get_username() if invite.created_by else None,
        "created_at": invite.created_at,
        "expires_at": invite.expires_at,
        "expired": invite.expires_at <= timezone.now(),
    }


@router.get("", response=with_errors({200: list[InviteOut]}, 403))
def list_invites(request: HttpRequest):
    """The team's open invitations, newest first (expired ones included: revoke them)."""
    team = manager(request).team
    return [_invite_out(invite) for invite in invites_pending(team=team)]


@router.post("", response=with_errors({201: InviteCreatedOut}, 403))
def create_invite(request: HttpRequest, payload: InviteIn):
    """Invite an email address that has no account (an open invitation of the same address is
    revoked and replaced). The answer holds the link, the only time it is shown. An address
    with an account is a 422 naming `email`: add that person on the team page."""
    who = manager(request)
    new = invite_create(team=who.team, email=payload.email, role=payload.role, created_by=who.user)
    link = request.build_absolute_uri(new.path)
    mailed = invite_send(new=new, link=link)
    return Status(201, _invite_out(new.invite) | {"link": link, "mailed": mailed})


@router.delete("/{invite_id}", response=with_errors({204: None}, 403, 404))
def revoke_invite(request: HttpRequest, invite_id: UUID):
    """Stop an invitation's link from working (one already accepted stays accepted)."""
    team = manager(request).team
    invite = TeamInvite.objects.filter(team=team, pk=invite_id).first()
    if invite is None:
        raise Http404("No such invitation in this team")
    invite_revoke(invite=invite)
    return Status(204, None)
