"""/api/runs and /api/evaluations: ingest, idempotency, limits, and reading results."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection

from judging.services.execute import evaluation_execute
from runs.models import AgentRun, Evaluation
from tests.api_client import Api, assert_error, field_locs
from tests.conftest import run_payload


def test_a_new_run_answers_201_with_its_queued_evaluations(api, make_rubric):
    rubric = make_rubric(alignment_mode="both")
    response = api.post("/runs", run_payload(rubric=rubric.slug, external_id="t-1"))

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["external_id"] == "t-1" and body["rubric"] == str(rubric.id)
    assert body["status"] == "queued" and body["alignment"] == "both"
    assert body["input"]["messages"][1]["content"] == "Where is my refund for order 1234?"
    kinds = {e["kind"]: e for e in body["evaluations"]}
    assert set(kinds) == {"rubric", "alignment"}
    assert kinds["rubric"]["status"] == "queued" and kinds["rubric"]["rubric_version"] == 1
    assert kinds["rubric"]["verdicts"] == [] and kinds["alignment"]["alignment"]["user"] is None


def test_a_new_runs_answer_is_what_reading_it_back_gives_without_reading_it_back(api, make_rubric):
    from tests.api_client import statements

    rubric = make_rubric(alignment_mode="both")
    with statements() as sent:
        created = api.post("/runs", run_payload(rubric=rubric.slug))

    assert created.status_code == 201, created.content
    stored = api.get(f"/runs/{created.json()['id']}").json()
    assert created.json()["evaluations"] == stored["evaluations"]
    assert [e["kind"] for e in stored["evaluations"]] == ["rubric", "alignment"]
    read_back = [q for q in sent if "criterionverdict" in q.lower()]
    assert read_back == [] and sent  # built from what was stored, not read again


def test_the_same_payload_again_returns_the_stored_run_with_200(api):
    first = api.post("/runs", run_payload(external_id="same"))
    again = api.post("/runs", run_payload(external_id="same"))

    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    assert AgentRun.objects.count() == 1


def test_another_payload_under_the_same_external_id_is_a_409(api):
    first = api.post("/runs", run_payload(external_id="same")).json()
    body = assert_error(
        api.post("/runs", run_payload(external_id="same", output="Different.")), 409
    )
    assert body["extra"]["run_id"] == first["id"]
    assert AgentRun.objects.get().output_text.startswith("Your refund")


def test_the_same_external_id_in_two_teams_names_two_runs(api, other_api):
    assert api.post("/runs", run_payload(external_id="x")).status_code == 201
    assert other_api.post("/runs", run_payload(external_id="x")).status_code == 201


@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicates_create_one_run(api_key, make_rubric):
    rubric = make_rubric()
    payload = run_payload(external_id="race", rubric=rubric.slug)
    barrier = threading.Barrier(6)
    statuses: list[int] = []

    def post() -> None:
        try:
            barrier.wait()
            statuses.append(Api(api_key).post("/runs", payload).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert sorted(statuses) == [200] * 5 + [201]
    assert AgentRun.objects.filter(external_id="race").count() == 1
    assert Evaluation.objects.count() == 1


@pytest.mark.parametrize(
    ("payload", "loc"),
    [
        (run_payload(input={"messages": [{"role": "robot", "content": "hi"}]}), "role"),
        (run_payload(colour="red"), "colour"),
        (run_payload(alignment="sometimes"), "alignment"),
        (run_payload(external_id=""), "external_id"),
        (run_payload(metadata=[1, 2]), "metadata"),
    ],
)
def test_invalid_run_payloads_are_a_422_naming_the_field(api, payload, loc):
    locs = field_locs(api.post("/runs", payload))
    assert any(loc in found for found in locs), locs
    assert AgentRun.objects.count() == 0


def test_an_unknown_or_foreign_rubric_is_a_422_naming_the_rubric(api, make_rubric, other_team):
    foreign = make_rubric(team=other_team)
    assert ["body", "payload", "rubric"] in field_locs(
        api.post("/runs", run_payload(rubric="nope"))
    )
    response = api.post("/runs", run_payload(rubric=str(foreign.id)))
    assert ["body", "payload", "rubric"] in field_locs(response)
    assert foreign.name not in response.content.decode()


def test_a_run_over_the_size_limit_is_a_413(api, settings):
    settings.EVALSITE_MAX_RUN_BYTES = 5_000
    body = assert_error(api.post("/runs", run_payload(output="x" * 6_000)), 413)
    assert body["extra"]["limit"] == 5_000
    assert AgentRun.objects.count() == 0


def test_a_huge_body_is_refused_before_it_is_parsed(api, settings):
    settings.EVALSITE_MAX_RUN_BYTES = 5_000
    body = assert_error(api.post("/runs", raw=b"{" + b" " * 200_000), 413)
    assert "limit" in body["message"]


def test_escaped_non_ascii_text_counts_by_its_size_not_its_escapes(api, settings):
    settings.EVALSITE_MAX_RUN_BYTES = 5_000
    raw = json.dumps(run_payload(output="\U0001f600" * 1_000))  # 4 kB of text, 12 kB escaped
    assert len(raw) > 12_000
    assert api.post("/runs", raw=raw).status_code == 201


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ('{"agent": "x",', "Malformed JSON"),
        ("not json at all", "Malformed JSON"),
        ('{"agent": "x", "metadata": {"n": NaN}}', "NaN"),
        ('{"agent": "x", "metadata": {"n": 1e999}}', "out of range"),
        ('{"agent": "nul \\u0000 byte"}', "NUL"),
        ('{"agent": "lone \\ud800 surrogate"}', "surrogate"),
    ],
)
def test_malformed_json_is_a_400_with_a_message(api, raw, words):
    body = assert_error(api.post("/runs", raw=raw), 400)
    assert words in body["message"]


def test_a_run_reads_back_with_verdicts_after_its_evaluation(api, fake_judge, make_rubric):
    rubric = make_rubric(alignment_mode="both")
    created = api.post("/runs", run_payload(rubric=rubric.slug, output="No refund here.")).json()
    for evaluation in created["evaluations"]:
        evaluation_execute(evaluation_id=evaluation["id"])

    body = api.get(f"/runs/{created['id']}").json()

    assert body["status"] == "succeeded" and body["passed"] is False and body["rubric_version"] == 1
    rubric_eval = next(e for e in body["evaluations"] if e["kind"] == "rubric")
    assert [(v["criterion_id"], v["satisfied"]) for v in rubric_eval["verdicts"]] == [
        ("c1", True),
        ("c2", False),
        ("c3", False),
    ]
    assert (
        rubric_eval["verdicts"][1]["required"] is True and rubric_eval["verdicts"][1]["reasoning"]
    )
    assert "not" in rubric_eval["reason"].lower()
    assert not any(v["reused"] for v in rubric_eval["verdicts"])
    alignment = next(e for e in body["evaluations"] if e["kind"] == "alignment")["alignment"]
    assert set(alignment["user"]) >= {"intent", "requirements", "completeness", "appropriateness"}
    assert alignment["system"]["weights"] and alignment["score"] is not None


def test_an_evaluation_reads_back_by_id(api, fake_judge, make_rubric):
    rubric = make_rubric()
    created = api.post("/runs", run_payload(rubric=rubric.slug)).json()
    evaluation_id = created["evaluations"][0]["id"]
    evaluation_execute(evaluation_id=evaluation_id)

    body = api.get(f"/evaluations/{evaluation_id}").json()

    assert body["status"] == "succeeded" and body["passed"] is True and body["score"] == 1.0
    assert [v["satisfied"] for v in body["verdicts"]] == [True, True, True]
    assert body["alignment"] is None and body["error"] == ""


def test_runs_and_evaluations_of_another_team_are_404(api, other_api, make_rubric, make_run):
    run = make_run(rubric=make_rubric().slug)
    evaluation = Evaluation.objects.get(run=run)
    assert_error(other_api.get(f"/runs/{run.id}"), 404)
    assert_error(other_api.get(f"/evaluations/{evaluation.id}"), 404)
    assert_error(api.get("/runs/00000000-0000-0000-0000-000000000000"), 404)
    assert ["path", "run_id"] in field_locs(api.get("/runs/not-a-uuid"))


def test_output_may_be_a_list_of_assistant_messages(api):
    payload = run_payload(output=[{"role": "assistant", "content": "First."}, "Second."])
    body = api.post("/runs", payload).json()
    assert body["output"] == [{"role": "assistant", "content": "First."}, "Second."]


def test_a_huge_body_names_the_documented_limit_and_its_setting(api):
    body = assert_error(api.post("/runs", raw=b"{" + b" " * 5_000_000), 413)

    assert body["message"] == (
        "request body is 5,000,001 bytes; the limit for a run is 1,000,000 bytes "
        "(EVALSITE_MAX_RUN_BYTES)"
    )
    assert (
        body["extra"]["limit"] == 1_000_000 and body["extra"]["setting"] == "EVALSITE_MAX_RUN_BYTES"
    )
