"""The team's OTLP export setting: PATCH /api/team/settings ``otel_export`` and the team settings
page. The endpoint passes the outbound guard or is a 422 naming it; the headers are stored
encrypted and never answered, shown or logged."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from judging.services.execute import evaluation_execute
from runs.otel.export import otel_exports_drain
from teams.models import OtelExport
from teams.otel_export import otel_export_headers
from tests.api_client import field_locs
from tests.http_listener import Listener
from tests.page_helpers import signed_in
from tests.test_no_secrets_in_logs import Capture

pytestmark = pytest.mark.django_db

SECRET = "hdr-secret-7d1f0c9e4b2a"


@pytest.fixture
def receiver():
    listener = Listener().start()
    yield listener
    listener.stop()


def patch(api, export):
    return api.patch("/team/settings", {"otel_export": export})


def test_an_endpoint_the_guard_refuses_is_a_422_naming_otel_export_endpoint(api, settings):
    settings.EVALSITE_WEBHOOK_ALLOW_PRIVATE = False

    for url in ("http://127.0.0.1:4318/v1/logs", "http://169.254.169.254/v1/logs", "ftp://x/y"):
        response = patch(api, {"endpoint": url})

        assert field_locs(response) == [["body", "payload", "otel_export", "endpoint"]], url
    assert OtelExport.objects.count() == 0


def test_bad_protocols_and_headers_are_422s_naming_the_field(api, receiver):
    url = f"{receiver.url}/v1/logs"

    bad_protocol = patch(api, {"endpoint": url, "protocol": "grpc"})
    bad_name = patch(api, {"endpoint": url, "headers": {"bad name": "x"}})
    reserved = patch(api, {"endpoint": url, "headers": {"Content-Type": "text/plain"}})
    extra = patch(api, {"endpoint": url, "colour": "red"})

    assert ["body", "payload", "otel_export", "protocol"] in field_locs(bad_protocol)
    assert field_locs(bad_name) == [["body", "payload", "otel_export", "headers", "bad name"]]
    assert field_locs(reserved) == [["body", "payload", "otel_export", "headers", "Content-Type"]]
    assert ["body", "payload", "otel_export", "colour"] in field_locs(extra)
    assert OtelExport.objects.count() == 0


def test_headers_are_stored_encrypted_and_answered_by_name_only(api, receiver, team):
    url = f"{receiver.url}/v1/logs"

    saved = patch(api, {"endpoint": url, "protocol": "http/json", "headers": {"X-Key": SECRET}})

    assert saved.status_code == 200
    assert SECRET not in saved.content.decode()
    shown = saved.json()["otel_export"]
    assert shown["header_names"] == ["x-key"] and shown["protocol"] == "http/json"
    assert SECRET not in api.get("/team/settings").content.decode()
    export = OtelExport.objects.get(team=team)
    assert SECRET not in export.headers_ciphertext and SECRET not in repr(export)
    assert otel_export_headers(export=export) == {"x-key": SECRET}
    # Changing the endpoint without headers keeps them; sending {} removes them.
    patch(api, {"endpoint": url + "?v=2"})
    assert otel_export_headers(export=OtelExport.objects.get(team=team)) == {"x-key": SECRET}
    assert patch(api, {"endpoint": url, "headers": {}}).json()["otel_export"]["header_names"] == []


def test_only_owners_and_api_keys_set_the_export(session_api, teammate, owner, receiver):
    body = {"endpoint": f"{receiver.url}/v1/logs"}

    assert patch(session_api(teammate), body).status_code == 403
    assert patch(session_api(owner), body).status_code == 200


def test_another_team_never_sees_the_export(api, other_api, receiver):
    patch(api, {"endpoint": f"{receiver.url}/v1/logs", "headers": {"X-Key": SECRET}})

    other = other_api.get("/team/settings")

    assert other.json()["otel_export"] is None and receiver.url not in other.content.decode()


def test_the_settings_page_saves_the_export_with_csrf_and_shows_its_state(
    owner, team, receiver, settings
):
    url = f"{receiver.url}/v1/logs"
    strict = signed_in(owner, enforce_csrf_checks=True)
    form = {
        "export-endpoint": url,
        "export-protocol": "http/protobuf",
        "export-headers": f"X-Key: {SECRET}",
    }
    assert strict.post(reverse("otel_export_save"), form).status_code == 403  # no CSRF token

    client = signed_in(owner)
    saved = client.post(reverse("otel_export_save"), form)

    assert saved.status_code == 302
    page = client.get(reverse("team_settings")).content.decode()
    assert url in page and "<code>x-key</code>" in page and SECRET not in page
    settings.EVALSITE_WEBHOOK_ALLOW_PRIVATE = False
    refused = client.post(
        reverse("otel_export_save"), form | {"export-headers": f"X-Key: {SECRET}2"}
    )
    assert refused.status_code == 422
    page = refused.content.decode()
    assert "otel_export.endpoint: points to" in page and SECRET not in page  # typed again
    assert otel_export_headers(export=OtelExport.objects.get(team=team)) == {"x-key": SECRET}


def test_the_settings_page_shows_the_last_failure(
    owner, api, receiver, fake_judge, make_rubric, make_run, settings
):
    settings.EVALSITE_OTEL_EXPORT_TIMEOUT = 0.5  # the SDK's quick 503 retries fit in it
    patch(api, {"endpoint": f"{receiver.url}/v1/logs"})
    receiver.script.append((503, {}, b"<script>alert(1)</script>"))
    receiver.script.append((503, {}, b""))
    receiver.status = 503
    run = make_run(rubric=make_rubric().slug)
    for evaluation in run.evaluations.all():
        evaluation_execute(evaluation_id=str(evaluation.id))

    otel_exports_drain()

    page = signed_in(owner).get(reverse("team_settings")).content.decode()
    assert "HTTP 503 Service Unavailable" in page and "<script>alert" not in page
    assert "1 evaluation" in page  # still waiting, to be retried


def test_neither_the_headers_nor_the_endpoints_answers_reach_a_log(
    api, receiver, fake_judge, make_rubric, make_run, settings
):
    capture, root = Capture(), logging.getLogger()
    level = root.level
    logging.setLogRecordFactory(capture)
    root.setLevel(logging.DEBUG)
    try:
        patch(api, {"endpoint": f"{receiver.url}/v1/logs", "headers": {"Authorization": SECRET}})
        patch(api, {"endpoint": "not a url", "headers": {"Authorization": SECRET}})
        receiver.script.append((500, {}, b""))
        run = make_run(rubric=make_rubric().slug)
        for evaluation in run.evaluations.all():
            evaluation_execute(evaluation_id=str(evaluation.id))
        otel_exports_drain()
        settings.EVALSITE_WEBHOOK_ALLOW_PRIVATE = False
        otel_exports_drain(now=timezone.now() + timedelta(hours=1))
    finally:
        logging.setLogRecordFactory(capture.factory)
        root.setLevel(level)

    text = capture.text()
    assert "verdict export of team" in text, "the capture does not work"
    assert SECRET not in text and SECRET[:12] not in text
    assert receiver.seen[0].headers["authorization"] == SECRET  # it was sent, only there


def test_the_session_api_needs_the_csrf_token_to_set_it(owner, receiver):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)

    response = client.patch(
        "/api/team/settings",
        data={"otel_export": {"endpoint": f"{receiver.url}/v1/logs"}},
        content_type="application/json",
    )

    assert response.status_code == 403 and OtelExport.objects.count() == 0
