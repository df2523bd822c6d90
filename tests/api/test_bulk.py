"""POST /api/runs/bulk: many runs in one transaction, all or nothing."""

from __future__ import annotations

from runs.models import AgentRun, Evaluation
from tests.api_client import assert_error, field_locs
from tests.conftest import run_payload


def test_valid_runs_are_stored_together_with_their_evaluations(api, make_rubric):
    rubric = make_rubric()
    runs = [run_payload(external_id=f"b-{i}", rubric=rubric.slug) for i in range(3)]
    response = api.post("/runs/bulk", {"runs": runs})

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["created"], body["existing"]) == (3, 0)
    assert [item["external_id"] for item in body["items"]] == ["b-0", "b-1", "b-2"]
    assert all(item["evaluations"][0]["status"] == "queued" for item in body["items"])
    assert Evaluation.objects.count() == 3


def test_each_items_answer_is_what_reading_its_run_back_gives(api, make_rubric):
    """New runs are answered from what the call stored (no verdict is read back), runs that
    existed already from the database; in either case exactly what GET /runs/{id} answers."""
    from tests.api_client import statements

    rubric = make_rubric(alignment_mode="both")
    fresh = [run_payload(external_id=f"n-{i}", rubric=rubric.slug) for i in range(2)]
    with statements() as sent:
        first = api.post("/runs/bulk", {"runs": [*fresh, fresh[0]]})
    again = api.post("/runs/bulk", {"runs": [fresh[1], run_payload(rubric=rubric.slug)]})

    assert (first.status_code, again.status_code) == (201, 201), first.content
    assert [i["created"] for i in first.json()["items"]] == [True, True, False]
    assert [i["created"] for i in again.json()["items"]] == [False, True]
    for item in first.json()["items"] + again.json()["items"]:
        stored = api.get(f"/runs/{item['id']}").json()
        assert item["evaluations"] == stored["evaluations"], item["external_id"]
        assert [e["kind"] for e in stored["evaluations"]] == ["rubric", "alignment"]
    assert sent and not [q for q in sent if "criterionverdict" in q.lower()]


def test_sending_the_same_batch_again_creates_nothing(api):
    runs = [run_payload(external_id=f"b-{i}") for i in range(3)]
    first = api.post("/runs/bulk", {"runs": runs}).json()
    again = api.post("/runs/bulk", {"runs": runs})

    assert again.status_code == 200
    assert (again.json()["created"], again.json()["existing"]) == (0, 3)
    assert [i["id"] for i in again.json()["items"]] == [i["id"] for i in first["items"]]
    assert AgentRun.objects.count() == 3


def test_one_invalid_run_stores_nothing_and_every_error_is_reported(api, make_rubric):
    rubric = make_rubric()
    runs = [
        run_payload(external_id="ok", rubric=rubric.slug),
        run_payload(input={"messages": [{"role": "robot", "content": "hi"}]}),
        run_payload(rubric="no-such-rubric"),
        run_payload(colour="red"),
    ]
    body = assert_error(api.post("/runs/bulk", {"runs": runs}), 422)

    assert body["message"] == "3 of 4 runs are invalid; nothing was stored"
    found = {(e["index"], e["field"]) for e in body["extra"]["errors"]}
    assert found == {(1, "input.messages[0].role"), (2, "rubric"), (3, "colour")}
    assert AgentRun.objects.count() == 0 and Evaluation.objects.count() == 0


def test_an_external_id_taken_by_other_content_is_an_item_error(api):
    api.post("/runs", run_payload(external_id="taken"))
    runs = [run_payload(external_id="fresh"), run_payload(external_id="taken", output="Changed")]
    body = assert_error(api.post("/runs/bulk", {"runs": runs}), 422)

    assert [(e["index"], e["field"]) for e in body["extra"]["errors"]] == [(1, "external_id")]
    assert not AgentRun.objects.filter(external_id="fresh").exists()


def test_duplicates_inside_one_batch_name_one_run(api):
    runs = [run_payload(external_id="twice"), run_payload(external_id="twice")]
    body = api.post("/runs/bulk", {"runs": runs}).json()
    assert body["items"][0]["id"] == body["items"][1]["id"]
    assert [i["created"] for i in body["items"]] == [True, False]


def test_a_run_over_the_size_limit_is_an_item_error(api, settings):
    settings.EVALSITE_MAX_RUN_BYTES = 5_000
    runs = [run_payload(), run_payload(output="x" * 6_000)]
    body = assert_error(api.post("/runs/bulk", {"runs": runs}), 422)
    assert [e["index"] for e in body["extra"]["errors"]] == [1]
    assert "limit" in body["extra"]["errors"][0]["message"]


def test_more_than_1000_runs_is_a_422(api):
    assert field_locs(api.post("/runs/bulk", {"runs": [{}] * 1001}))
    assert AgentRun.objects.count() == 0


def test_a_bulk_body_over_its_limit_is_a_413(api, settings):
    settings.EVALSITE_MAX_BULK_BYTES = 10_000
    runs = [run_payload(output="y" * 1_000) for _ in range(20)]
    body = assert_error(api.post("/runs/bulk", {"runs": runs}), 413)
    assert body["extra"]["limit"] == 10_000


def test_the_body_must_hold_a_list_of_runs(api):
    assert field_locs(api.post("/runs/bulk", {"runs": "nope"}))
    assert field_locs(api.post("/runs/bulk", {"items": []}))


def test_bulk_needs_a_key_of_this_team(anon, other_api, make_rubric):
    rubric = make_rubric()
    assert_error(anon.post("/runs/bulk", {"runs": [run_payload()]}), 401)
    body = assert_error(
        other_api.post("/runs/bulk", {"runs": [run_payload(rubric=rubric.slug)]}), 422
    )
    assert body["extra"]["errors"][0]["field"] == "rubric"
