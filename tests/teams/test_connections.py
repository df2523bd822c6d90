"""Judge connections: the deployment's key only goes to the deployment's judge; a team's key
only to its own connection's address, and it never comes back out (API, page, log).

The judge is the fake judge (tests/fake_judge.py, which records credential headers); "some
other server" is a local listener (tests/http_listener.py) recording every request it gets.
"""

from __future__ import annotations

import logging

import pytest
from django.test import Client
from django.urls import reverse

from judging.services.execute import evaluation_execute
from rubrics.models import Rubric
from runs.models import Evaluation, Status
from teams.models import JudgeConnection
from teams.services import connection_create
from tests.api_client import Api, field_locs
from tests.conftest import SUPPORT_CRITERIA
from tests.http_listener import Listener
from tests.page_helpers import signed_in

pytestmark = pytest.mark.django_db

DEPLOYMENT_KEY = "sk-deployment-0123456789abcdef"
TEAM_KEY = "sk-team-secret-key-9876-wxyz"
PASSING = "Your refund for order number 1234 was sent today, thanks for waiting."


@pytest.fixture
def deployment(fake_judge, settings):
    """The fake judge as the deployment's judge, with a key that must never leave for any
    other address; teams' connections may point at 127.0.0.1 (the test listeners)."""
    settings.EVALSITE_JUDGE_API_KEY = DEPLOYMENT_KEY
    settings.EVALSITE_JUDGE_ALLOW_PRIVATE = True
    return fake_judge


@pytest.fixture
def listener():
    server = Listener(
        status=400,
        body=b'{"error": {"message": "no such model here"}, "internal": "SECRET-INTERNAL"}',
        headers={"Content-Type": "application/json"},
    ).start()
    yield server
    server.stop()


@pytest.fixture
def session_client_api(db):
    def make(user) -> Api:
        client = Client()
        client.force_login(user)
        return Api(client=client)

    return make


def delete(api: Api, path: str):
    return api.send("DELETE", path)


def only_evaluation(run) -> Evaluation:
    return Evaluation.objects.get(run=run)


def judged(run) -> Evaluation:
    evaluation = only_evaluation(run)
    evaluation_execute(evaluation_id=str(evaluation.id))
    evaluation.refresh_from_db()
    return evaluation


# --- The deployment's key stays with the deployment's judge -------------------------------------


def test_a_team_key_cannot_send_the_deployment_key_anywhere_but_the_deployment_judge(
    deployment, listener, api_key, make_run, caplog
):
    caplog.set_level(logging.DEBUG)
    api = Api(api_key)
    # The old way is closed: an api_base on the rubric, or another provider's model string.
    moved = api.post("/rubrics", {"name": "X", "judge_params": {"api_base": listener.url}})
    assert ["body", "payload", "judge_params", "api_base"] in field_locs(moved)
    assert "judge connection" in moved.json()["detail"][0]["msg"]
    other = api.post("/rubrics", {"name": "Y", "judge_model": "anthropic/claude-3-5-sonnet"})
    assert ["body", "payload", "judge_model"] in field_locs(other)
    # The new way: the team's own connection to its own address, without a key.
    created = api.post(
        "/connections",
        {"name": "mine", "model": "openai/gpt-4o-mini", "api_base": f"{listener.url}/v1"},
    )
    assert created.status_code == 201, created.content
    rubric = api.post(
        "/rubrics", {"name": "Z", "criteria": SUPPORT_CRITERIA, "judge_connection": "mine"}
    )
    assert rubric.status_code == 201, rubric.content

    evaluation = judged(make_run(rubric=rubric.json()["slug"]))

    assert evaluation.status == Status.FAILED and listener.seen
    assert all(DEPLOYMENT_KEY not in value for value in listener.credentials_seen())
    assert deployment.credentials() == []  # and nothing went to the deployment's judge
    assert "no such model here" in evaluation.error
    assert "SECRET-INTERNAL" not in evaluation.error  # the provider's message, not the body
    assert DEPLOYMENT_KEY not in caplog.text


