"""`manage.py apikey`: create (the key alone on the last line), list, revoke."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from teams.models import ApiKey


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("apikey", *args, stdout=out)
    return out.getvalue()


def authorised(raw: str) -> int:
    return Client().get("/api/runs", headers={"Authorization": f"Bearer {raw}"}).status_code


def test_create_prints_the_key_alone_on_its_last_line_and_the_key_works(team):
    output = run("create", "--team", "acme", "--name", "CI")

    raw = output.rstrip("\n").splitlines()[-1]
    key = ApiKey.objects.get()
    assert raw.startswith(key.prefix) and " " not in raw
    assert key.name == "CI" and key.team == team
    assert authorised(raw) == 200


def test_list_shows_prefixes_never_secrets(team):
    raw = run("create", "--team", "acme").splitlines()[-1]
    listing = run("list", "--team", "acme")
    assert ApiKey.objects.get().prefix in listing and raw not in listing


def test_revoke_by_prefix_makes_the_key_fail(team):
    raw = run("create", "--team", "acme").splitlines()[-1]
    assert "Revoked" in run("revoke", raw[:10])
    assert authorised(raw) == 401
    assert "revoked" in run("list", "--team", "acme")


def test_an_unknown_team_or_prefix_is_an_error(team):
    with pytest.raises(CommandError, match="no team"):
        run("create", "--team", "nope")
    with pytest.raises(CommandError, match="no active key"):
        run("revoke", "es_missing")
