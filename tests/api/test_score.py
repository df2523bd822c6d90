"""POST /api/score: synchronous scoring against a real worker and the fake judge."""

from __future__ import annotations

import pytest

from runs.models import AgentRun
from tests.api_client import Api, assert_error, field_locs
from tests.conftest import run_payload, wait_for

CRITERIA = [
    {"description": 'Mentions "refund"'},
    {"description": 'Says "sorry"', "required": False},
]


@pytest.fixture
def live_api(worker, api_key) -> Api:
    return Api(api_key)


@pytest.mark.worker
def test_inline_criteria_are_judged_and_returned_within_the_call(live_api):
    response = live_api.post("/score", run_payload(criteria=CRITERIA, timeout=60))

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["passed"], body["score"], body["error"]) == (
        "succeeded",
        True,
        1.0,
        "",
    )
    assert [(v["criterion_id"], v["satisfied"], v["required"]) for v in body["verdicts"]] == [
        ("c1", True, True),
        ("c2", False, False),
    ]
    assert body["evaluation_ids"] == [body["evaluation_id"]] and body["alignment"] is None
    run = AgentRun.objects.get(pk=body["run_id"])
    assert run.passed is True and run.status == "succeeded"


@pytest.mark.worker
def test_text_criteria_that_fail_explain_why_in_reason(live_api):
    text = '- Gives a "tracking link"\n- [optional] Says "thanks"'
    body = live_api.post("/score", run_payload(criteria=text, timeout=60)).json()

    assert body["status"] == "succeeded" and body["passed"] is False and body["score"] == 0.0
    assert "tracking link" in body["reason"]


@pytest.mark.worker
def test_a_stored_rubric_and_alignment_are_scored_together(live_api, make_rubric):
    rubric = make_rubric()
    body = live_api.post(
        "/score", run_payload(rubric=rubric.slug, alignment="both", timeout=60)
    ).json()

    assert body["status"] == "succeeded" and body["passed"] is True
    assert [v["criterion_id"] for v in body["verdicts"]] == ["c1", "c2", "c3"]
    assert len(body["evaluation_ids"]) == 2
    assert body["alignment"]["user"]["intent"]["score"] is not None
    assert body["alignment"]["system_applicable"] is True and body["alignment"]["score"] is not None


@pytest.mark.worker
def test_when_time_runs_out_the_answer_is_202_with_the_evaluation_id(live_api):
    payload = run_payload(
        output="Your refund is coming. [[latency:5]]", criteria=CRITERIA, timeout=1
    )
    response = live_api.post("/score", payload)

    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] in ("queued", "running") and body["passed"] is None
    # The work goes on after the answer: the evaluation ends on its own.
    final = wait_for(
        lambda: (
            (e := live_api.get(f"/evaluations/{body['evaluation_id']}").json())["status"]
            in ("succeeded", "failed")
            and e
        ),
        timeout=60,
        message="the evaluation to finish after the 202",
    )
    assert final["status"] == "succeeded" and final["passed"] is True


@pytest.mark.worker
def test_a_judge_that_fails_for_good_returns_status_failed_with_the_error(live_api):
    payload = run_payload(output="Refund [[judge:400]]", criteria=CRITERIA, timeout=60)
    response = live_api.post("/score", payload)

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "failed" and body["passed"] is None and body["error"]


@pytest.mark.worker
def test_a_passing_rubric_with_a_failed_alignment_answers_failed_with_passed_null(live_api):
    # Alignment scores of 5 are invalid (the alignment evaluation fails for good); the rubric's
    # verdicts are unaffected and pass.
    output = "Your refund for order number 1234 was sent, thanks. [[judge:out_of_range]]"
    payload = run_payload(output=output, criteria=CRITERIA, alignment="user", timeout=60)
    response = live_api.post("/score", payload)

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["passed"]) == ("failed", None)
    assert body["error"] and [v["satisfied"] for v in body["verdicts"]] == [True, False]
    rubric = live_api.get(f"/evaluations/{body['evaluation_id']}").json()
    assert (rubric["status"], rubric["passed"]) == ("succeeded", True)


@pytest.mark.worker
def test_scoring_the_same_external_id_again_returns_the_same_result(live_api):
    first = live_api.post(
        "/score", run_payload(external_id="loop-1", criteria=CRITERIA, timeout=60)
    ).json()
    again = live_api.post(
        "/score", run_payload(external_id="loop-1", criteria=CRITERIA, timeout=60)
    )

    assert again.status_code == 200
    assert again.json()["evaluation_id"] == first["evaluation_id"]
    assert (first["stored"], again.json()["stored"]) == (False, True)
    assert again.json()["rubric_version"] is None  # inline criteria have no version
    other = live_api.post(
        "/score", run_payload(external_id="loop-1", criteria="- Other", timeout=5)
    )
    assert_error(other, 409)