def test_the_deployment_judge_gets_the_deployment_key(deployment, make_rubric, make_run):
    """The other side of the rule (and proof the header check above can see a key)."""
    evaluation = judged(make_run(rubric=make_rubric().slug, output=PASSING))

    assert evaluation.status == Status.SUCCEEDED
    assert deployment.credentials() == [{"authorization": f"Bearer {DEPLOYMENT_KEY}"}]


def test_try_it_sends_no_deployment_key_to_a_connection(
    deployment, listener, team, teammate, make_rubric, make_run
):
    connection = connection_create(
        team=team, name="mine", model="openai/x", api_base=f"{listener.url}/v1"
    )
    rubric = make_rubric(judge_connection=connection)
    run = make_run(output=PASSING)

    response = signed_in(teammate).post(
        reverse("rubric_try", args=[rubric.id]),
        {
            "c-TOTAL_FORMS": "1",
            "c-INITIAL_FORMS": "0",
            "c-0-description": 'Mentions "refund"',
            "c-0-required": "on",
            "try_run": str(run.id),
        },
    )

    assert response.status_code == 200 and listener.seen
    assert all(DEPLOYMENT_KEY not in value for value in listener.credentials_seen())
    assert "no such model here" in response.content.decode()
    assert deployment.credentials() == []


def test_a_connection_key_is_used_for_its_own_calls_only(deployment, team, make_rubric, make_run):
    mine = connection_create(
        team=team, name="mine", model="openai/fake-judge", api_base=deployment.url, api_key=TEAM_KEY
    )
    with_key = judged(make_run(rubric=make_rubric(judge_connection=mine).slug, output=PASSING))
    default = judged(make_run(rubric=make_rubric(name="Default").slug, output=PASSING))

    assert with_key.status == default.status == Status.SUCCEEDED
    assert with_key.judge_config["connection"] == str(mine.pk)
    assert TEAM_KEY not in str(with_key.judge_config)
    assert deployment.credentials() == [
        {"authorization": f"Bearer {TEAM_KEY}"},
        {"authorization": f"Bearer {DEPLOYMENT_KEY}"},
    ]


def test_a_connection_without_a_key_sends_no_key_of_the_server(
    deployment, team, make_rubric, make_run
):
    bare = connection_create(
        team=team, name="bare", model="openai/fake-judge", api_base=deployment.url
    )

    evaluation = judged(make_run(rubric=make_rubric(judge_connection=bare).slug, output=PASSING))

    assert evaluation.status == Status.SUCCEEDED
    [sent] = deployment.credentials()
    assert DEPLOYMENT_KEY not in str(sent)


def test_another_providers_model_without_a_connection_is_refused_and_never_called(
    deployment, team, make_rubric, make_run
):
    from rubrics.services import RubricValidationError, rubric_update

    rubric = make_rubric()
    with pytest.raises(RubricValidationError) as caught:
        rubric_update(rubric=rubric, judge_model="ollama/llama3")
    assert "judge connection" in caught.value.errors["judge_model"]
    # Stored before the rule existed: refused again when judged, before any request.
    Rubric.objects.filter(pk=rubric.pk).update(judge_model="anthropic/claude-3-5-sonnet")
    evaluation = judged(make_run(rubric=rubric.slug))

    assert evaluation.status == Status.FAILED and "judge connection" in evaluation.error
    assert deployment.credentials() == []


def test_a_re_score_with_another_providers_model_is_a_422_on_judge(
    deployment, api_key, make_rubric
):
    rubric = make_rubric()
    response = Api(api_key).post(
        "/rescore",
        {"rubric": rubric.slug, "judge": "anthropic/claude-3-5-sonnet", "dry_run": True},
    )
    assert response.status_code == 422, response.content
    assert any(e["loc"][-1] == "judge" for e in response.json()["detail"])


# --- The address guard, at creation and again before every request ------------------------------


@pytest.mark.parametrize(
    "api_base",
    [
        "http://127.0.0.1:8000/v1",
        "http://localhost/v1",
        "http://10.0.0.5/v1",
        "http://192.168.1.10/v1",
        "http://169.254.169.254/latest",
        "http://[fd00:ec2::254]/v1",
        "http://[::1]/v1",
        "http://[::ffff:127.0.0.1]/v1",
        "http://2130706433/v1",
        "http://0x7f.1/v1",
        "http://017700000001/v1",
        "http://metadata.google.internal/v1",
        "http://user@93.184.216.34/v1",
        "http://93.184.216.34@127.0.0.1/v1",
    ],
)
def test_a_private_or_disguised_api_base_is_refused(api_key, settings, api_base):
    settings.EVALSITE_JUDGE_ALLOW_PRIVATE = False
    response = Api(api_key).post(
        "/connections", {"name": "x", "model": "openai/x", "api_base": api_base}
    )
    assert ["body", "payload", "api_base"] in field_locs(response)
    assert not JudgeConnection.objects.exists()


