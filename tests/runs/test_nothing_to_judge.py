"""Nothing to judge is not a success: refused at ingest where it can be, else its own status."""

from __future__ import annotations

import pytest

from judging.services.execute import evaluation_execute
from runs.models import AgentRun, Kind, Status
from runs.services.evaluations import evaluation_build
from tests.api_client import field_locs
from tests.conftest import run_payload

pytestmark = pytest.mark.django_db


def test_a_run_naming_a_rubric_without_criteria_or_alignment_is_a_422_on_rubric(
    api, team, make_rubric
):
    empty = make_rubric(name="Empty", criteria=[])

    answer = api.post("/runs", run_payload(rubric=empty.slug))

    assert ["body", "payload", "rubric"] in field_locs(answer)
    assert "nothing to judge" in answer.content.decode()
    assert not AgentRun.objects.filter(team=team).exists()


def test_a_request_context_naming_an_empty_rubric_is_a_422_on_request_context_rubric(
    api, team, make_rubric
):
    empty = make_rubric(name="Empty", criteria=[])

    answer = api.post("/runs", run_payload(request_context={"rubric": empty.slug}))

    assert ["body", "payload", "request_context", "rubric"] in field_locs(answer)
    assert not AgentRun.objects.filter(team=team).exists()


def test_bulk_names_the_item_whose_rubric_has_nothing_to_judge_and_stores_nothing(
    api, team, make_rubric
):
    good, empty = make_rubric(), make_rubric(name="Empty", criteria=[])

    answer = api.post(
        "/runs/bulk", {"runs": [run_payload(rubric=good.slug), run_payload(rubric=empty.slug)]}
    )

    assert answer.status_code == 422, answer.content
    errors = answer.json()["extra"]["errors"]
    assert [(e["index"], e["field"]) for e in errors] == [(1, "rubric")]
    assert not AgentRun.objects.filter(team=team).exists()


def test_a_rubric_without_criteria_but_with_alignment_still_judges(api, make_rubric):
    aligned = make_rubric(name="Aligned", criteria=[], alignment_mode="user")

    answer = api.post("/runs", run_payload(rubric=aligned.slug))

    assert answer.status_code == 201, answer.content
    assert [e["kind"] for e in answer.json()["evaluations"]] == ["alignment"]


def test_an_evaluation_that_finds_no_criteria_anywhere_ends_nothing_to_judge_not_passed(
    fake_judge, team, make_rubric, make_run
):
    empty = make_rubric(name="Empty", criteria=[])
    run = make_run()
    assert run.status == Status.NOTHING_TO_JUDGE
    # What a path that cannot refuse leaves behind (e.g. a re-score of a rubric emptied since):
    # a rubric evaluation with no version and no criteria of its own.
    evaluation = evaluation_build(run=run, kind=Kind.RUBRIC, rubric=empty)
    evaluation.save()

    assert evaluation_execute(evaluation_id=str(evaluation.id)).status == "succeeded"

    evaluation.refresh_from_db()
    run.refresh_from_db()
    assert evaluation.status == Status.NOTHING_TO_JUDGE
    assert (evaluation.passed, evaluation.score, evaluation.judge_calls) == (None, None, 0)
    assert run.status == Status.NOTHING_TO_JUDGE and run.passed is None
    assert fake_judge.stats()["completions"] == 0


@pytest.mark.parametrize("text", ["   \n# h\n", "", "# only a heading", "\n\n  - \n"])
def test_blank_criteria_text_is_a_422_on_criteria(api, make_rubric, text):
    rubric = make_rubric()

    created = api.post("/rubrics", {"name": "Blank", "criteria": text})
    replaced = api.put(f"/rubrics/{rubric.slug}/criteria", {"criteria": text})

    assert ["body", "payload", "criteria"] in field_locs(created)
    assert ["body", "payload", "criteria"] in field_locs(replaced)
    assert api.get("/rubrics/blank").status_code == 404
