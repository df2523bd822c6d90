"""Manage team API keys from the shell.

python manage.py apikey create --team acme [--name "CI pipeline"]   # the key, on its last line
python manage.py apikey list --team acme
python manage.py apikey revoke es_AbC12 [--team acme]
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from teams.models import ApiKey, Team
from teams.selectors import api_keys_by_prefix, api_keys_list, team_by_slug
from teams.services import api_key_create, api_key_revoke


class Command(BaseCommand):
    help = "Create, list and revoke team API keys."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="create a key; prints it once, on the last line")
        create.add_argument("--team", required=True, help="team slug")
        create.add_argument("--name", default="cli", help="a label for the key")
        listing = actions.add_parser("list", help="list a team's keys (prefixes only)")
        listing.add_argument("--team", required=True, help="team slug")
        revoke = actions.add_parser("revoke", help="revoke the active key with this prefix")
        revoke.add_argument("prefix", help="the key's visible prefix (or its whole value)")
        revoke.add_argument("--team", help="team slug, to narrow the match")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        getattr(self, f"_{action}")(**options)

    def _team(self, slug: str | None) -> Team | None:
        if slug is None:
            return None
        team = team_by_slug(slug=slug)
        if team is None:
            raise CommandError(f"no team with slug {slug!r}")
        return team

    def _create(self, *, team: str, name: str, **_: Any) -> None:
        key, raw = api_key_create(team=self._team(team), name=name)  # type: ignore[arg-type]
        self.stdout.write(f"Created key {key.prefix}… ({key.name}) for team {key.team.slug}.")
        self.stdout.write("It is shown once, on the next line: store it now.")
        self.stdout.write(raw)

    def _list(self, *, team: str, **_: Any) -> None:
        for key in api_keys_list(team=self._team(team)):  # type: ignore[arg-type]
            self.stdout.write(_describe(key))

    def _revoke(self, *, prefix: str, team: str | None, **_: Any) -> None:
        # The visible prefix is the first 10 characters; a whole key is accepted too.
        matches = api_keys_by_prefix(prefix=prefix[:10], team=self._team(team))
        if not matches:
            raise CommandError(f"no active key starts with {prefix[:10]!r}")
        if len(matches) > 1:
            listed = ", ".join(f"{k.prefix} ({k.team.slug})" for k in matches)
            raise CommandError(f"{prefix!r} matches several keys: {listed}; add --team")
        api_key_revoke(key=matches[0])
        self.stdout.write(f"Revoked {matches[0].prefix}… ({matches[0].name})")


def _describe(key: ApiKey) -> str:
    used = key.last_used_at.isoformat(timespec="seconds") if key.last_used_at else "never used"
    state = f"revoked {key.revoked_at:%Y-%m-%d}" if key.revoked_at else "active"
    return f"{key.prefix}…\t{key.name}\tcreated {key.created_at:%Y-%m-%d}\t{used}\t{state}"
