"""/api/rescore, /api/runs/{id}/rescore and /api/batches."""

from __future__ import annotations

import uuid

import pytest

from runs.models import AgentRun, Evaluation, RescoreBatch, Status
from tests.api_client import Api, assert_error, field_locs
from tests.conftest import wait_for


@pytest.fixture
def rubric(make_rubric, fake_judge):
    return make_rubric()


@pytest.fixture
def judged_runs(make_run, rubric):
    """Runs of the rubric whose first evaluation has ended (arranged, not executed)."""

    def make(n: int, **overrides) -> list[AgentRun]:
        runs = [make_run(rubric=rubric.slug, output=f"Refund {i}", **overrides) for i in range(n)]
        Evaluation.objects.filter(run__in=runs).update(status=Status.SUCCEEDED)
        AgentRun.objects.filter(pk__in=[r.pk for r in runs]).update(
            status=Status.SUCCEEDED, passed=False
        )
        return runs

    return make


def test_a_dry_run_answers_200_with_the_estimate_and_queues_nothing(api, rubric, judged_runs):
    judged_runs(3)

    response = api.post("/rescore", {"rubric": rubric.slug, "dry_run": True})

    assert response.status_code == 200, response.content
    assert set(response.json()) == {"estimate"}
    estimate = response.json()["estimate"]
    assert estimate["runs"] == estimate["judge_calls"] == 3
    assert estimate["criterion_judgements"] == 9 and estimate["criteria_reused"] == 0
    assert estimate["tokens"] == estimate["prompt_tokens"] + estimate["completion_tokens"] > 0
    assert estimate["cost"] is None and estimate["model"] == "openai/fake-judge"
    assert not RescoreBatch.objects.exists()
    assert Evaluation.objects.count() == 3


def test_a_rescore_answers_202_with_the_batch_its_estimate_and_counts(api, rubric, judged_runs):
    runs = judged_runs(2)

    response = api.post("/rescore", {"rubric": str(rubric.id), "failed_only": True})

    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "queued" and body["total"] == 2
    assert body["estimate"]["runs"] == 2 and body["estimate"]["judge_calls"] == 2
    assert body["counts"] == {
        "queued": 2,
        "running": 0,
        "succeeded": 0,
        "failed": 0,
        "cancelled": 0,
    }
    assert body["progress"] == 0.0 and body["rubric_version"] == 1
    batch = RescoreBatch.objects.get(pk=body["id"])
    assert set(batch.evaluations.values_list("run_id", flat=True)) == {r.pk for r in runs}


def test_the_same_idempotency_key_returns_the_same_batch(api, rubric, judged_runs):
    judged_runs(2)

    first = api.post("/rescore", {"rubric": rubric.slug}, **{"Idempotency-Key": "retry-1"})
    second = api.post("/rescore", {"rubric": rubric.slug}, **{"Idempotency-Key": "retry-1"})

    assert first.status_code == second.status_code == 202
    assert first.json()["id"] == second.json()["id"]
    assert RescoreBatch.objects.count() == 1 and Evaluation.objects.exclude(batch=None).count() == 2


def test_the_same_idempotency_key_with_another_request_is_a_conflict(api, rubric, judged_runs):
    judged_runs(2)
    first = api.post("/rescore", {"rubric": rubric.slug}, **{"Idempotency-Key": "nightly"})

    other = api.post(
        "/rescore", {"rubric": rubric.slug, "force": True}, **{"Idempotency-Key": "nightly"}
    )

    assert other.status_code == 409, other.content
    assert "nightly" in other.json()["message"]
    assert other.json()["extra"]["batch_id"] == first.json()["id"]
    assert RescoreBatch.objects.count() == 1


def test_a_duplicate_request_without_a_key_queues_no_run_twice(api, rubric, judged_runs):
    judged_runs(2)

    first = api.post("/rescore", {"rubric": rubric.slug}).json()
    second = api.post("/rescore", {"rubric": rubric.slug}).json()

    assert first["total"] == 2
    assert second["total"] == 0 and second["estimate"]["skipped_pending"] == 2
    assert Evaluation.objects.exclude(batch=None).count() == 2


