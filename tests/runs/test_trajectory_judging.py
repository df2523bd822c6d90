"""Trajectories through the server: ingest stores steps, tools and a reference; evaluations are
judged in their version's view (in process here, by a real worker in the last test); evidence and
what the rendering cut are stored; verdict reuse never crosses views."""

from __future__ import annotations

import pytest

from judging.services.execute import evaluation_execute
from rubrics.services import rubric_set_judge_view
from runs.models import CriterionVerdict, Evaluation, RunTool, Status
from tests.conftest import queued_evaluation
from tests.waiting import wait_for

SUPPORT_RUN = {
    "input": {
        "messages": [
            {"role": "system", "content": "You are a support agent."},
            {"role": "user", "content": "Refund order A17 please."},
        ]
    },
    "output": [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "lookup_order", "arguments": '{"order_id": "A17"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "refund", "arguments": "{not json"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "order A17: paid"},
        {"role": "tool", "tool_call_id": "call_2", "content": "refund issued"},
        {"role": "tool", "tool_call_id": "call_9", "content": "stray"},
        {"role": "assistant", "content": "Done: your refund is on its way."},
    ],
    "expected_output": "The refund for A17 is issued.",
}
CRITERIA = [
    {"description": 'Looked the order up ("lookup_order") before refunding'},
    {"description": 'Says "on its way"'},
]


@pytest.fixture
def trajectory_rubric(make_rubric):
    rubric = make_rubric(name="Tool use", criteria=CRITERIA)
    rubric_set_judge_view(rubric=rubric, judge_view="trajectory")
    rubric.refresh_from_db()
    return rubric


def judged(evaluation: Evaluation) -> Evaluation:
    assert evaluation_execute(evaluation_id=str(evaluation.id)).status == "succeeded"
    evaluation.refresh_from_db()
    return evaluation


def test_ingest_stores_steps_the_tools_called_flags_and_the_reference(make_run):
    run = make_run(**SUPPORT_RUN)
    assert [s["kind"] for s in run.steps] == [
        "message",
        "message",
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
        "tool_result",
        "message",
    ]
    assert run.flagged_steps == 2  # the arguments that are not JSON, the result of no call
    assert run.steps[3]["flags"] == ["arguments_not_json"]
    assert run.steps[6]["flags"] == ["unmatched_call"]
    assert run.output_text == "Done: your refund is on its way."
    assert run.expected_output == "The refund for A17 is issued."
    tools = {t.tool: t.calls for t in RunTool.objects.filter(run=run)}
    assert tools == {"lookup_order": 1, "refund": 1}


def test_the_versions_view_decides_what_the_judge_sees_and_evidence_is_stored(
    fake_judge, trajectory_rubric, make_run
):
    run = make_run(rubric=trajectory_rubric.slug, **SUPPORT_RUN)
    (evaluation,) = Evaluation.objects.filter(run=run)
    assert (evaluation.judge_view, evaluation.run_token_budget) == ("trajectory", 24_000)
    evaluation = judged(evaluation)
    assert evaluation.passed is True
    lookup, way = CriterionVerdict.objects.filter(evaluation=evaluation).order_by("position")
    assert lookup.evidence == [2, 4]  # the call and its result
    assert way.evidence == [7]
    prompt = fake_judge.last_request()["messages"][1]["content"]
    assert "tool call refund (call_2) [arguments_not_json]: {not json" in prompt
    assert "The refund for A17 is issued." in prompt  # the reference, in every view
    assert evaluation.rendering == {}


def test_reuse_never_crosses_views(fake_judge, make_rubric, make_run):
    rubric = make_rubric(name="Views", criteria=CRITERIA)
    run = make_run(rubric=rubric.slug, **SUPPORT_RUN)
    final = judged(Evaluation.objects.get(run=run))
    assert final.judge_view == "final" and final.criteria_judged == 2
    # The final answer never mentions the lookup: only the trajectory shows it.
    assert final.passed is False

    rubric_set_judge_view(rubric=rubric, judge_view="trajectory")
    rubric.refresh_from_db()
    fake_judge.reset()
    trajectory = judged(
        queued_evaluation(run=run, kind="rubric", rubric=rubric, version=rubric.current_version)
    )
    assert (trajectory.criteria_judged, trajectory.criteria_reused) == (2, 0)
    assert fake_judge.stats()["completions"] == 1
    assert trajectory.passed is True

    again = judged(
        queued_evaluation(run=run, kind="rubric", rubric=rubric, version=rubric.current_version)
    )
    assert (again.criteria_judged, again.criteria_reused) == (0, 2)
    reused = CriterionVerdict.objects.filter(evaluation=again).order_by("position").first()
    assert reused is not None and reused.evidence == [2, 4]


