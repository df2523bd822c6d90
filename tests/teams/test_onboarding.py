"""Onboarding: a signed-in user without a team makes one; owners add members by username or
email, change roles and remove them; a team never loses its last owner."""

from __future__ import annotations

import pytest
from django.urls import reverse

from teams.models import Membership, Role, Team
from tests.page_helpers import signed_in

pytestmark = pytest.mark.django_db


def test_the_first_user_of_a_fresh_deployment_creates_a_team_and_owns_it(make_user):
    alice = make_user("alice")
    client = signed_in(alice)

    page = client.get(reverse("no_team")).content.decode()
    created = client.post(reverse("no_team"), {"name": "Acme Labs"})
    home = client.get(reverse("home"))

    team = Team.objects.get()
    assert "Create team" in page
    assert created.status_code == 302 and team.slug == "acme-labs"
    assert Membership.objects.get(team=team, user=alice).role == Role.OWNER
    assert home.status_code == 200 and "Acme Labs" in home.content.decode()


def test_a_second_team_with_the_same_name_gets_a_free_slug(make_user, team):
    signed_in(make_user("bob")).post(reverse("no_team"), {"name": "acme"})

    assert sorted(Team.objects.values_list("slug", flat=True)) == ["acme", "acme-2"]


def test_team_creation_can_be_turned_off_except_for_the_first_user(make_user, settings):
    settings.EVALSITE_ALLOW_TEAM_CREATION = False
    first = signed_in(make_user("first")).post(reverse("no_team"), {"name": "One"})
    second_client = signed_in(make_user("second"))

    page = second_client.get(reverse("no_team")).content.decode()
    refused = second_client.post(reverse("no_team"), {"name": "Two"})

    assert first.status_code == 302 and refused.status_code == 403
    assert "Create team" not in page and list(Team.objects.values_list("name", flat=True)) == [
        "One"
    ]


def test_the_team_form_keeps_what_was_typed_when_it_shows_an_error(make_user):
    response = signed_in(make_user("alice")).post(reverse("no_team"), {"name": "x" * 200})

    assert response.status_code == 422 and "x" * 200 in response.content.decode()
    assert response.context["form"].errors["name"] and not Team.objects.exists()


def test_an_owner_adds_a_registered_user_by_username_or_email(owner, team, make_user):
    bob = make_user("bob")
    carol = make_user("carol")
    carol.email = "Carol@Example.com"
    carol.save()
    client = signed_in(owner)

    by_name = client.post(reverse("member_invite"), {"who": "bob", "role": "viewer"})
    by_email = client.post(reverse("member_invite"), {"who": "carol@example.com", "role": "owner"})
    seen = signed_in(bob).get(reverse("team_settings"))

    assert by_name.status_code == by_email.status_code == 302
    assert Membership.objects.get(team=team, user=bob).role == Role.VIEWER
    assert Membership.objects.get(team=team, user=carol).role == Role.OWNER
    assert seen.status_code == 200 and team.name in seen.content.decode()


def test_adding_an_unknown_username_names_the_field_and_keeps_the_input(owner):
    response = signed_in(owner).post(reverse("member_invite"), {"who": "nobody", "role": "viewer"})

    body = response.content.decode()
    assert response.status_code == 422 and 'value="nobody"' in body
    assert "no registered user" in response.context["invite_form"].errors["who"][0]
    assert 'value="viewer" selected' in body


def test_an_owner_changes_a_role_and_removes_a_member(owner, teammate, team):
    client = signed_in(owner)
    membership = Membership.objects.get(team=team, user=teammate)

    client.post(reverse("member_role", args=[membership.pk]), {"role": "viewer"})
    membership.refresh_from_db()
    role = membership.role
    client.post(reverse("member_remove", args=[membership.pk]))

    assert role == Role.VIEWER and not Membership.objects.filter(pk=membership.pk).exists()


def test_the_last_owner_can_be_neither_demoted_nor_removed(owner, team):
    client = signed_in(owner)
    membership = Membership.objects.get(team=team, user=owner)

    demote = client.post(
        reverse("member_role", args=[membership.pk]), {"role": "editor"}, follow=True
    )
    remove = client.post(reverse("member_remove", args=[membership.pk]), follow=True)

    membership.refresh_from_db()
    assert membership.role == Role.OWNER
    assert "last owner" in demote.content.decode() and "last owner" in remove.content.decode()


def test_with_a_second_owner_the_first_may_step_down(owner, teammate, team):
    Membership.objects.filter(user=teammate).update(role=Role.OWNER)
    membership = Membership.objects.get(team=team, user=owner)

    signed_in(owner).post(reverse("member_role", args=[membership.pk]), {"role": "editor"})

    membership.refresh_from_db()
    assert membership.role == Role.EDITOR


def test_editors_and_viewers_cannot_manage_members(teammate, viewer, owner, team):
    target = Membership.objects.get(team=team, user=owner)
    for user in (teammate, viewer):
        client = signed_in(user)
        page = client.get(reverse("team_settings")).content.decode()
        answers = {
            client.post(reverse("member_invite"), {"who": "x", "role": "owner"}).status_code,
            client.post(reverse("member_role", args=[target.pk]), {"role": "viewer"}).status_code,
            client.post(reverse("member_remove", args=[target.pk])).status_code,
        }
        assert answers == {403} and "Add member" not in page and "olivia" in page


def test_an_owner_cannot_touch_another_teams_membership(owner, stranger, other_team):
    theirs = Membership.objects.get(team=other_team, user=stranger)

    response = signed_in(owner).post(reverse("member_remove", args=[theirs.pk]))

    assert response.status_code == 404 and Membership.objects.filter(pk=theirs.pk).exists()
