"""Requests with keys that are no team's share their address's allowance (teams.api_throttle):
guessing keys is throttled like guessing passwords, and a valid key never pays for it."""

from __future__ import annotations

import secrets
import uuid

import pytest
from django.test import Client

from teams.services import api_key_create, api_key_revoke
from tests.api_client import assert_error

pytestmark = pytest.mark.django_db


@pytest.fixture
def address() -> str:
    # The buckets outlive a test on Redis: each test has an address of its own.
    return f"10.77.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}"


def get(address: str, authorization: str | None):
    headers = {"Authorization": authorization} if authorization is not None else {}
    return Client(REMOTE_ADDR=address).get("/api/runs", headers=headers)


def unknown() -> str:
    return "Bearer es_" + secrets.token_urlsafe(32)


def test_an_address_sending_unknown_keys_is_refused_with_429_once_its_allowance_is_spent(
    team, address, settings
):
    settings.EVALSITE_LOGIN_MAX_ATTEMPTS_PER_IP = 3
    revoked, raw = api_key_create(team=team, name="old")
    api_key_revoke(key=revoked)

    first = [get(address, header).status_code for header in (unknown(), f"Bearer {raw}", "x")]
    refused = get(address, unknown())

    assert first == [401, 401, 401]
    body = assert_error(refused, 429)
    assert int(refused["Retry-After"]) >= 1
    assert "unknown or revoked API key" in body["message"]
    assert body["extra"]["limit"] == 3


def test_a_valid_key_and_other_addresses_are_not_refused_for_an_address_guessing_keys(
    api_key, address, settings
):
    settings.EVALSITE_LOGIN_MAX_ATTEMPTS_PER_IP = 2
    for _ in range(3):
        get(address, unknown())

    assert get(address, unknown()).status_code == 429
    assert get(address, f"Bearer {api_key}").status_code == 200
    assert get(address, None).status_code == 401  # no key sent: nothing guessed
    assert get(f"{address}9", unknown()).status_code == 401


def test_unknown_keys_do_not_lock_the_address_out_of_signing_in(owner, address, settings):
    settings.EVALSITE_LOGIN_MAX_ATTEMPTS_PER_IP = 2
    for _ in range(3):
        get(address, unknown())

    client = Client(REMOTE_ADDR=address)
    response = client.post(
        "/accounts/login/", {"username": owner.username, "password": "correct-horse-battery"}
    )

    assert response.status_code == 302 and "_auth_user_id" in client.session
