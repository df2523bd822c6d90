"""The webhook signing secret: stored encrypted, shown once (page and API), owners only, and
the secret shown is the one deliveries are signed with."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from judging.services.rescore_webhook import webhook_signature, webhook_verify
from teams.models import Team
from teams.services import team_webhook_secret
from tests.api_client import assert_error
from tests.page_helpers import signed_in

pytestmark = pytest.mark.django_db


def test_the_api_shows_a_new_secret_once_and_stores_it_encrypted(api, team):
    before = team_webhook_secret(team=team)

    response = api.post("/team/webhook-secret")

    secret = response.json()["secret"]
    stored = Team.objects.get(pk=team.pk)
    assert response.status_code == 201 and len(secret) == 64 and secret != before
    assert secret not in stored.webhook_secret_encrypted  # ciphertext, not the secret
    assert team_webhook_secret(team=stored) == secret
    body = b'{"event": "batch.finished"}'
    now = int(time.time())
    header = webhook_signature(secret=team_webhook_secret(team=stored), body=body, timestamp=now)
    assert webhook_verify(secret=secret, body=body, header=header)
    assert not webhook_verify(secret=before, body=body, header=header)


def test_an_editor_signed_in_cannot_rotate_it_over_the_api(session_api, teammate, team):
    before = team_webhook_secret(team=team)

    assert_error(session_api(teammate).post("/team/webhook-secret"), 403)
    assert team_webhook_secret(team=Team.objects.get(pk=team.pk)) == before


def test_the_settings_page_shows_the_new_secret_once(owner, team):
    client = signed_in(owner)

    made = client.post(reverse("webhook_secret_rotate"))
    later = client.get(reverse("team_settings")).content.decode()

    secret = made.context["new_webhook_secret"]
    assert secret in made.content.decode() and "no-store" in made["Cache-Control"]
    assert team_webhook_secret(team=Team.objects.get(pk=team.pk)) == secret
    assert secret not in later and "Last replaced" in later


def test_only_owners_rotate_it_from_the_page(teammate, viewer, team):
    before = team_webhook_secret(team=team)

    editor = signed_in(teammate).post(reverse("webhook_secret_rotate"))
    reader = signed_in(viewer).post(reverse("webhook_secret_rotate"))

    assert (editor.status_code, reader.status_code) == (403, 403)
    assert team_webhook_secret(team=Team.objects.get(pk=team.pk)) == before


def test_the_migration_encrypts_secrets_stored_in_plain_text(team):
    """Teams made before 0003 held the secret itself; afterwards they hold its ciphertext."""
    import importlib

    from django.apps import apps

    migration = importlib.import_module("teams.migrations.0003_webhook_secret_encrypted")
    Team.objects.filter(pk=team.pk).update(webhook_secret_encrypted="ab" * 32)

    migration.encrypt_existing(apps, None)

    stored = Team.objects.get(pk=team.pk)
    assert stored.webhook_secret_encrypted != "ab" * 32
    assert team_webhook_secret(team=stored) == "ab" * 32
