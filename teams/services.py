"""Writes for teams, memberships and API keys."""

import hashlib
import secrets
from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from .models import ApiKey, Membership, Role, Team

KEY_PREFIX = "es_"


def hash_api_key(raw: str) -> str:
    # API keys are 32 random bytes: a fast hash is enough, unlike passwords.
    return hashlib.sha256(raw.encode()).hexdigest()


def team_create(*, name: str, slug: str, owner: User | None = None) -> Team:
    with transaction.atomic():
        team = Team.objects.create(name=name, slug=slug, webhook_secret=secrets.token_hex(32))
        if owner is not None:
            Membership.objects.create(team=team, user=owner, role=Role.OWNER)
    return team


def membership_set(*, team: Team, user: User, role: str) -> Membership:
    membership, _ = Membership.objects.update_or_create(
        team=team, user=user, defaults={"role": role}
    )
    return membership


def api_key_create(*, team: Team, name: str, created_by: User | None = None) -> tuple[ApiKey, str]:
    """Create a key and return it with its secret, which is never retrievable again."""
    raw = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey.objects.create(
        team=team,
        name=name,
        prefix=raw[:10],
        hashed_key=hash_api_key(raw),
        created_by=created_by,
    )
    return key, raw


def api_key_revoke(*, key: ApiKey) -> ApiKey:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key


def team_update_settings(*, team: Team, confirm_cost_above: Any) -> Team:
    """Team-wide settings editable in the dashboard; errors name the field."""
    try:
        amount = Decimal(str(confirm_cost_above))
    except (InvalidOperation, ValueError):
        raise TeamValidationError({"confirm_cost_above": "must be a number of dollars"}) from None
    if not amount.is_finite() or amount < 0 or amount >= Decimal("100000000"):
        raise TeamValidationError({"confirm_cost_above": "must be between 0 and 99,999,999.99"})
    team.confirm_cost_above = amount.quantize(Decimal("0.01"))
    team.save(update_fields=["confirm_cost_above"])
    return team


class TeamValidationError(ValueError):
    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors
