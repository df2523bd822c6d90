"""Two POST /api/rubrics racing for one slug answer as the sequential calls would: one
creates the rubric (201), the other is refused on ``slug`` (422) when it asked for that slug,
or gets the next free one when the slug was made from the name. Never a 500.

The race is forced, not timed: both calls check that the slug is free and wait for each other
at a barrier before either inserts, so the team's unique slug constraint decides. Each call
runs in its own thread with its own database connection, on committed data (a transactional
test); on PostgreSQL the losing insert waits for the winner's commit, then collides.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection

from rubrics import services
from rubrics.models import Rubric
from tests.api_client import Api

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def checks_meet(monkeypatch):
    """The first "is this slug taken?" check of each of the first two threads waits for the
    other's; later checks (a retry, a call after the race) go straight through."""
    barrier = threading.Barrier(2)
    waited: set[int] = set()
    check = services._slug_taken

    def check_then_meet(team: Any, slug: str) -> bool:
        taken = check(team, slug)
        if len(waited) < 2 and threading.get_ident() not in waited:
            waited.add(threading.get_ident())
            barrier.wait(timeout=30)
        return taken

    monkeypatch.setattr(services, "_slug_taken", check_then_meet)


def create_together(key: str, body: dict[str, Any]) -> list[Any]:
    answers: list[Any] = [None, None]

    def call(i: int) -> None:
        try:
            api = Api(key)
            api.client.raise_request_exception = False
            answers[i] = api.post("/rubrics", body)
        finally:
            connection.close()

    threads = [threading.Thread(target=call, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert all(a is not None for a in answers), "a call did not answer"
    return answers


def test_two_creates_asking_for_the_same_slug_make_one_rubric_and_one_clean_422(
    api_key, team, checks_meet
):
    body = {"name": "Support", "slug": "support", "criteria": "Polite"}

    answers = create_together(api_key, body)

    statuses = sorted(a.status_code for a in answers)
    assert statuses == [201, 422], [a.content[:300] for a in answers]
    refused = next(a for a in answers if a.status_code == 422).json()
    assert refused["detail"] == [
        {
            "type": "value_error",
            "loc": ["body", "payload", "slug"],
            "msg": "a rubric with slug 'support' already exists",
        }
    ]
    # Word for word what a create after the first one answers.
    assert Api(api_key).post("/rubrics", body).json() == refused
    rubric = Rubric.objects.get(team=team)
    assert rubric.slug == "support" and rubric.current_version.number == 1


def test_two_creates_with_the_same_name_and_no_slug_both_succeed_with_different_slugs(
    api_key, team, checks_meet
):
    answers = create_together(api_key, {"name": "Support", "criteria": "Polite"})

    assert [a.status_code for a in answers] == [201, 201], [a.content[:300] for a in answers]
    slugs = sorted(a.json()["slug"] for a in answers)
    assert slugs == ["support", "support-2"]
    assert sorted(Rubric.objects.filter(team=team).values_list("slug", flat=True)) == slugs
    assert all(r.current_version.number == 1 for r in Rubric.objects.filter(team=team))


def test_a_create_that_loses_the_race_on_every_attempt_is_refused_on_slug_not_a_500(
    api_key, team, checks_meet, monkeypatch
):
    monkeypatch.setattr(services, "SLUG_ATTEMPTS", 1)

    answers = create_together(api_key, {"name": "Support", "criteria": "Polite"})

    assert sorted(a.status_code for a in answers) == [201, 422]
    refused = next(a for a in answers if a.status_code == 422).json()
    assert refused["detail"] == [
        {
            "type": "value_error",
            "loc": ["body", "payload", "slug"],
            "msg": "rubrics created at the same moment took every slug tried: try again",
        }
    ]
    assert Rubric.objects.filter(team=team).count() == 1