def test_a_long_run_is_cut_to_the_budget_and_the_cut_is_recorded(fake_judge, make_rubric, make_run):
    rubric = make_rubric(name="Long", criteria=CRITERIA)
    rubric_set_judge_view(rubric=rubric, judge_view="trajectory", run_token_budget=1000)
    rubric.refresh_from_db()
    output = []
    for i in range(80):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "search", "arguments": "{}"},
        }
        output += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"result {i} " * 20},
        ]
    output.append({"role": "assistant", "content": "Done, it is on its way."})
    run = make_run(rubric=rubric.slug, input=SUPPORT_RUN["input"], output=output)
    evaluation = judged(Evaluation.objects.get(run=run))
    (cut,) = evaluation.rendering["elided"]
    assert evaluation.rendering["view"] == "trajectory"
    assert evaluation.rendering["tokens"] <= evaluation.rendering["budget"] == 1000
    assert cut["from"] == 2 and cut["tool_calls"] > 30
    prompt = fake_judge.last_request()["messages"][1]["content"]
    assert f"[… steps {cut['from']}–{cut['to']} elided: {cut['steps']} steps" in prompt


def test_the_api_answers_steps_tools_and_evidence(fake_judge, api, trajectory_rubric):
    created = api.post("/runs", {"rubric": trajectory_rubric.slug, **SUPPORT_RUN})
    assert created.status_code == 201, created.content
    run_id = created.json()["id"]
    evaluation = Evaluation.objects.get(run_id=run_id)
    judged(evaluation)
    body = api.get(f"/runs/{run_id}").json()
    assert body["tools"] == ["lookup_order", "refund"] and body["flagged_steps"] == 2
    assert body["steps"][2]["tool"] == "lookup_order"
    assert body["expected_output"] == "The refund for A17 is issued."
    (result,) = body["evaluations"]
    assert result["judge_view"] == "trajectory" and result["rendering"] == {}
    assert [v["evidence"] for v in result["verdicts"]] == [[2, 4], [7]]


@pytest.mark.parametrize(
    "message",
    [
        {"content": "no role and no type"},
        {"role": "robot", "content": "x"},
    ],
)
def test_a_message_that_is_neither_a_role_nor_an_item_is_a_422(api, message):
    answer = api.post("/runs", {"input": {"messages": [message]}, "output": "x"})
    assert answer.status_code == 422
    assert answer.json()["detail"][0]["loc"][:4] == ["body", "payload", "input", "messages"]


@pytest.mark.worker
def test_a_worker_judges_the_trajectory_and_score_answers_with_evidence(
    worker, fake_judge, api, trajectory_rubric
):
    answer = api.post(
        "/score",
        {
            **SUPPORT_RUN,
            "criteria": [{"description": 'Called the refund tool ("tool call refund")'}],
            "judge_view": "trajectory",
            "timeout": 60,
        },
    )
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["status"] == "succeeded" and body["passed"] is True
    assert body["verdicts"][0]["evidence"] == [3]
    run_id = body["run_id"]
    evaluation = wait_for(
        lambda: Evaluation.objects.filter(run_id=run_id, status=Status.SUCCEEDED).first(),
        timeout=30,
        message="the evaluation",
    )
    assert evaluation.judge_view == "trajectory"


def test_judge_view_without_inline_criteria_is_a_422_naming_it(api, trajectory_rubric):
    answer = api.post(
        "/score", {**SUPPORT_RUN, "rubric": trajectory_rubric.slug, "judge_view": "final"}
    )
    assert answer.status_code == 422
    (error,) = answer.json()["detail"]
    assert error["loc"][-1] == "judge_view" and "inline criteria" in error["msg"]
