"""The malformed requests that used to answer 500 (issue 10), one test each: each now gets the
answer its page gives other bad input (a message, a 400 or a 404), never a 500."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client
from django.urls import reverse

from judging.services.rescore import batch_create
from runs.models import RescoreBatch
from teams.middleware import SESSION_KEY
from tests.api_client import Api, field_locs
from tests.page_helpers import judged_run, signed_in

pytestmark = pytest.mark.django_db


def no_raise(user) -> Client:
    """A signed-in client that returns a 500 response instead of raising the exception."""
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


# --- /failures/?rubric= --------------------------------------------------------------------------


def test_a_malformed_rubric_filter_is_ignored_and_said_so(owner, make_rubric):
    rubric = make_rubric()

    response = no_raise(owner).get(reverse("failures"), {"rubric": "not-a-uuid"})

    assert response.status_code == 200
    assert "That link names no rubric: showing the first one instead." in response.content.decode()
    assert response.context["rubric"] == rubric


def test_another_teams_rubric_in_the_filter_is_a_404(owner, stranger, other_team, make_rubric):
    theirs = make_rubric(team=other_team)

    response = no_raise(owner).get(reverse("failures"), {"rubric": str(theirs.id)})

    assert response.status_code == 404


def test_absurd_version_numbers_in_the_editor_fall_back_to_the_defaults(owner, make_rubric):
    rubric = make_rubric()
    url = reverse("rubric_detail", args=[rubric.id])

    response = no_raise(owner).get(url, {"a": "9" * 30, "b": "-1"})

    assert response.status_code == 200
    assert (response.context["diff_old"], response.context["diff_new"]) == (1, 1)


# --- /batches/?cursor= ---------------------------------------------------------------------------


@pytest.mark.parametrize("cursor", ["%%%", "bad", "WyJ4IiwieSJd", "nan"])
def test_a_bad_batches_cursor_shows_the_first_page_with_a_message(
    owner, team, make_rubric, fake_judge, cursor
):
    batch, _ = batch_create(team=team, rubric=make_rubric())

    response = no_raise(owner).get(reverse("batch_list"), {"cursor": cursor})

    assert response.status_code == 200
    assert "This page link is out of date: showing the first page." in response.content.decode()
    assert [row.batch.pk for row in response.context["rows"]] == [batch.pk]


# --- POST /team/switch/ --------------------------------------------------------------------------


@pytest.mark.parametrize("data", [{}, {"team": ""}, {"team": "not-a-uuid"}, {"team": "\x00"}])
def test_switching_to_a_missing_or_malformed_team_is_a_400(owner, data):
    response = no_raise(owner).post(reverse("team_switch"), data)

    assert response.status_code == 400
    assert "Pick one of your teams to switch to." in response.content.decode()


def test_switching_to_a_team_one_is_not_a_member_of_is_a_404(owner, other_team):
    client = no_raise(owner)

    response = client.post(reverse("team_switch"), {"team": str(other_team.id)})

    assert response.status_code == 404
    assert client.session.get(SESSION_KEY) != str(other_team.id)


def test_switching_to_ones_own_team_still_works(owner, team, make_user):
    from teams.services import membership_set, team_create

    second = team_create(name="Second", slug="second")
    membership_set(team=second, user=owner, role="viewer")
    client = signed_in(owner)

    response = client.post(reverse("team_switch"), {"team": str(second.id), "next": "/runs/x"})

    assert response.status_code == 302 and response["Location"] == "/runs/"
    assert client.session[SESSION_KEY] == str(second.id)


# --- POST /rescore/ with next= -------------------------------------------------------------------


@pytest.mark.parametrize("next_", ["x", "runs", "//evil.example/", "https://evil.example/"])
def test_an_unsafe_or_invalid_next_falls_back_to_a_safe_page(
    owner, make_rubric, make_run, fake_judge, next_
):
    rubric = make_rubric()
    run = judged_run(make_run, rubric=rubric.slug)

    response = no_raise(owner).post(
        reverse("rescore_start"),
        {"scope": "run", "run": str(run.id), "rubric": str(rubric.id), "next": next_},
    )

    assert response.status_code == 302
    assert response["Location"] == reverse("run_detail", args=[run.id])
    assert RescoreBatch.objects.count() == 1


def test_an_invalid_rescore_form_with_a_bad_next_returns_to_the_runs_list(owner):
    response = no_raise(owner).post(reverse("rescore_start"), {"scope": "nope", "next": "x"})

    assert response.status_code == 302 and response["Location"] == reverse("run_list")


def test_a_safe_next_on_this_site_is_kept(owner, make_rubric, make_run, fake_judge):
    rubric = make_rubric()
    run = judged_run(make_run, rubric=rubric.slug)

    response = signed_in(owner).post(
        reverse("rescore_start"),
        {"scope": "run", "run": str(run.id), "rubric": str(rubric.id), "next": "/runs/?q=1"},
    )

    assert response.status_code == 302 and response["Location"] == "/runs/?q=1"


# --- Objects named by malformed ids --------------------------------------------------------------


def test_a_malformed_object_id_in_a_form_is_a_404_not_a_500(owner, make_rubric):
    rubric = make_rubric()

    response = no_raise(owner).post(
        reverse("rescore_start"), {"scope": "selected", "rubric": str(uuid.uuid4())}
    )

    assert response.status_code == 404
    assert rubric.pk  # the team's own rubric is untouched


# --- The API -------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/batches", "/runs", "/rubrics"])
def test_a_nul_byte_in_an_api_query_parameter_is_a_422_naming_it(api_key, path):
    response = Api(api_key).get(path, rubric="a\x00b")

    assert field_locs(response) == [["query", "rubric"]]


@pytest.mark.parametrize("path", ["/runs/%00", "/rubrics/a%00b", "/batches/%00"])
def test_a_nul_byte_in_an_api_path_names_nothing(api_key, path):
    response = Api(api_key).get(path)

    assert response.status_code in (404, 422), response.content
