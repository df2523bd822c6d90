"""`passed` is null whenever the status that goes with it is failed: a rubric that passed does
not make a run pass while its alignment evaluation failed (docs/api.md)."""

from __future__ import annotations

from runs.models import Evaluation
from runs.schemas import score_out
from runs.selectors import evaluations_scored
from tests.conftest import run_payload
from tests.page_helpers import judge_pending

PASSING = "Your refund for order number 1234 was sent today, thanks for waiting."
# The fake judge answers alignment scores of 5 (invalid: the evaluation fails for good) and
# rubric verdicts as usual.
ALIGNMENT_FAILS = PASSING + " [[judge:out_of_range]]"


def judged(api, rubric, output: str, external_id: str) -> dict:
    created = api.post(
        "/runs", run_payload(rubric=rubric.slug, output=output, external_id=external_id)
    ).json()
    judge_pending(Evaluation.objects.get(pk=created["evaluations"][0]["id"]).run)
    return created


def test_a_run_whose_alignment_failed_answers_passed_null_though_its_rubric_passed(
    api, fake_judge, make_rubric
):
    rubric = make_rubric(alignment_mode="user")
    created = judged(api, rubric, ALIGNMENT_FAILS, "half")

    body = api.get(f"/runs/{created['id']}").json()

    assert (body["status"], body["passed"]) == ("failed", None)
    kinds = {e["kind"]: e for e in body["evaluations"]}
    assert (kinds["rubric"]["status"], kinds["rubric"]["passed"]) == ("succeeded", True)
    assert kinds["alignment"]["status"] == "failed" and kinds["alignment"]["error"]


def test_the_runs_list_answers_and_filters_passed_by_the_same_rule(api, fake_judge, make_rubric):
    rubric = make_rubric(alignment_mode="user")
    judged(api, rubric, ALIGNMENT_FAILS, "half")
    judged(api, rubric, PASSING, "whole")

    items = {i["external_id"]: i for i in api.get("/runs").json()["items"]}
    assert (items["half"]["status"], items["half"]["passed"]) == ("failed", None)
    assert (items["whole"]["status"], items["whole"]["passed"]) == ("succeeded", True)
    passing = [i["external_id"] for i in api.get("/runs", passed="true").json()["items"]]
    assert passing == ["whole"]
    assert api.get("/runs", passed="false").json()["items"] == []


def test_a_score_answer_with_a_failed_evaluation_has_passed_and_score_null(
    api, fake_judge, make_rubric
):
    rubric = make_rubric(alignment_mode="user")
    created = judged(api, rubric, ALIGNMENT_FAILS, "half")
    evaluations = list(Evaluation.objects.filter(run_id=created["id"]))

    answer = score_out(evaluations[0].run, evaluations_scored(ids=[e.id for e in evaluations]))

    assert (answer["status"], answer["passed"]) == ("failed", None)
    # The rubric scored 1.0, but a score of the scale would read as a pass: no result at all.
    assert answer["error"] and answer["score"] is None


def test_a_score_answer_is_read_in_one_query_per_kind_of_result_and_none_more(
    api, fake_judge, make_rubric, django_assert_num_queries
):
    """What POST /api/score answers is read with the evaluations, then the rubric verdicts and
    the alignment rows; serialising it reads nothing more (no deferred field left out)."""
    rubric = make_rubric(alignment_mode="user")
    created = judged(api, rubric, PASSING, "counted")
    ids = list(Evaluation.objects.filter(run_id=created["id"]).values_list("id", flat=True))
    run = Evaluation.objects.select_related("run").get(pk=ids[0]).run

    with django_assert_num_queries(3):
        answer = score_out(run, evaluations_scored(ids=ids))
    assert answer["verdicts"] and answer["alignment"]["user"] is not None
    with django_assert_num_queries(2):
        score_out(run, evaluations_scored(ids=[answer["evaluation_id"]]))
