"""Judge models and connections are checked when saved: an unknown provider is a field error,
and "Test connection" makes one tiny judge call through the worker's transport (the team's
key and address only, the private-address guard applied) and shows the answer or the error."""

from __future__ import annotations

import pytest
from django.urls import reverse

from teams.services import connection_create
from tests.api_client import field_locs
from tests.http_listener import Listener
from tests.page_helpers import signed_in

pytestmark = pytest.mark.django_db

DEPLOYMENT_KEY = "sk-deployment-0123456789abcdef"
TEAM_KEY = "sk-team-secret-key-9876-wxyz"


@pytest.fixture
def deployment(fake_judge, settings):
    settings.EVALSITE_JUDGE_API_KEY = DEPLOYMENT_KEY
    settings.EVALSITE_JUDGE_ALLOW_PRIVATE = True
    return fake_judge


def test_an_unknown_provider_is_refused_when_a_rubric_or_connection_is_saved(deployment, api):
    rubric = api.post("/rubrics", {"name": "X", "judge_model": "bogusprovider/nomodel"})
    connection = api.post("/connections", {"name": "c", "model": "bogusprovider/nomodel"})

    assert ["body", "payload", "judge_model"] in field_locs(rubric)
    assert "litellm cannot tell the provider" in rubric.json()["detail"][0]["msg"]
    assert ["body", "payload", "model"] in field_locs(connection)


def test_test_connection_shows_the_judges_answer_and_sends_only_the_teams_key(
    deployment, owner, team
):
    connection = connection_create(
        team=team, name="ours", model="openai/fake", api_base=deployment.url,
        api_key=TEAM_KEY,
    )  # fmt: skip

    page = signed_in(owner).post(reverse("connection_test", args=[connection.id]), follow=True)

    body = page.content.decode()
    assert "Connection “ours” works: openai/fake answered: satisfied" in body
    assert deployment.credentials() == [{"authorization": f"Bearer {TEAM_KEY}"}]


@pytest.fixture
def listener():
    server = Listener(
        status=401,
        body=b'{"error": {"message": "invalid api key"}, "internal": "SECRET-INTERNAL"}',
        headers={"Content-Type": "application/json"},
    ).start()
    yield server
    server.stop()


def test_a_failing_connection_shows_the_providers_message_not_its_body(
    deployment, listener, owner, team
):
    connection = connection_create(
        team=team, name="bad", model="openai/x", api_base=f"{listener.url}/v1", api_key=TEAM_KEY
    )

    page = signed_in(owner).post(reverse("connection_test", args=[connection.id]), follow=True)

    body = page.content.decode()
    assert "Connection “bad” failed:" in body and "invalid api key" in body
    assert "SECRET-INTERNAL" not in body and len(listener.seen) == 1
    assert all(DEPLOYMENT_KEY not in value for value in listener.credentials_seen())


def test_the_private_address_guard_applies_to_a_test(deployment, owner, team, settings):
    connection = connection_create(
        team=team, name="local", model="openai/fake", api_base=deployment.url
    )
    settings.EVALSITE_JUDGE_ALLOW_PRIVATE = False

    page = signed_in(owner).post(reverse("connection_test", args=[connection.id]), follow=True)

    assert "Connection “local” failed:" in page.content.decode()
    assert deployment.credentials() == []  # nothing reached the judge


def test_only_owners_test_connections(deployment, teammate, team):
    connection = connection_create(
        team=team, name="ours", model="openai/fake", api_base=deployment.url
    )

    response = signed_in(teammate).post(reverse("connection_test", args=[connection.id]))

    assert response.status_code == 403 and deployment.credentials() == []
