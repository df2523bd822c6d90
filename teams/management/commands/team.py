"""Manage teams and their members from the shell (the README's docker path uses it).

python manage.py team create "Acme" [--slug acme] [--owner alice]
python manage.py team add-member acme bob [--role editor]   # a username or email
python manage.py team invite acme new@example.com [--role editor]   # prints the link, once
python manage.py team list
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from evalsite.errors import AppError, FieldErrors, page_message
from teams.invites import invite_create, invite_link, invite_send
from teams.memberships import member_invite, team_create_for, user_find
from teams.models import Role, Team
from teams.selectors import members_list, team_by_slug
from teams.services import membership_set, team_create


class Command(BaseCommand):
    help = "Create teams, add members, invite email addresses, and list teams with their members."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="create a team")
        create.add_argument("name", help="the team's name")
        create.add_argument("--slug", help="its slug (default: made from the name)")
        create.add_argument("--owner", help="username or email of its first owner")
        add = actions.add_parser("add-member", help="add a registered user to a team")
        add.add_argument("team", help="team slug")
        add.add_argument("user", help="username or email")
        add.add_argument("--role", choices=Role.values, default=Role.EDITOR)
        invite = actions.add_parser(
            "invite", help="invite an email address without an account: prints the link once"
        )
        invite.add_argument("team", help="team slug")
        invite.add_argument("email", help="the address to invite")
        invite.add_argument("--role", choices=Role.values, default=Role.EDITOR)
        actions.add_parser("list", help="list teams with their members and roles")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        try:
            getattr(self, f"_{action.replace('-', '_')}")(**options)
        except AppError as exc:
            message = page_message(exc) if isinstance(exc, FieldErrors) else exc.message
            raise CommandError(message) from None

    def _create(self, *, name: str, slug: str | None, owner: str | None, **_: Any) -> None:
        user = None
        if owner is not None and (user := user_find(who=owner)) is None:
            raise CommandError(f"no user with the username or email {owner!r}")
        if slug is not None:
            if team_by_slug(slug=slug) is not None:
                raise CommandError(f"a team with slug {slug!r} already exists")
            team = team_create(name=name, slug=slug, owner=user)
        else:
            team = team_create_for(name=name, owner=user)
        shown = f", owner {user.get_username()}" if user else ""
        self.stdout.write(f"Created team {team.name} (slug {team.slug}{shown}).")

    def _add_member(self, *, team: str, user: str, role: str, **_: Any) -> None:
        found = self._team(team)
        existing = user_find(who=user)
        if existing is not None and found.memberships.filter(user=existing).exists():
            membership = membership_set(team=found, user=existing, role=role)
            verb = "is now"
        else:
            membership = member_invite(team=found, who=user, role=role)
            verb = "added as"
        name = membership.user.get_username()
        self.stdout.write(f"{name} {verb} {role} in {found.slug}.")

    def _invite(self, *, team: str, email: str, role: str, **_: Any) -> None:
        found = self._team(team)
        new = invite_create(team=found, email=email, role=role)
        link = invite_link(path=new.path)
        mailed = invite_send(new=new, link=link)
        days = settings.EVALSITE_INVITE_DAYS
        self.stdout.write(
            f"Invited {new.invite.email} to {found.slug} as {role} (valid {days} days, once"
            f"{', emailed' if mailed else ''}). Send them this link; it is not shown again:"
        )
        self.stdout.write(link)
        if not settings.EVALSITE_PUBLIC_URL:
            self.stdout.write(
                "(Prefix it with this deployment's address: set EVALSITE_PUBLIC_URL.)"
            )

    def _list(self, **_: Any) -> None:
        for team in Team.objects.order_by("slug"):
            members = ", ".join(
                f"{m.user.get_username()} ({m.role})" for m in members_list(team=team)
            )
            self.stdout.write(f"{team.slug}\t{team.name}\t{members or 'no members'}")

    def _team(self, slug: str) -> Team:
        team = team_by_slug(slug=slug)
        if team is None:
            raise CommandError(f"no team with slug {slug!r}")
        return team