@pytest.mark.worker
def test_a_stored_result_names_its_version_and_fresh_re_judges_on_the_current_one(
    live_api, make_rubric, fake_judge
):
    from rubrics.services import rubric_set_criteria

    rubric = make_rubric()
    payload = run_payload(external_id="loop-v", rubric=rubric.slug, timeout=60)
    first = live_api.post("/score", payload).json()
    assert (first["passed"], first["stored"], first["rubric_version"]) == (True, False, 1)
    rubric_set_criteria(rubric=rubric, criteria=[{"description": 'Mentions "voucher"'}])
    calls = fake_judge.stats()["completions"]

    again = live_api.post("/score", payload).json()

    assert (again["passed"], again["stored"], again["rubric_version"]) == (True, True, 1)
    assert again["evaluation_id"] == first["evaluation_id"]
    assert fake_judge.stats()["completions"] == calls  # nothing judged

    fresh = live_api.post("/score", payload | {"fresh": True})

    assert fresh.status_code == 200, fresh.content
    body = fresh.json()
    assert (body["status"], body["passed"], body["stored"], body["rubric_version"]) == (
        "succeeded",
        False,
        False,
        2,
    )
    assert body["run_id"] == first["run_id"] and body["evaluation_id"] != first["evaluation_id"]
    assert [v["description"] for v in body["verdicts"]] == ['Mentions "voucher"']
    assert AgentRun.objects.filter(external_id="loop-v").count() == 1
    # The earlier verdict stays in the run's history; the run's result is the new one.
    old = live_api.get(f"/evaluations/{first['evaluation_id']}").json()
    assert (old["passed"], old["rubric_version"]) == (True, 1)
    run = live_api.get(f"/runs/{first['run_id']}").json()
    assert run["passed"] is False
    assert live_api.post("/score", payload).json()["evaluation_id"] == body["evaluation_id"]


@pytest.mark.worker
def test_fresh_on_inline_criteria_judges_the_same_criteria_again(live_api):
    payload = run_payload(external_id="loop-i", criteria=CRITERIA, timeout=60)
    first = live_api.post("/score", payload).json()

    body = live_api.post("/score", payload | {"fresh": True, "inline": True}).json()

    assert (body["status"], body["passed"], body["stored"]) == ("succeeded", True, False)
    assert body["evaluation_id"] != first["evaluation_id"] and body["rubric_version"] is None
    assert [v["satisfied"] for v in body["verdicts"]] == [True, False]
    assert AgentRun.objects.filter(external_id="loop-i").count() == 1


def test_fresh_on_a_new_run_is_a_plain_first_score(api):
    body = api.post("/score", run_payload(criteria=CRITERIA, timeout=1, fresh=True)).json()
    assert body["stored"] is False


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"timeout": 121}, "timeout"),
        ({"timeout": 0}, "timeout"),
        ({"fresh": "maybe"}, "fresh"),
        ({"criteria": [{"required": True}]}, "criteria"),
    ],
)
def test_invalid_score_requests_are_a_422_naming_the_field(api, extra, field):
    locs = field_locs(api.post("/score", run_payload(criteria=CRITERIA) | extra))
    assert any(field in loc for loc in locs), locs
    assert AgentRun.objects.count() == 0


def test_nothing_to_score_is_a_422_naming_criteria_and_stores_nothing(api):
    assert ["body", "payload", "criteria"] in field_locs(api.post("/score", run_payload()))
    assert ["body", "payload", "criteria"] in field_locs(
        api.post("/score", run_payload(criteria=[]))
    )
    assert AgentRun.objects.count() == 0


def test_a_rubric_of_another_team_cannot_be_used(api, make_rubric, other_team):
    foreign = make_rubric(team=other_team)
    response = api.post("/score", run_payload(rubric=str(foreign.id)))
    assert ["body", "payload", "rubric"] in field_locs(response)


def test_scoring_needs_a_key(anon):
    assert_error(anon.post("/score", run_payload(criteria=CRITERIA)), 401)


def _over_budget_answer(api: Api, **extra) -> dict:
    response = api.post("/score", run_payload(criteria=CRITERIA, timeout=60) | extra)
    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["status"], body["passed"], body["error"]) == ("over_budget", None, "")
    assert "judge budget is reached" in body["detail"]
    # A limit of 0: a new day or month does not help (judging.services.budget_wait).
    assert body["detail"].startswith("Waiting for budget — resumes when the budget is raised: ")
    assert AgentRun.objects.get(pk=body["run_id"]).status == "over_budget"
    return body


@pytest.mark.worker
def test_a_score_call_over_the_judge_budget_is_answered_202_over_budget_once_parked(
    live_api, team, fake_judge
):
    from judging.services.budget import budget_update

    budget_update(team=team, monthly_usd=0)

    _over_budget_answer(live_api)

    assert fake_judge.stats()["completions"] == 0
