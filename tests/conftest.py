"""Shared fixtures: personas, factories, API clients, the fake judge, and real Celery worker
processes (tests/worker_harness.py).

Personas: ``owner`` and ``teammate`` (editor) and ``viewer`` of ``team``; ``stranger`` owns
``other_team``. The judge is the only fake: an OpenAI-compatible HTTP server (tests/fake_judge.py)
that litellm really talks to. Every fixture shared by more than one test folder lives here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.api_client import Api
from tests.fake_judge import FakeJudge
from tests.live_server import live_server  # noqa: F401 - overrides pytest-django's
from tests.migrated_db import django_db_keepdb, django_db_setup  # noqa: F401 - extend pytest-django's
from tests.waiting import wait_for  # noqa: F401 - tests import it from here
from tests.worker_harness import (  # noqa: F401 - the harness's fixtures, registered here
    ROOT,
    _no_stray_worker,
    shared_worker,
    start_worker,
    worker,
    worker_env,
)

FAKE_MODEL = "openai/fake-judge"


# --- The judge ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def fake_judge_server() -> Iterator[FakeJudge]:
    judge = FakeJudge(latency=0.0).start()
    yield judge
    judge.stop()


@pytest.fixture
def server(fake_judge_server: FakeJudge) -> FakeJudge:
    """The fake judge with counters, fault memory and latency reset (no Django settings: the
    engine's tests use it as it is)."""
    fake_judge_server.reset()
    fake_judge_server.set_latency(0.0)
    return fake_judge_server


@pytest.fixture
def fake_judge(server: FakeJudge, settings) -> FakeJudge:
    """The fake judge, reset, and configured as the deployment's default judge."""
    settings.EVALSITE_JUDGE_MODEL = FAKE_MODEL
    settings.EVALSITE_JUDGE_API_BASE = server.url
    settings.EVALSITE_JUDGE_API_KEY = "fake-key"
    return server


# --- Personas and factories ---------------------------------------------------------------------


@pytest.fixture
def make_user(db) -> Callable[..., Any]:
    def make(username: str, password: str = "correct-horse-battery") -> Any:
        return get_user_model().objects.create_user(username=username, password=password)

    return make


@pytest.fixture
def team(db):
    from teams.services import team_create

    return team_create(name="Acme", slug="acme")


@pytest.fixture
def other_team(db):
    from teams.services import team_create

    return team_create(name="Globex", slug="globex")


def member(make_user: Callable[..., Any], team: Any, username: str, role: str) -> Any:
    """A new user with ``role`` in ``team``."""
    from teams.services import membership_set

    user = make_user(username)
    membership_set(team=team, user=user, role=role)
    return user


@pytest.fixture
def owner(make_user, team):
    return member(make_user, team, "olivia", "owner")


@pytest.fixture
def teammate(make_user, team):
    return member(make_user, team, "teo", "editor")


@pytest.fixture
def viewer(make_user, team):
    return member(make_user, team, "vera", "viewer")


@pytest.fixture
def stranger(make_user, other_team):
    return member(make_user, other_team, "sam", "owner")


@pytest.fixture
def api_key(team) -> str:
    from teams.services import api_key_create

    _, raw = api_key_create(team=team, name="tests")
    return raw


@pytest.fixture
def other_api_key(other_team) -> str:
    from teams.services import api_key_create

    _, raw = api_key_create(team=other_team, name="tests")
    return raw


SUPPORT_CRITERIA = [
    {"description": 'Mentions "refund"', "required": True},
    {"description": 'Gives the "order number"', "required": True},
    {"description": 'Says "thanks"', "required": False},
]


@pytest.fixture
def make_rubric(team) -> Callable[..., Any]:
    from rubrics.services import rubric_create

    def make(name: str = "Support quality", criteria: Any = None, team=team, **kwargs: Any):
        return rubric_create(
            team=team,
            name=name,
            criteria=SUPPORT_CRITERIA if criteria is None else criteria,
            **kwargs,
        )

    return make


def run_payload(**overrides: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "agent": "support-bot",
        "input": {
            "messages": [
                {"role": "system", "content": "You are a polite support agent."},
                {"role": "user", "content": "Where is my refund for order 1234?"},
            ]
        },
        "output": "Your refund for order number 1234 was sent today, thanks for waiting.",
        "request_context": {},
        "metadata": {},
    }
    payload.update(overrides)
    return payload


@pytest.fixture
def make_run(team) -> Callable[..., Any]:
    """Ingest a run through the real service (evaluations are queued, not executed)."""
    from runs.payloads import RunPayload
    from runs.services import run_ingest

    def make(team=team, **overrides: Any):
        run, _ = run_ingest(team=team, payload=RunPayload.model_validate(run_payload(**overrides)))
        return run

    return make


def queued_evaluation(**fields: Any) -> Any:
    """A queued evaluation of an existing run (a newer one: a re-score, another version or
    judge), stored as ingest and re-scoring store theirs: evaluation_build's unsaved row,
    bulk-inserted. Nothing enqueues it; the test judges it (evaluation_execute)."""
    from runs.models import Evaluation
    from runs.services.evaluations import evaluation_build

    return Evaluation.objects.bulk_create([evaluation_build(**fields)])[0]


# --- API clients (helpers in tests/api_client.py) ------------------------------------------------


@pytest.fixture
def api(api_key) -> Api:
    return Api(api_key)


@pytest.fixture
def other_api(other_api_key) -> Api:
    return Api(other_api_key)


@pytest.fixture
def anon(db) -> Api:
    return Api()


@pytest.fixture
def session_api(db) -> Callable[..., Api]:
    def make(user, enforce_csrf: bool = False) -> Api:
        client = Client(enforce_csrf_checks=enforce_csrf)
        client.force_login(user)
        return Api(client=client)

    return make


# --- Markers --------------------------------------------------------------------------------------

WORKER_FIXTURES = {"worker", "start_worker", "shared_worker", "worker_env"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that asks for a worker or a browser carries its marker even when its module
    forgot it, so `make test-fast` (-m "not worker and not browser") never starts either."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & WORKER_FIXTURES:
            item.add_marker(pytest.mark.worker)
        if "chromium" in names:
            item.add_marker(pytest.mark.browser)


# --- POST /api/score's own connections ----------------------------------------------------------


@pytest.fixture(autouse=True)
def _close_score_connections() -> Iterator[None]:
    """Inline judging threads and idle LISTEN connections keep connections to the test
    database between calls: close them after each test, so none outlives the database."""
    yield
    from evalsite.notify import notify_close
    from judging.services.inline import inline_close

    inline_close()
    notify_close()