def test_user_information_is_refused_even_where_private_addresses_are_allowed(api_key, settings):
    settings.EVALSITE_JUDGE_ALLOW_PRIVATE = True
    response = Api(api_key).post(
        "/connections", {"name": "x", "model": "openai/x", "api_base": "http://me@127.0.0.1/v1"}
    )
    assert ["body", "payload", "api_base"] in field_locs(response)


def test_an_address_that_turned_private_is_refused_before_the_request(
    deployment, listener, team, settings, make_rubric, make_run
):
    connection = connection_create(
        team=team, name="mine", model="openai/x", api_base=f"{listener.url}/v1"
    )
    settings.EVALSITE_JUDGE_ALLOW_PRIVATE = False  # as if DNS now pointed the name at this host

    evaluation = judged(make_run(rubric=make_rubric(judge_connection=connection).slug))

    assert evaluation.status == Status.FAILED
    assert "judge address refused" in evaluation.error and listener.seen == []


def test_a_redirect_is_not_followed(deployment, team, make_rubric, make_run):
    second = Listener(status=200, body=b"{}").start()
    first = Listener(status=307, headers={"Location": f"{second.url}/v1/chat/completions"}).start()
    try:
        connection = connection_create(
            team=team, name="hop", model="openai/x", api_base=f"{first.url}/v1"
        )
        evaluation = judged(make_run(rubric=make_rubric(judge_connection=connection).slug))
    finally:
        first.stop()
        second.stop()

    assert evaluation.status == Status.FAILED and "redirect (307)" in evaluation.error
    assert len(first.seen) == 1 and second.seen == []


# --- Managing connections -----------------------------------------------------------------------


def test_a_connection_key_never_comes_back_out(owner, team, api_key, settings, caplog):
    settings.EVALSITE_JUDGE_ALLOW_PRIVATE = True
    caplog.set_level(logging.DEBUG)
    api = Api(api_key)

    created = api.post(
        "/connections",
        {
            "name": "mine",
            "model": "openai/x",
            "api_base": "http://127.0.0.1:9/v1",
            "api_key": TEAM_KEY,
        },
    )
    listed = api.get("/connections")
    one = api.get("/connections/mine")
    renamed = api.patch("/connections/mine", {"name": "ours"})
    page = signed_in(owner).get(reverse("team_settings"))

    stored = JudgeConnection.objects.get()
    assert created.status_code == 201 and created.json()["has_key"] is True
    assert created.json()["key_hint"] == "wxyz" and "…wxyz" in page.content.decode()
    for answer in (created, listed, one, renamed, page):
        assert TEAM_KEY not in answer.content.decode()
    assert TEAM_KEY not in stored.key_ciphertext and TEAM_KEY not in repr(stored)
    assert TEAM_KEY not in caplog.text


def test_the_page_shows_a_new_key_once_then_only_its_hint(owner, team, settings):
    settings.EVALSITE_JUDGE_ALLOW_PRIVATE = True
    client = signed_in(owner)
    form = {
        "new-name": "mine",
        "new-model": "openai/x",
        "new-api_base": "http://127.0.0.1:9/v1",
        "new-api_key": TEAM_KEY,
        "new-params": '{"temperature": 0}',
    }

    created = client.post(reverse("connection_new"), form)
    later = client.get(reverse("team_settings"))

    assert created.status_code == 200 and TEAM_KEY in created.content.decode()
    assert "no-store" in created["Cache-Control"]
    assert TEAM_KEY not in later.content.decode() and "…wxyz" in later.content.decode()
    assert JudgeConnection.objects.get(team=team).params == {"temperature": 0}


