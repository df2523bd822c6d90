"""Reads for teams: who may see what."""

import uuid
from datetime import timedelta
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from .models import ApiKey, JudgeConnection, Membership, Role, Team
from .services import hash_api_key

# Writing last_used_at on every request would turn each API read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def memberships_for_user(*, user) -> QuerySet[Membership]:
    return Membership.objects.filter(user=user).select_related("team").order_by("team__name")


def api_key_authenticate(*, raw: str) -> ApiKey | None:
    """Return the active key matching ``raw`` (recording its use), or None."""
    if not raw:
        return None
    key = _active_key(hash_api_key(raw))
    if key is None:
        return None
    now = timezone.now()
    if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
    return key


def _active_key(hashed: str) -> ApiKey | None:
    """The active key with this hash and its team, in one statement (every API call makes it:
    the ORM, as raw() loads one model per row)."""
    keys = ApiKey.objects.select_related("team").filter(hashed_key=hashed, revoked_at=None)
    return keys.first()


def team_for_user(*, user, team_id) -> tuple[Team, Membership] | None:
    membership = (
        Membership.objects.select_related("team").filter(user=user, team_id=team_id).first()
    )
    return (membership.team, membership) if membership else None


def team_by_slug(*, slug: str) -> Team | None:
    return Team.objects.filter(slug=slug).first()


def api_keys_list(*, team: Team) -> QuerySet[ApiKey]:
    """The team's keys, newest first, revoked ones included."""
    return ApiKey.objects.filter(team=team).order_by("-created_at")


def api_keys_by_prefix(*, prefix: str, team: Team | None = None) -> list[ApiKey]:
    """Active keys whose visible prefix starts with ``prefix`` (optionally of one team)."""
    qs = ApiKey.objects.select_related("team").filter(
        prefix__startswith=prefix, revoked_at__isnull=True
    )
    if team is not None:
        qs = qs.filter(team=team)
    return list(qs[:10])


def judge_connections_list(*, team: Team) -> QuerySet[JudgeConnection]:
    """The team's judge connections by name."""
    return JudgeConnection.objects.filter(team=team).order_by("name")


def judge_connection_get(*, team: Team, ref: Any) -> JudgeConnection | None:
    """The team's connection with this id or name; None for another team's."""
    lookup = {"pk": ref} if _is_uuid(ref) else {"name": str(ref)}
    return JudgeConnection.objects.filter(team=team, **lookup).first()


def judge_connections_by_id(*, ids: Any) -> dict[str, JudgeConnection]:
    """Connections by id (as text), one query: what a worker's group of claims uses."""
    wanted = [i for i in ids if _is_uuid(i)]
    if not wanted:
        return {}
    return {str(c.pk): c for c in JudgeConnection.objects.filter(pk__in=wanted)}


def members_list(*, team: Team) -> list[Membership]:
    """The team's memberships with their users, owners first, then by username."""
    order: dict[str, int] = {Role.OWNER: 0, Role.EDITOR: 1, Role.VIEWER: 2}
    rows = list(Membership.objects.filter(team=team).select_related("user"))
    return sorted(rows, key=lambda m: (order.get(m.role, 3), m.user.get_username()))


def _is_uuid(value: Any) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True