def test_one_run_can_be_rescored_and_its_batch_read_listed_and_cancelled(api, judged_runs):
    [run] = judged_runs(1)

    created = api.post(f"/runs/{run.id}/rescore", {"force": True}, **{"Idempotency-Key": "one"})
    assert created.status_code == 202, created.content
    batch_id = created.json()["id"]

    got = api.get(f"/batches/{batch_id}")
    assert got.status_code == 200 and got.json()["total"] == 1 and got.json()["force"] is True
    listed = api.get("/batches")
    assert [b["id"] for b in listed.json()["items"]] == [batch_id]
    cancelled = api.post(f"/batches/{batch_id}/cancel")
    assert cancelled.status_code == 200
    assert (
        cancelled.json()["status"] == "cancelled" and cancelled.json()["counts"]["cancelled"] == 1
    )
    assert cancelled.json()["finished_at"] is not None


def test_batches_list_pages_with_a_cursor(api, rubric, judged_runs, settings):
    settings.EVALSITE_PAGE_SIZE_MAX = 2
    runs = judged_runs(3)
    for run in runs:
        api.post(f"/runs/{run.id}/rescore", {"force": True})

    first = api.get("/batches", limit=50).json()
    second = api.get("/batches", cursor=first["next_cursor"]).json()

    assert len(first["items"]) == 2 and len(second["items"]) == 1 and second["next_cursor"] is None
    seen = {b["id"] for b in first["items"] + second["items"]}
    assert seen == {str(b) for b in RescoreBatch.objects.values_list("id", flat=True)}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"rubric": "no-such-rubric"}, "rubric"),
        ({"target_version": 9}, "target_version"),
        ({"webhook_url": "not a url"}, "webhook_url"),
        ({"judge": "two words"}, "judge"),
        ({"runs": [str(uuid.uuid4())]}, "runs"),
        ({"version": 0}, "version"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_invalid_rescore_requests_are_a_422_naming_the_field(api, rubric, judged_runs, body, field):
    judged_runs(1)

    response = api.post("/rescore", {"rubric": rubric.slug} | body)

    assert any(field in loc for loc in field_locs(response)), response.json()
    assert not RescoreBatch.objects.exists()


def test_another_teams_objects_are_404_or_unknown(api, other_api, rubric, judged_runs):
    [run] = judged_runs(1)
    batch_id = api.post(f"/runs/{run.id}/rescore", {}).json()["id"]

    assert_error(other_api.post(f"/runs/{run.id}/rescore", {}), 404)
    assert_error(other_api.get(f"/batches/{batch_id}"), 404)
    assert_error(other_api.post(f"/batches/{batch_id}/cancel"), 404)
    assert other_api.get("/batches").json()["items"] == []
    assert any(
        "rubric" in loc for loc in field_locs(other_api.post("/rescore", {"rubric": rubric.slug}))
    )
    assert RescoreBatch.objects.get(pk=batch_id).cancelled_at is None


def test_rescoring_needs_a_key_and_edit_rights(anon, session_api, viewer, rubric, judged_runs):
    judged_runs(1)

    assert_error(anon.post("/rescore", {"rubric": rubric.slug}), 401)
    assert_error(anon.get("/batches"), 401)
    as_viewer = session_api(viewer)
    assert_error(as_viewer.post("/rescore", {"rubric": rubric.slug}), 403)
    assert as_viewer.get("/batches").status_code == 200
    assert not RescoreBatch.objects.exists()


@pytest.mark.worker
def test_a_rescore_through_the_api_runs_to_completion_with_actual_usage(
    worker, api_key, make_rubric, make_run, fake_judge
):
    api = Api(api_key)
    rubric = make_rubric()
    runs = [make_run(rubric=rubric.slug, output=f"Refund for order number {i}") for i in range(3)]
    wait_for(
        lambda: not Evaluation.objects.filter(run__in=runs, status__in=["queued", "running"]).exists(),
        timeout=60, message="the first evaluations",
    )  # fmt: skip
    fake_judge.reset()

    estimate = api.post("/rescore", {"rubric": rubric.slug, "dry_run": True, "force": True}).json()
    batch_id = api.post("/rescore", {"rubric": rubric.slug, "force": True}).json()["id"]
    done = wait_for(
        lambda: (b := api.get(f"/batches/{batch_id}").json())["finished_at"] and b,
        timeout=60, message="the batch to finish",
    )  # fmt: skip

    assert done["status"] == "completed" and done["progress"] == 1.0
    assert done["actual"]["judge_calls"] == estimate["estimate"]["judge_calls"] == 3
    assert fake_judge.stats()["completions"] == 3
    assert done["failures"] == []
