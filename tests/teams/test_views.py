"""Team settings page: API keys shown once, revoked, and the re-score confirmation cost."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from teams.models import ApiKey
from teams.services import api_key_create, hash_api_key
from tests.page_helpers import signed_in

pytestmark = pytest.mark.django_db


def test_a_new_api_key_is_shown_once_and_stored_hashed(owner, team):
    client = signed_in(owner)

    created = client.post(reverse("api_key_new"), {"name": "CI"})
    later = client.get(reverse("team_settings"))

    secret = created.context["new_secret"]
    key = ApiKey.objects.get(team=team, name="CI")
    assert secret in created.content.decode() and "no-store" in created["Cache-Control"]
    assert key.hashed_key == hash_api_key(secret) and secret not in later.content.decode()
    assert key.prefix in later.content.decode()


def test_revoking_a_key_marks_it_revoked(owner, team):
    key, _ = api_key_create(team=team, name="old")

    response = signed_in(owner).post(reverse("api_key_revoke", args=[key.id]))

    key.refresh_from_db()
    assert response.status_code == 302 and key.revoked_at is not None


def test_the_confirmation_cost_is_saved_and_validated(owner, team):
    client = signed_in(owner)

    bad = client.post(reverse("team_settings_save"), {"confirm_cost_above": "-1"})
    good = client.post(reverse("team_settings_save"), {"confirm_cost_above": "12.50"})

    team.refresh_from_db()
    assert bad.status_code == 200 and bad.context["settings_form"].errors["confirm_cost_above"]
    assert good.status_code == 302 and team.confirm_cost_above == Decimal("12.50")


def test_a_viewer_reads_the_settings_but_cannot_change_them(viewer, team):
    key, _ = api_key_create(team=team, name="prod")
    client = signed_in(viewer)

    page = client.get(reverse("team_settings")).content.decode()
    create = client.post(reverse("api_key_new"), {"name": "mine"})
    revoke = client.post(reverse("api_key_revoke", args=[key.id]))
    save = client.post(reverse("team_settings_save"), {"confirm_cost_above": "0"})

    assert "prod" in page and "Create key" not in page
    assert (create.status_code, revoke.status_code, save.status_code) == (403, 403, 403)
    key.refresh_from_db()
    assert key.revoked_at is None and ApiKey.objects.filter(team=team).count() == 1


def test_another_teams_key_cannot_be_revoked(stranger, team):
    key, _ = api_key_create(team=team, name="prod")

    response = signed_in(stranger).post(reverse("api_key_revoke", args=[key.id]))

    key.refresh_from_db()
    assert response.status_code == 404 and key.revoked_at is None


def test_another_teams_keys_are_not_listed(stranger, team):
    api_key_create(team=team, name="acme-secret-key")
    assert (
        "acme-secret-key" not in signed_in(stranger).get(reverse("team_settings")).content.decode()
    )


def test_key_creation_needs_a_csrf_token(owner, team):
    response = signed_in(owner, enforce_csrf_checks=True).post(
        reverse("api_key_new"), {"name": "x"}
    )
    assert response.status_code == 403 and not ApiKey.objects.filter(team=team).exists()


def test_an_editor_reads_keys_and_connections_but_only_owners_manage_them(teammate, team):
    from teams.models import JudgeConnection

    key, _ = api_key_create(team=team, name="prod")
    connection = JudgeConnection.objects.create(team=team, name="ours", model="openai/gpt-4o-mini")
    client = signed_in(teammate)

    page = client.get(reverse("team_settings")).content.decode()
    answers = {
        client.post(reverse("api_key_new"), {"name": "mine"}).status_code,
        client.post(reverse("api_key_revoke", args=[key.id])).status_code,
        client.post(reverse("connection_delete", args=[connection.id])).status_code,
        client.post(
            reverse("connection_new"), {"new-name": "x", "new-model": "openai/x"}
        ).status_code,
    }

    assert answers == {403} and "prod" in page and "ours" in page
    assert "Create key" not in page and "Revoke" not in page and "Create connection" not in page
    assert ApiKey.objects.filter(revoked_at__isnull=True).count() == 1
