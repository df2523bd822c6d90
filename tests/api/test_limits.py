"""Per-caller request limits, the cap on waiting score calls and on active re-score batches:
each answers 429 in the error shape with Retry-After and names its limit."""

from __future__ import annotations

import pytest

from judging.services.rescore import batch_cancel
from judging.services.score import score_waiting_slot
from runs.models import AgentRun, Evaluation, RescoreBatch, Status
from tests.api_client import assert_error
from tests.conftest import run_payload


def assert_too_many(response, limit_name: str) -> dict:
    body = assert_error(response, 429)
    retry_after = int(response["Retry-After"])
    assert retry_after >= 1 and body["extra"]["retry_after"] == retry_after
    assert limit_name in body["message"]
    return body


def test_a_key_over_its_request_rate_gets_429_with_retry_after(api, other_api, settings):
    settings.EVALSITE_API_RATE = 2  # per minute
    settings.EVALSITE_API_BURST = 2

    answers = [api.get("/runs").status_code for _ in range(2)]
    refused = api.get("/runs")

    assert answers == [200, 200]
    body = assert_too_many(refused, "EVALSITE_API_RATE")
    assert body["extra"]["limit"] == 2
    assert 1 <= int(refused["Retry-After"]) <= 30  # one request refills in 30 s
    assert other_api.get("/runs").status_code == 200, "another key has its own bucket"


def test_a_signed_in_user_calling_the_api_is_limited_too(session_api, owner, settings):
    settings.EVALSITE_API_RATE = 1
    settings.EVALSITE_API_BURST = 1
    api = session_api(owner)

    assert api.get("/rubrics").status_code == 200
    assert_too_many(api.get("/rubrics"), "EVALSITE_API_RATE")


def test_the_default_rate_leaves_a_busy_client_alone(api):
    statuses = {api.get("/runs").status_code for _ in range(100)}

    assert statuses == {200}


def test_a_team_with_its_cap_of_score_calls_waiting_gets_429_and_nothing_is_stored(
    api, other_api, team, make_rubric, settings, fake_judge
):
    settings.EVALSITE_SCORE_MAX_WAITING = 1
    rubric = make_rubric()
    body = run_payload(rubric=rubric.slug, timeout=0.2)

    with score_waiting_slot(team=team, timeout=5):  # another call of the team is waiting
        refused = api.post("/score", body)
        stored_meanwhile = AgentRun.objects.filter(team=team).count()
        other_team_call = other_api.post("/score", run_payload(alignment="user", timeout=0.2))
    after = api.post("/score", body)

    assert_too_many(refused, "EVALSITE_SCORE_MAX_WAITING")
    assert refused.json()["extra"]["limit"] == 1
    assert stored_meanwhile == 0
    assert other_team_call.status_code in (200, 202), "the cap is per team"
    assert after.status_code in (200, 202), "the place is free again once the call ended"


def test_a_waiting_place_of_a_process_that_died_frees_itself_after_its_wait(team, settings):
    from evalsite.ratelimit import SQLiteBackend

    now = [1000.0]
    backend = SQLiteBackend(settings.DATA_DIR / "holds-test.sqlite3", clock=lambda: now[0])
    key = f"test-holds:{team.pk}"

    first = backend.hold(key, 1, ttl=60)
    refused = backend.hold(key, 1, ttl=60)
    now[0] += 61  # the holder never released: its process died
    later = backend.hold(key, 1, ttl=60)

    assert first is not None and refused is None and later is not None
    backend.release(key, later)
    assert backend.hold(key, 1, ttl=60) is not None


@pytest.fixture
def rubric_with_runs(make_rubric, make_run, fake_judge):
    rubric = make_rubric()
    runs = [make_run(rubric=rubric.slug, output=f"Refund {i}") for i in range(2)]
    Evaluation.objects.filter(run__in=runs).update(status=Status.SUCCEEDED)
    return rubric


def test_a_team_at_its_cap_of_active_batches_gets_429_naming_the_limit(
    api, rubric_with_runs, settings
):
    settings.EVALSITE_TEAM_MAX_ACTIVE_BATCHES = 1
    first = api.post("/rescore", {"rubric": rubric_with_runs.slug})

    refused = api.post("/rescore", {"rubric": rubric_with_runs.slug, "force": True})
    retried = api.post("/rescore", {"rubric": rubric_with_runs.slug}, **{"Idempotency-Key": "k"})

    assert first.status_code == 202, first.content
    body = assert_too_many(refused, "EVALSITE_TEAM_MAX_ACTIVE_BATCHES")
    assert body["extra"]["limit"] == 1
    assert retried.status_code == 429
    assert RescoreBatch.objects.count() == 1
    batch_cancel(batch=RescoreBatch.objects.get())
    assert api.post("/rescore", {"rubric": rubric_with_runs.slug}).status_code == 202


def test_the_rescore_button_at_the_cap_says_which_limit_was_hit(
    client, owner, rubric_with_runs, settings
):
    settings.EVALSITE_TEAM_MAX_ACTIVE_BATCHES = 1
    client.force_login(owner)
    form = {"scope": "failing", "rubric": str(rubric_with_runs.pk), "confirm": "1"}
    AgentRun.objects.update(passed=False)

    client.post("/rescore/", form)
    response = client.post("/rescore/", form, follow=True)

    assert RescoreBatch.objects.count() == 1
    assert b"EVALSITE_TEAM_MAX_ACTIVE_BATCHES" in response.content


def test_an_unreachable_limit_store_lets_requests_through(api, make_rubric, settings, fake_judge):
    """The limits protect the service; a store that is down must not take it down."""
    settings.EVALSITE_RATELIMIT_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    settings.EVALSITE_API_RATE = 1
    settings.EVALSITE_SCORE_MAX_WAITING = 1
    body = run_payload(rubric=make_rubric().slug, timeout=0.2)

    statuses = [api.post("/score", body).status_code for _ in range(3)]

    assert set(statuses) <= {200, 202}
