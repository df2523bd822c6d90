"""Invitations over the API (/api/team/invites): owners and team API keys invite an address,
see the link once, list and revoke; nobody else can, and no other team's invite is reachable."""

from __future__ import annotations

import pytest
from django.test import Client

from teams.models import TeamInvite
from tests.api_client import assert_error, field_locs

pytestmark = pytest.mark.django_db


def test_an_invite_made_over_the_api_gives_its_link_once_and_the_link_works(api, team, mailoutbox):
    made = api.post("/team/invites", {"email": "New.Person@Example.com", "role": "viewer"})

    assert made.status_code == 201, made.content
    body = made.json()
    assert (body["email"], body["role"], body["expired"]) == (
        "new.person@example.com",
        "viewer",
        False,
    )
    assert body["link"].startswith("http://testserver/invite/") and body["mailed"] is True
    assert [m.to for m in mailoutbox] == [["new.person@example.com"]]
    assert body["link"] in mailoutbox[0].body
    token = body["link"].rsplit("/invite/", 1)[1].strip("/")
    stored = TeamInvite.objects.get(pk=body["id"])
    assert token not in stored.hashed_token and stored.team == team
    assert Client().get(f"/invite/{token}/").status_code == 200  # the link opens the signup

    listed = api.get("/team/invites").json()
    assert [i["id"] for i in listed] == [body["id"]]
    assert "link" not in listed[0]  # never shown again


def test_revoking_stops_the_link_and_drops_it_from_the_list(api):
    body = api.post("/team/invites", {"email": "gone@example.com"}).json()
    token = body["link"].rsplit("/invite/", 1)[1].strip("/")

    revoked = api.client.delete(f"/api/team/invites/{body['id']}", headers=api.headers)

    assert revoked.status_code == 204, revoked.content
    assert api.get("/team/invites").json() == []
    assert Client().get(f"/invite/{token}/").status_code == 410


def test_bad_input_is_a_4xx_naming_the_field_and_stores_nothing(api, make_user):
    make_user("taken").__class__.objects.filter(username="taken").update(email="taken@example.com")
    for payload, field in (
        ({"email": "not an address"}, "email"),
        ({"email": "taken@example.com"}, "email"),
        ({"email": "a@example.com", "role": "admin"}, "role"),
    ):
        assert field_locs(api.post("/team/invites", payload)) == [["body", "payload", field]]
    assert not TeamInvite.objects.exists()


def test_only_owners_and_api_keys_manage_invites_and_never_another_teams(
    session_api, teammate, owner, other_api, api
):
    body = api.post("/team/invites", {"email": "mine@example.com"}).json()

    assert_error(session_api(teammate).get("/team/invites"), 403)
    assert_error(session_api(teammate).post("/team/invites", {"email": "x@example.com"}), 403)
    assert session_api(owner).get("/team/invites").status_code == 200
    assert other_api.get("/team/invites").json() == []
    gone = other_api.client.delete(f"/api/team/invites/{body['id']}", headers=other_api.headers)
    assert gone.status_code == 404
    assert TeamInvite.objects.get(pk=body["id"]).revoked_at is None
