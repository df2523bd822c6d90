"""No secret reaches a log record, at any level, whatever a client sends.

Every record of every logger (root at DEBUG, django.request and ninja included) is captured
as it is made, before the LOGGING filter redacts it, while API keys, a webhook secret, an invite token, a judge
connection's key and an OTLP export's header are sent in every malformed way a client may send a credential, to several
endpoints, and invite links with bad and expired tokens are opened. Then the filter installed
in LOGGING (evalsite.logredact), the defence in depth, is checked on its own.
"""

from __future__ import annotations

import base64
import logging
import secrets
import sys
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from evalsite.logredact import REDACTED, RedactSecrets, redact
from teams.models import TeamInvite
from teams.services import api_key_create, api_key_revoke, connection_create
from tests.page_helpers import signed_in

pytestmark = pytest.mark.django_db

ENDPOINTS = [
    ("get", "/api/runs"),
    ("post", "/api/rubrics"),
    ("get", "/api/team/settings"),
    ("put", "/api/team/budget"),
    ("post", "/api/otel/v1/traces"),
]


class Capture:
    """Every record as it is made, before any handler or filter sees (and redacts) it."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.factory = logging.getLogRecordFactory()

    def __call__(self, *args, **kwargs) -> logging.LogRecord:
        record = self.factory(*args, **kwargs)
        if record.levelno >= logging.getLogger(record.name).getEffectiveLevel():
            shown = logging.Formatter("%(name)s %(levelname)s %(message)s").format(record)
            self.lines.append(f"{shown} {record.args!r}")
            record.exc_text = None  # formatted here: let the handlers format it again
        return record

    def text(self) -> str:
        return "\n".join(self.lines)


@pytest.fixture
def captured(settings) -> Iterator[Capture]:
    settings.DEBUG = True  # ninja logs a malformed Authorization header only in DEBUG
    capture, root = Capture(), logging.getLogger()
    loggers = [root, *(logging.getLogger(n) for n in ("django", "django.request", "ninja"))]
    levels = [logger.level for logger in loggers]
    logging.setLogRecordFactory(capture)
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
    yield capture
    logging.setLogRecordFactory(capture.factory)
    for logger, level in zip(loggers, levels, strict=True):
        logger.setLevel(level)


def forms_of(secret: str) -> list[tuple[dict[str, str], str, dict[str, str]]]:
    """(headers, query string, cookies): every way a client may misplace a credential."""
    basic = base64.b64encode(f"user:{secret}".encode()).decode()
    auth = [
        secret,
        f"Bearer Bearer {secret}",
        f"bearer {secret}",
        f"BEARER  {secret} ",
        f"Basic {secret}",
        f"Basic {basic}",
        f"Token {secret}",
        f"Bearer {secret}{'x' * 20_000}",
        f"Bearer {secret}\x00",
        f"Bearer {secret}é☃",
        f"{secret} Bearer",
        f"Bearer\t{secret}",
    ]
    return [
        *(({"Authorization": value}, "", {}) for value in auth),
        ({"X-Api-Key": secret}, "", {}),
        ({}, f"api_key={secret}&key={secret}", {}),
        ({}, "", {"api_key": secret, "sessionid": secret}),
    ]


def send_everywhere(secret: str) -> None:
    address = f"10.99.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}"
    for headers, query, cookies in forms_of(secret):
        client = Client(raise_request_exception=False, REMOTE_ADDR=address)
        client.cookies.load(cookies)
        for method, path in ENDPOINTS:
            url = f"{path}?{query}" if query else path
            response = client.generic(
                method.upper(), url, "{}", "application/json", headers=headers
            )
            assert response.status_code < 500, (headers, url, response.status_code)


def test_no_credential_sent_in_any_wrong_form_reaches_a_log(
    captured, team, owner, fake_judge, settings
):
    settings.EVALSITE_JUDGE_ALLOW_PRIVATE = True
    _, valid = api_key_create(team=team, name="ci")
    revoked_key, revoked = api_key_create(team=team, name="old")
    api_key_revoke(key=revoked_key)
    unknown = "es_" + secrets.token_urlsafe(32)
    webhook = Client().post(
        "/api/team/webhook-secret", headers={"Authorization": f"Bearer {valid}"}
    )
    invite = Client().post(
        "/api/team/invites",
        data={"email": "new@example.com"},
        content_type="application/json",
        headers={"Authorization": f"Bearer {valid}"},
    )
    token = invite.json()["link"].rstrip("/").rsplit("/", 1)[-1]
    connection_key = "sk-conn-" + secrets.token_hex(16)
    export_header = "otlp-hdr-" + secrets.token_hex(16)
    exported = Client().patch(
        "/api/team/settings",
        data={
            "otel_export": {
                "endpoint": "http://127.0.0.1:9/v1/logs",  # a closed port: never answers
                "headers": {"Authorization": export_header, "bad name": export_header},
            }
        },
        content_type="application/json",
        headers={"Authorization": f"Bearer {valid}"},
    )
    assert exported.status_code == 422  # the bad header name: the error names it, not its value
    assert export_header not in exported.content.decode()
    found = [valid, revoked, unknown, webhook.json()["secret"], token, connection_key]
    found.append(export_header)

    for secret in found:
        send_everywhere(secret)
    open_invites(token)
    check_a_connection(owner, team, fake_judge.url, connection_key)

    text = captured.text()
    assert "Unauthorized: /api/runs" in text, "the capture does not work"
    assert [s[:12] for s in found if s in text] == []
    for secret in found:  # not even the part a log line would be cut at
        assert secret[:20] not in text


def open_invites(token: str) -> None:
    client = Client(raise_request_exception=False)
    bad = secrets.token_urlsafe(32)
    assert client.get(reverse("invite", args=[bad])).status_code == 404
    TeamInvite.objects.update(expires_at=timezone.now() - timedelta(days=1))
    assert client.get(reverse("invite", args=[token])).status_code == 410
    assert client.post(reverse("invite", args=[token]), {"username": "x"}).status_code == 410


def check_a_connection(owner, team, url: str, key: str) -> None:
    connection = connection_create(
        team=team, name="ours", model="openai/fake", api_base=url, api_key=key
    )
    signed_in(owner).post(reverse("connection_test", args=[connection.id]))


# --- The filter installed in LOGGING --------------------------------------------------------


def test_the_console_handler_of_logging_redacts_secrets():
    handlers = [h for h in logging.getLogger().handlers if isinstance(h, logging.StreamHandler)]
    assert any(isinstance(f, RedactSecrets) for h in handlers for f in h.filters)


SHAPES = [
    "es_" + secrets.token_urlsafe(32),  # an API key
    secrets.token_hex(32),  # a webhook secret
    secrets.token_urlsafe(32),  # an invite token
    "sk-proj-" + secrets.token_urlsafe(24),  # a provider key in a judge connection
    "sk-ant-api03-" + secrets.token_urlsafe(24),
]


# Named, not shown: the same test ids on every pytest-xdist process.
SHAPE_NAMES = ["api key", "webhook secret", "invite token", "openai key", "anthropic key"]


@pytest.mark.parametrize("secret", SHAPES, ids=SHAPE_NAMES)
def test_the_filter_redacts_every_secret_shape_in_the_message_its_arguments_and_traceback(
    secret,
):
    try:
        raise ValueError(f"bad key {secret}")
    except ValueError:
        record = logging.LogRecord(
            "x", logging.ERROR, __file__, 1, "got %s and %r", (secret, {"k": secret}), None
        )
        record.exc_info = sys.exc_info()

    assert RedactSecrets().filter(record) is True

    shown = logging.Formatter().format(record)
    assert secret not in shown and secret[:16] not in shown
    assert REDACTED in record.getMessage()


@pytest.mark.parametrize(
    "text",
    [
        "Authorization: Token abc.def",
        "HTTP_AUTHORIZATION=Basic dXNlcjpwYXNz",
        "Bearer abc.def-ghi",
        'api_key="hunter2"',
        "GET /invite/abc/ 410",
        "x-api-key: abc",
    ],
)
def test_the_filter_redacts_credentials_after_their_names(text):
    cleaned = redact(text)
    assert REDACTED in cleaned
    assert not any(v in cleaned for v in ("abc", "dXNlcjpwYXNz", "hunter2"))


@pytest.mark.parametrize(
    "text",
    [
        "evaluation 3f2b8c4e-1d2a-4b5c-9e8f-0a1b2c3d4e5f finished: 1,200 prompt_tokens=12",
        "evalsite_ended_3f2b8c4e1d2a4b5c9e8f0a1b2c3d4e5f",
        "ThrottledAdminAuthenticationForm.clean failed; key=c1; tokens: 5",
        "Unprocessable Entity: /api/runs/bulk",
    ],
)
def test_the_filter_leaves_ids_and_words_alone(text):
    assert redact(text) == text