def test_editing_replaces_the_key_and_a_blank_key_keeps_it(owner, team, settings):
    settings.EVALSITE_JUDGE_ALLOW_PRIVATE = True
    connection = connection_create(
        team=team, name="mine", model="openai/x", api_base="http://127.0.0.1:9/v1", api_key=TEAM_KEY
    )
    prefix = f"conn-{connection.pk}"
    base = {f"{prefix}-name": "mine", f"{prefix}-model": "openai/y", f"{prefix}-api_base": ""}
    base[f"{prefix}-api_base"] = "http://127.0.0.1:9/v1"
    client = signed_in(owner)

    kept = client.post(reverse("connection_edit", args=[connection.pk]), base)
    connection.refresh_from_db()
    assert (
        kept.status_code == 302 and connection.model == "openai/y" and connection.key_hint == "wxyz"
    )

    new_key = "sk-replaced-key-000-abcd"
    client.post(
        reverse("connection_edit", args=[connection.pk]), base | {f"{prefix}-api_key": new_key}
    )
    connection.refresh_from_db()
    assert connection.key_hint == "abcd"


def test_only_owners_and_api_keys_manage_connections_and_everyone_may_list(
    owner, teammate, viewer, team, api_key, session_client_api, settings
):
    settings.EVALSITE_JUDGE_ALLOW_PRIVATE = True
    body = {"name": "mine", "model": "openai/x", "api_base": "http://127.0.0.1:9/v1"}
    for user in (teammate, viewer):
        refused = session_client_api(user).post("/connections", body)
        assert refused.status_code == 403, refused.content
    page = signed_in(teammate).post(reverse("connection_new"), {"new-name": "x"})
    assert page.status_code == 403

    assert session_client_api(owner).post("/connections", body).status_code == 201
    assert Api(api_key).patch("/connections/mine", {"model": "openai/y"}).status_code == 200
    assert [c["name"] for c in session_client_api(viewer).get("/connections").json()] == ["mine"]
    assert delete(session_client_api(viewer), "/connections/mine").status_code == 403


def test_another_teams_connection_is_never_accepted(api_key, other_team, make_rubric, settings):
    settings.EVALSITE_JUDGE_ALLOW_PRIVATE = True
    theirs = connection_create(team=other_team, name="theirs", model="openai/x")
    api = Api(api_key)

    for ref in (str(theirs.pk), "theirs"):
        response = api.post("/rubrics", {"name": f"R {ref}", "judge_connection": ref})
        assert ["body", "payload", "judge_connection"] in field_locs(response)
    rubric = make_rubric()
    patched = api.patch(f"/rubrics/{rubric.slug}", {"judge_connection": str(theirs.pk)})
    assert ["body", "payload", "judge_connection"] in field_locs(patched)
    assert api.get(f"/connections/{theirs.pk}").status_code == 404
    assert api.patch(f"/connections/{theirs.pk}", {"name": "x"}).status_code == 404


def test_a_connection_in_use_is_not_deleted_and_a_deleted_one_fails_its_queued_evaluations(
    deployment, team, api_key, make_rubric, make_run
):
    connection = connection_create(
        team=team, name="mine", model="openai/fake-judge", api_base=deployment.url
    )
    rubric = make_rubric(judge_connection=connection)
    run = make_run(rubric=rubric.slug)
    api = Api(api_key)

    in_use = delete(api, "/connections/mine")
    assert in_use.status_code == 409 and rubric.name in in_use.json()["message"]
    assert api.patch(f"/rubrics/{rubric.slug}", {"judge_connection": None}).status_code == 200
    assert delete(api, "/connections/mine").status_code == 204

    evaluation = judged(run)
    assert evaluation.status == Status.FAILED and "connection" in evaluation.error
    assert "deleted" in evaluation.error and deployment.credentials() == []


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"params": {"extra_headers": {"X-Api-Key": "k"}}}, "params"),
        ({"params": {"api_key": "k"}}, "params"),
        ({"params": {"api_base": "http://1.1.1.1"}}, "params"),
        ({"params": {"timeout": 10_000}}, "params"),
        ({"params": {"max_tokens": 1_000_000}}, "params"),
        ({"model": "ollama/llama3"}, "model"),
        ({"model": "bedrock/anthropic.claude-v2"}, "model"),
        ({"model": "anthropic/claude-3-5-sonnet", "api_base": "https://93.184.216.34/v1"}, "model"),
        ({"model": "no provider here"}, "model"),
    ],
)
def test_invalid_connections_are_a_422_naming_the_field(api_key, fields, field):
    body = {"name": "x", "model": "openai/gpt-4o-mini"} | fields
    locs = field_locs(Api(api_key).post("/connections", body))
    assert any(loc[:3] == ["body", "payload", field] for loc in locs), locs


