"""``/healthz`` (evalsite/health.py): open to anyone, whatever the Host, and it tells nothing
but whether the database answers."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.mark.django_db
def test_healthz_answers_ok_to_anyone_without_a_cookie_or_a_cache(settings):
    settings.ALLOWED_HOSTS = ["evalsite.example.com"]  # a probe from inside the container
    settings.SECURE_SSL_REDIRECT = True

    response = Client().get("/healthz", HTTP_HOST="127.0.0.1:8000")

    assert (response.status_code, response.content) == (200, b"ok")
    assert response["Cache-Control"] == "no-store" and not response.cookies
    assert Client().head("/healthz").status_code == 200


def test_healthz_answers_503_and_nothing_more_when_the_database_is_unavailable(caplog):
    # No django_db mark: pytest-django refuses every query, as a database that is down would.
    response = Client().get("/healthz")

    assert (response.status_code, response.content) == (503, b"unavailable")
    assert "Database access not allowed" in caplog.text  # the reason is in the log only


@pytest.mark.django_db
def test_other_methods_and_paths_are_not_the_health_check():
    posted = Client().post("/healthz")
    assert posted.status_code != 200 and posted.content != b"ok"
    assert Client().get("/healthz/extra").status_code == 404
