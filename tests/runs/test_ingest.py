"""Ingest: one transaction, idempotent on external_id, evaluations queued for the rubric."""

import pytest

from runs.models import AgentRun, Evaluation, Status
from runs.payloads import RunPayload
from runs.services import RunConflict, RunTooLarge, RunValidationError, run_ingest
from tests.conftest import run_payload


def ingest(team, **overrides):
    return run_ingest(team=team, payload=RunPayload.model_validate(run_payload(**overrides)))


def test_a_run_naming_a_rubric_is_stored_with_a_queued_evaluation_of_its_current_version(
    team, make_rubric
):
    rubric = make_rubric()

    run, created = ingest(team, rubric=rubric.slug)

    assert created
    [evaluation] = Evaluation.objects.filter(run=run)
    assert evaluation.status == Status.QUEUED and evaluation.kind == "rubric"
    assert evaluation.rubric_version == rubric.current_version
    assert run.status == Status.QUEUED
    assert run.task_text == "Where is my refund for order 1234?"
    assert run.system_text == "You are a polite support agent."
    assert run.output_text.startswith("Your refund")


def test_alignment_mode_adds_an_alignment_evaluation(team, make_rubric):
    rubric = make_rubric()

    run, _ = ingest(team, rubric=str(rubric.id), alignment="both")

    assert sorted(Evaluation.objects.filter(run=run).values_list("kind", flat=True)) == [
        "alignment",
        "rubric",
    ]


def test_criteria_in_the_request_context_are_judged_when_no_rubric_is_named(team):
    run, _ = ingest(team, request_context={"rubric": '- Mentions "refund"\n- [optional] Polite'})

    [evaluation] = Evaluation.objects.filter(run=run)
    assert evaluation.inline_criteria == [
        {"description": 'Mentions "refund"', "required": True},
        {"description": "Polite", "required": False},
    ]


def test_a_request_context_rubric_naming_a_stored_slug_uses_that_rubric(team, make_rubric):
    rubric = make_rubric()

    run, _ = ingest(team, request_context={"rubric": rubric.slug})

    assert Evaluation.objects.get(run=run).rubric_version == rubric.current_version


def test_a_run_without_rubric_or_criteria_is_stored_as_nothing_to_judge(team):
    run, _ = ingest(team)

    assert not Evaluation.objects.filter(run=run).exists()
    assert run.status == Status.NOTHING_TO_JUDGE


def test_the_same_external_id_and_payload_returns_the_stored_run(team, make_rubric):
    rubric = make_rubric()
    first, created_first = ingest(team, external_id="r-1", rubric=rubric.slug)

    again, created_again = ingest(team, external_id="r-1", rubric=rubric.slug)

    assert created_first and not created_again and again.id == first.id
    assert Evaluation.objects.filter(run=first).count() == 1


def test_the_same_external_id_with_other_content_is_a_conflict(team):
    ingest(team, external_id="r-1")

    with pytest.raises(RunConflict):
        ingest(team, external_id="r-1", output="something else")
    assert AgentRun.objects.filter(team=team).count() == 1


def test_external_ids_are_scoped_to_a_team(team, other_team):
    mine, _ = ingest(team, external_id="r-1")
    theirs, created = ingest(other_team, external_id="r-1", output="other")

    assert created and mine.id != theirs.id


def test_an_unknown_or_foreign_rubric_is_a_validation_error_naming_the_field(
    team, other_team, make_rubric
):
    foreign = make_rubric(team=other_team)

    for ref in ("nope", foreign.slug, str(foreign.id)):
        with pytest.raises(RunValidationError) as caught:
            ingest(team, rubric=ref)
        assert "rubric" in caught.value.errors
    assert not AgentRun.objects.exists()


def test_a_run_over_the_size_limit_is_refused(team, settings):
    settings.EVALSITE_MAX_RUN_BYTES = 1000

    with pytest.raises(RunTooLarge):
        ingest(team, output="x" * 2000)
    assert not AgentRun.objects.exists()
