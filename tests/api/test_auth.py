"""Who may call the API: API keys, browser sessions with CSRF, roles, and team scoping."""

from __future__ import annotations

import pytest
from django.test import Client

from teams.models import ApiKey
from teams.services import api_key_create, api_key_revoke
from tests.api_client import Api, assert_error
from tests.conftest import run_payload

SOME_ID = "4c1d7b3e-0f52-4a8e-9d6b-2f7a1c9e5b10"  # fixed: xdist workers must collect the same ids
ENDPOINTS = [
    ("GET", "/rubrics"),
    ("POST", "/rubrics"),
    ("GET", "/rubrics/support"),
    ("PATCH", "/rubrics/support"),
    ("POST", "/rubrics/support/archive"),
    ("PUT", "/rubrics/support/criteria"),
    ("GET", "/rubrics/support/versions"),
    ("GET", "/rubrics/support/versions/1"),
    ("POST", "/runs"),
    ("POST", "/runs/bulk"),
    ("GET", "/runs"),
    ("GET", f"/runs/{SOME_ID}"),
    ("GET", f"/evaluations/{SOME_ID}"),
    ("POST", "/score"),
]
# Test ids without the random id: the same on every pytest-xdist process.
ENDPOINT_IDS = [f"{method}-{path.replace(SOME_ID, '<id>')}" for method, path in ENDPOINTS]


def call(api: Api, method: str, path: str):
    return api.get(path) if method == "GET" else api.send(method, path, {})


@pytest.mark.parametrize(("method", "path"), ENDPOINTS, ids=ENDPOINT_IDS)
def test_every_endpoint_answers_401_without_a_key(anon, method, path):
    body = assert_error(call(anon, method, path), 401)
    assert "Bearer" in body["message"]


@pytest.mark.parametrize(("method", "path"), ENDPOINTS, ids=ENDPOINT_IDS)
def test_every_endpoint_answers_401_with_a_revoked_key(team, method, path):
    key, raw = api_key_create(team=team, name="old")
    api_key_revoke(key=key)
    assert_error(call(Api(raw), method, path), 401)


@pytest.mark.parametrize(
    "header", ["Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Bearer es_not-a-real-key", "Token x"]
)
def test_malformed_or_unknown_authorization_headers_answer_401(anon, header):
    response = anon.client.get("/api/runs", headers={"Authorization": header})
    assert_error(response, 401)


def test_a_valid_key_records_when_it_was_last_used(api, api_key):
    assert ApiKey.objects.get().last_used_at is None
    assert api.get("/runs").status_code == 200
    assert ApiKey.objects.get().last_used_at is not None


def test_a_key_only_sees_its_own_team(api, other_api, make_rubric, make_run):
    rubric = make_rubric()
    run = make_run(rubric=rubric.slug)

    assert other_api.get("/rubrics").json()["items"] == []
    assert other_api.get("/runs").json()["items"] == []
    for path in (f"/rubrics/{rubric.id}", f"/rubrics/{rubric.slug}", f"/runs/{run.id}"):
        body = assert_error(other_api.get(path), 404)
        assert rubric.name not in str(body)
    assert api.get(f"/runs/{run.id}").status_code == 200


def test_a_signed_in_member_reads_through_the_session(session_api, owner, make_rubric):
    make_rubric()
    response = session_api(owner).get("/rubrics")
    assert response.status_code == 200
    assert [r["slug"] for r in response.json()["items"]] == ["support-quality"]


def test_a_session_write_without_the_csrf_token_is_refused(session_api, owner):
    api = session_api(owner, enforce_csrf=True)
    body = assert_error(api.post("/rubrics", {"name": "New"}), 403)
    assert "CSRF" in body["message"]


def test_a_session_write_with_the_csrf_token_succeeds(owner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    client.cookies.load({"csrftoken": "a" * 32})
    response = client.post(
        "/api/rubrics",
        data={"name": "New"},
        content_type="application/json",
        headers={"X-CSRFToken": "a" * 32},
    )
    assert response.status_code == 201, response.content


def test_a_viewer_reads_but_cannot_write(session_api, viewer, make_rubric):
    rubric = make_rubric()
    api = session_api(viewer)
    assert api.get(f"/rubrics/{rubric.slug}").status_code == 200
    assert_error(api.post("/rubrics", {"name": "Mine"}), 403)
    assert_error(api.patch(f"/rubrics/{rubric.slug}", {"name": "Renamed"}), 403)
    assert_error(api.post("/runs", run_payload()), 403)
    rubric.refresh_from_db()
    assert rubric.name == "Support quality"


def test_a_member_of_another_team_gets_404_for_this_teams_objects(
    session_api, stranger, make_rubric
):
    rubric = make_rubric()
    assert_error(session_api(stranger).get(f"/rubrics/{rubric.slug}"), 404)


def test_a_signed_in_user_without_a_team_is_unauthenticated(make_user, session_api):
    assert_error(session_api(make_user("nomad")).get("/runs"), 401)
