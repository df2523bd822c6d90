"""`manage.py team`: create (with an owner), add-member (by username or email), list."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from teams.models import Membership, Role, Team

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("team", *args, stdout=out)
    return out.getvalue()


def test_create_makes_a_team_owned_by_the_named_user(make_user):
    alice = make_user("alice")

    output = run("create", "Acme Labs", "--owner", "alice")

    team = Team.objects.get()
    assert team.slug == "acme-labs" and "acme-labs" in output
    assert Membership.objects.get(team=team, user=alice).role == Role.OWNER


def test_add_member_by_email_then_change_the_role_and_list(make_user, team):
    bob = make_user("bob")
    bob.email = "bob@example.com"
    bob.save()

    run("add-member", "acme", "bob@example.com", "--role", "viewer")
    run("add-member", "acme", "bob", "--role", "owner")
    listing = run("list")

    assert Membership.objects.get(team=team, user=bob).role == Role.OWNER
    assert "acme\tAcme\tbob (owner)" in listing


def test_unknown_users_teams_and_taken_slugs_are_clear_errors(make_user, team):
    with pytest.raises(CommandError, match="no user with the username or email 'ghost'"):
        run("create", "X", "--owner", "ghost")
    with pytest.raises(CommandError, match="no team with slug 'nope'"):
        run("add-member", "nope", "bob")
    with pytest.raises(CommandError, match="no registered user"):
        run("add-member", "acme", "ghost")
    with pytest.raises(CommandError, match="already exists"):
        run("create", "Acme again", "--slug", "acme")
