"""Rotating EVALSITE_SECRETS_KEY: `manage.py secrets_reencrypt` moves every stored secret to
the new key, after which the old key can be dropped."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command

from teams.crypto import secret_decrypt
from teams.models import JudgeConnection, Team
from teams.services import connection_create, team_webhook_secret, team_webhook_secret_rotate

pytestmark = pytest.mark.django_db


def test_secrets_move_to_the_new_key_and_survive_dropping_the_old(team, settings):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.EVALSITE_SECRETS_KEY = old
    webhook = team_webhook_secret_rotate(team=team)
    connection = connection_create(
        team=team, name="hosted", model="openai/gpt-4o-mini", api_key="sk-rotate-me-123456"
    )

    settings.EVALSITE_SECRETS_KEY = f"{new},{old}"
    call_command("secrets_reencrypt")
    settings.EVALSITE_SECRETS_KEY = new

    stored = JudgeConnection.objects.get(pk=connection.pk)
    assert secret_decrypt(stored.key_ciphertext) == "sk-rotate-me-123456"
    assert team_webhook_secret(team=Team.objects.get(pk=team.pk)) == webhook


def test_a_secret_no_configured_key_opens_is_reported(team, settings):
    settings.EVALSITE_SECRETS_KEY = Fernet.generate_key().decode()
    team_webhook_secret_rotate(team=team)
    settings.EVALSITE_SECRETS_KEY = Fernet.generate_key().decode()

    with pytest.raises(CommandError, match="could not be decrypted"):
        call_command("secrets_reencrypt")
