"""Sign-in throttling (evalsite/login.py): failed attempts per username and per address lock
the sign-in out, even for the right password, until the allowance refills.

The buckets live in the shared rate-limit store (Redis on the Redis stack), which outlives a
test session: every test uses its own usernames and client address so runs never meet.
"""

from __future__ import annotations

import re
import uuid

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"
PASSWORD = "correct-horse-battery"


@pytest.fixture
def address() -> str:
    return f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}"


@pytest.fixture
def person(make_user):
    return make_user(f"ada-{uuid.uuid4().hex[:10]}", PASSWORD)


def sign_in(username: str, password: str, address: str, **extra):
    client = Client()
    response = client.post(
        LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address, **extra
    )
    signed_in = "_auth_user_id" in client.session
    return response, signed_in


def fail(username: str, address: str, times: int) -> None:
    for _ in range(times):
        response, signed_in = sign_in(username, "wrong password", address)
        assert response.status_code == 200 and not signed_in


def test_ten_wrong_passwords_lock_the_account_even_for_the_right_one(person, address):
    fail(person.username, address, 10)

    response, signed_in = sign_in(person.username, PASSWORD, address)

    assert response.status_code == 429 and not signed_in
    # One attempt comes back every 15 min / 10 = 90 s: "2 minutes" (seconds on a slow machine).
    assert re.search(
        r"Too many sign-in attempts for this account\. Try again in (2 minutes|\d+ seconds)\.",
        response.content.decode(),
    )
    assert 1 <= int(response["Retry-After"]) <= 90


def test_the_username_is_counted_without_case(person, address):
    fail(person.username.upper(), address, 5)
    fail(person.username.title(), address, 5)

    response, signed_in = sign_in(person.username, PASSWORD, address)

    assert response.status_code == 429 and not signed_in


def test_another_account_still_signs_in_from_the_same_address(person, make_user, address):
    other = make_user(f"bob-{uuid.uuid4().hex[:10]}", PASSWORD)
    fail(person.username, address, 10)

    response, signed_in = sign_in(other.username, PASSWORD, address)

    assert response.status_code == 302 and signed_in


def test_after_the_window_the_right_password_works_again(person, address, settings):
    fail(person.username, address, 10)
    assert sign_in(person.username, PASSWORD, address)[0].status_code == 429

    # A window of a microsecond: by the next attempt the allowance has refilled, as it does
    # after EVALSITE_LOGIN_WINDOW (15 minutes) in production.
    settings.EVALSITE_LOGIN_WINDOW = 1e-6
    response, signed_in = sign_in(person.username, PASSWORD, address)

    assert response.status_code == 302 and signed_in


def test_a_successful_sign_in_does_not_wipe_earlier_failures(person, address):
    fail(person.username, address, 9)
    assert sign_in(person.username, PASSWORD, address)[1]  # the tenth attempt is good

    fail(person.username, address, 1)
    response, signed_in = sign_in(person.username, PASSWORD, address)

    assert response.status_code == 429 and not signed_in


def test_successful_sign_ins_are_not_counted(person, address):
    for _ in range(15):
        response, signed_in = sign_in(person.username, PASSWORD, address)
        assert response.status_code == 302 and signed_in


def test_one_address_is_locked_out_after_its_own_limit_across_usernames(person, address, settings):
    settings.EVALSITE_LOGIN_MAX_ATTEMPTS_PER_IP = 3
    for i in range(3):
        fail(f"nobody-{uuid.uuid4().hex[:8]}-{i}", address, 1)

    locked, signed_in = sign_in(person.username, PASSWORD, address, HTTP_X_FORWARDED_FOR="1.2.3.4")
    elsewhere = sign_in(person.username, PASSWORD, f"{address}1")

    assert locked.status_code == 429 and not signed_in
    assert "Too many sign-in attempts from your network address" in locked.content.decode()
    assert elsewhere[0].status_code == 302 and elsewhere[1]


def test_the_admin_sign_in_is_throttled_too(make_user, address):
    admin = make_user(f"root-{uuid.uuid4().hex[:10]}", PASSWORD)
    admin.is_staff = admin.is_superuser = True
    admin.save()
    client = Client()
    for _ in range(10):
        client.post(
            "/admin/login/", {"username": admin.username, "password": "x"}, REMOTE_ADDR=address
        )

    response = client.post(
        "/admin/login/", {"username": admin.username, "password": PASSWORD}, REMOTE_ADDR=address
    )

    assert response.status_code == 429 and int(response["Retry-After"]) >= 1
    assert "Too many sign-in attempts for this account" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_a_store_that_cannot_be_reached_lets_sign_in_through(person, address, settings, caplog):
    """Fail open, loudly: nothing listens on port 1, so every take raises a connection error."""
    settings.EVALSITE_RATELIMIT_URL = "redis://127.0.0.1:1/0"
    response, signed_in = sign_in(person.username, PASSWORD, address)
    assert signed_in and response.status_code == 302
    assert "sign-in limiter unavailable" in caplog.text