def test_the_caps_name_the_setting_and_are_clamped_when_judged(api_key, make_rubric, settings):
    from rubrics.judging import judge_for

    settings.EVALSITE_JUDGE_MAX_TIMEOUT = 30
    response = Api(api_key).post("/rubrics", {"name": "Slow", "judge_params": {"timeout": 31}})
    detail = response.json()["detail"]
    assert ["body", "payload", "judge_params", "timeout"] in field_locs(response)
    assert "EVALSITE_JUDGE_MAX_TIMEOUT" in detail[0]["msg"] and "30" in detail[0]["msg"]
    frozen = Evaluation(judge_config={"model": "openai/x", "timeout": 600, "max_tokens": 10**6})
    judge = judge_for(frozen)
    assert judge.timeout == 30 and judge.max_tokens == settings.EVALSITE_JUDGE_MAX_TOKENS


def test_verdicts_are_not_reused_across_connections(deployment, team, make_rubric, make_run):
    first = connection_create(
        team=team, name="a", model="openai/fake-judge", api_base=deployment.url
    )
    second = connection_create(
        team=team, name="b", model="openai/fake-judge", api_base=deployment.url
    )
    rubric = make_rubric(judge_connection=first)
    judged(make_run(rubric=rubric.slug, output=PASSING, external_id="one"))
    Rubric.objects.filter(pk=rubric.pk).update(judge_connection=second)
    rubric.refresh_from_db()

    again = judged(make_run(rubric=rubric.slug, output=PASSING, external_id="two"))
    reused = judged(make_run(rubric=rubric.slug, output=PASSING, external_id="three"))

    assert again.status == reused.status == Status.SUCCEEDED
    # Judged afresh through the second connection; reused through the same one.
    assert deployment.stats()["completions"] == 2


def test_a_second_judge_for_a_consistency_check_follows_the_same_rule(
    deployment, api_key, make_rubric
):
    rubric = make_rubric()
    response = Api(api_key).post(
        f"/rubrics/{rubric.slug}/consistency-checks",
        {"judge": "anthropic/claude-3-5-sonnet", "repeats": 1},
    )
    assert response.status_code == 422, response.content
    assert any(e["loc"][-1] == "judge" for e in response.json()["detail"])


def test_the_rubric_editor_offers_the_teams_connections_and_saves_the_choice(
    owner, team, other_team, make_rubric, settings
):
    from tests.rubrics.test_views import settings_post

    settings.EVALSITE_JUDGE_ALLOW_PRIVATE = True
    ours = connection_create(team=team, name="ours", model="openai/x")
    theirs = connection_create(team=other_team, name="theirs", model="openai/x")
    rubric = make_rubric()
    client = signed_in(owner)
    url = reverse("rubric_settings", args=[rubric.id])

    page = client.get(reverse("rubric_detail", args=[rubric.id])).content.decode()
    assert "Deployment default" in page and "ours (openai/x)" in page and "theirs" not in page
    saved = client.post(url, settings_post(judge_connection=str(ours.pk)))
    refused = client.post(url, settings_post(judge_connection=str(theirs.pk)))

    rubric.refresh_from_db()
    assert saved.status_code == 302 and rubric.judge_connection == ours
    assert (
        refused.status_code == 200 and refused.context["settings_form"].errors["judge_connection"]
    )
    assert client.post(url, settings_post(judge_connection="")).status_code == 302
    rubric.refresh_from_db()
    assert rubric.judge_connection is None


def test_deleting_a_team_deletes_its_connections_and_the_rubrics_choosing_them(team, make_rubric):
    connection = connection_create(team=team, name="mine", model="openai/x")
    make_rubric(judge_connection=connection)

    team.delete()

    assert not JudgeConnection.objects.exists() and not Rubric.objects.exists()
