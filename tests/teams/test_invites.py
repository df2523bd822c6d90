"""Invitations of people without an account: the owner gets the link once (only its hash is
stored); the link makes an account or lets the invited address join, once, until it expires
or is revoked; other teams, editors and viewers cannot touch invites."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from teams.invites import hash_invite_token, invite_create
from teams.models import Membership, Role, TeamInvite
from tests.page_helpers import signed_in

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a-long-new-passphrase"


def signup(client: Client, path: str, username: str = "newbie", **extra: str):
    data = {"username": username, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD}
    return client.post(path, {**data, **extra})


def test_inviting_an_unknown_email_shows_the_link_once_and_stores_only_its_hash(owner, team):
    response = signed_in(owner).post(
        reverse("member_invite"), {"who": "New@Example.com", "role": "viewer"}
    )

    invite = TeamInvite.objects.get()
    link = response.context["invite_url"]
    token = link.rstrip("/").rsplit("/", 1)[1]
    assert response.status_code == 200 and link in response.content.decode()
    assert "no-cache" in response["Cache-Control"]
    assert invite.email == "new@example.com" and invite.role == Role.VIEWER
    assert invite.hashed_token == hash_invite_token(token) and token not in invite.hashed_token
    assert len(token) >= 43  # 32 random bytes
    later = signed_in(owner).get(reverse("team_settings")).content.decode()
    assert token not in later and "new@example.com" in later


def test_the_invite_expires_after_the_configured_days(owner, team, settings):
    settings.EVALSITE_INVITE_DAYS = 2
    new = invite_create(team=team, email="a@example.com", role="editor", created_by=owner)

    assert abs(new.invite.expires_at - (timezone.now() + timedelta(days=2))) < timedelta(minutes=1)


def test_a_new_person_makes_an_account_from_the_link_and_is_a_member_with_the_role(team):
    new = invite_create(team=team, email="new@example.com", role="viewer")
    client = Client()

    page = client.get(new.path).content.decode()
    response = signup(client, new.path)
    home = client.get(reverse("home"))

    user = get_user_model().objects.get(username="newbie")
    assert "Join Acme" in page and 'value="new@example.com"' in page
    assert response.status_code == 302 and user.email == "new@example.com"
    assert Membership.objects.get(team=team, user=user).role == Role.VIEWER
    assert home.status_code == 200 and "Acme" in home.content.decode()
    assert TeamInvite.objects.get().accepted_by == user


def test_the_signup_form_uses_djangos_password_validators_and_names_the_field(team):
    new = invite_create(team=team, email="new@example.com", role="viewer")

    response = Client().post(
        new.path, {"username": "newbie", "password1": "password", "password2": "password"}
    )

    assert response.status_code == 422 and response.context["form"].errors["password2"]
    assert not get_user_model().objects.filter(username="newbie").exists()


def test_a_used_link_is_gone_and_accepting_twice_changes_nothing(team, make_user):
    new = invite_create(team=team, email="new@example.com", role="editor")
    first = Client()
    signup(first, new.path)

    again = signup(Client(), new.path, username="other")
    same_user = first.get(new.path)

    assert again.status_code == 410 and "Acme" not in again.content.decode()
    assert same_user.status_code == 302
    assert Membership.objects.filter(team=team).count() == 1
    assert not get_user_model().objects.filter(username="other").exists()


def test_expired_revoked_and_unknown_links_name_no_team(team, owner):
    expired = invite_create(team=team, email="e@example.com", role="editor")
    TeamInvite.objects.filter(pk=expired.invite.pk).update(expires_at=timezone.now())
    revoked = invite_create(team=team, email="r@example.com", role="editor")
    signed_in(owner).post(reverse("invite_revoke", args=[revoked.invite.pk]))

    answers = [Client().get(path) for path in (expired.path, revoked.path, "/invite/nope/")]

    assert [a.status_code for a in answers] == [410, 410, 404]
    assert all("Acme" not in a.content.decode() for a in answers)
    assert signup(Client(), revoked.path).status_code == 410


def test_a_signed_in_user_with_the_invited_email_joins_and_another_is_refused(team, make_user):
    new = invite_create(team=team, email="bob@example.com", role="viewer")
    bob, eve = make_user("bob"), make_user("eve")
    bob.email, eve.email = "Bob@example.com", "eve@example.com"
    bob.save(), eve.save()

    refused = signed_in(eve).post(new.path)
    page = signed_in(bob).get(new.path).content.decode()
    joined = signed_in(bob).post(new.path)

    assert refused.status_code == 409 and "another email address" in refused.content.decode()
    assert "Join Acme" in page and joined.status_code == 302
    assert Membership.objects.get(team=team, user=bob).role == Role.VIEWER
    assert not Membership.objects.filter(team=team, user=eve).exists()


def test_inviting_the_same_address_again_replaces_the_first_link(team):
    first = invite_create(team=team, email="new@example.com", role="editor")
    second = invite_create(team=team, email="new@example.com", role="owner")

    assert Client().get(first.path).status_code == 410
    assert Client().get(second.path).status_code == 200


def test_an_email_with_an_account_is_added_not_invited_and_a_bad_address_names_the_field(
    owner, team, make_user
):
    bob = make_user("bob")
    bob.email = "bob@example.com"
    bob.save()
    client = signed_in(owner)

    added = client.post(reverse("member_invite"), {"who": "bob@example.com", "role": "viewer"})
    bad = client.post(reverse("member_invite"), {"who": "not an@address", "role": "viewer"})

    assert added.status_code == 302 and Membership.objects.filter(user=bob).exists()
    assert bad.status_code == 422 and "email address" in bad.context["invite_form"].errors["who"][0]
    assert not TeamInvite.objects.exists()


def test_editors_and_viewers_can_neither_invite_nor_revoke(teammate, viewer, team):
    new = invite_create(team=team, email="new@example.com", role="editor")
    for user in (teammate, viewer):
        client = signed_in(user)
        page = client.get(reverse("team_settings")).content.decode()
        invited = client.post(reverse("member_invite"), {"who": "x@example.com", "role": "owner"})
        revoked = client.post(reverse("invite_revoke", args=[new.invite.pk]))
        assert invited.status_code == revoked.status_code == 403
        assert "new@example.com" in page and "Revoke" not in page.split('data-testid="invites"')[1]
    assert TeamInvite.objects.get().is_open


def test_an_owner_cannot_revoke_another_teams_invite(owner, other_team):
    theirs = invite_create(team=other_team, email="x@example.com", role="editor")

    response = signed_in(owner).post(reverse("invite_revoke", args=[theirs.invite.pk]))

    assert response.status_code == 404 and TeamInvite.objects.get().is_open
    assert "x@example.com" not in signed_in(owner).get(reverse("team_settings")).content.decode()


def test_with_email_settings_the_link_is_also_mailed(owner, team, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    response = signed_in(owner).post(
        reverse("member_invite"), {"who": "new@example.com", "role": "editor"}
    )

    assert [m.to for m in mail.outbox] == [["new@example.com"]]
    assert response.context["invite_url"] in mail.outbox[0].body
    assert "emailed" in response.content.decode()


def test_without_email_settings_nothing_is_sent(owner, team, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.dummy.EmailBackend"
    signed_in(owner).post(reverse("member_invite"), {"who": "new@example.com", "role": "editor"})

    assert mail.outbox == [] and TeamInvite.objects.count() == 1


def test_the_command_prints_a_working_link(team, settings):
    settings.EVALSITE_PUBLIC_URL = "https://evals.example.com"
    out = io.StringIO()

    call_command("team", "invite", "acme", "new@example.com", "--role", "viewer", stdout=out)

    link = next(line for line in out.getvalue().splitlines() if line.startswith("https://"))
    path = link.removeprefix("https://evals.example.com")
    assert Client().get(path).status_code == 200
    assert TeamInvite.objects.get().role == Role.VIEWER
    with pytest.raises(CommandError, match="no team with slug 'nope'"):
        call_command("team", "invite", "nope", "new@example.com")
