"""Overrides: the run's result is recomputed from human labels, the judge's stays visible,
history is append-only and revertible, and re-scoring never reuses a human verdict."""

import pytest

from reviews.models import Action, AlignmentLabel, RunReview, VerdictLabel, VerdictOverride
from reviews.services import (
    ReviewConflict,
    Reviewer,
    ReviewValidationError,
    alignment_override_create,
    alignment_override_revert,
    golden_set_mark,
    override_create,
    override_revert,
    review_confirm,
)
from rubrics.services import rubric_set_criteria
from runs.models import AlignmentBreakdown, CriterionVerdict, Evaluation, Kind
from tests.conftest import queued_evaluation

from .conftest import FAILING, judge_pending


def current_evaluation(run) -> Evaluation:
    return Evaluation.objects.get(run=run, kind=Kind.RUBRIC, is_current=True)


def test_overriding_a_failed_required_verdict_makes_the_run_pass_and_keeps_the_judges_result(
    judged_run, reviewer
):
    run = judged_run(output=FAILING)  # c2 (required) and c3 fail
    assert run.passed is False and run.score == 0

    change = override_create(
        run=run,
        criterion_key="c2",
        satisfied=True,
        note="It gave the number as 'order 7'",
        reviewer=reviewer,
    )

    run.refresh_from_db()
    evaluation = current_evaluation(run)
    assert change.created and change.row.action == Action.OVERRIDE
    assert (run.passed, run.score) == (True, 1.0)
    assert (evaluation.passed, evaluation.score) == (False, 0.0)
    assert (
        CriterionVerdict.objects.get(evaluation=evaluation, criterion_key="c2").satisfied is False
    )


def test_a_human_failing_a_required_criterion_fails_a_passing_run(judged_run, reviewer):
    run = judged_run()
    assert run.passed is True

    override_create(
        run=run, criterion_key="c1", satisfied=False, note="Refund of what?", reviewer=reviewer
    )

    run.refresh_from_db()
    assert (run.passed, run.score) == (False, 0.0)


def test_an_optional_criterion_does_not_gate_while_a_required_one_exists(judged_run, reviewer):
    run = judged_run()

    override_create(
        run=run, criterion_key="c3", satisfied=False, note="No thanks said", reviewer=reviewer
    )

    run.refresh_from_db()
    assert run.passed is True


def test_with_no_required_criterion_every_criterion_gates_and_the_scale_applies(
    make_rubric, make_run, fake_judge, reviewer
):
    rubric = make_rubric(
        name="All optional",
        criteria=[
            {"description": 'Says "refund"', "required": False},
            {"description": 'Says "sorry"', "required": False},
        ],
        scale=5,
        alignment_mode="off",
    )
    run = make_run(rubric=rubric.slug, output="Refund sent.")
    judge_pending()
    run.refresh_from_db()
    assert (run.passed, run.score) == (False, 0.0)

    override_create(
        run=run,
        criterion_key="c2",
        satisfied=True,
        note="Apologised in other words",
        reviewer=reviewer,
    )

    run.refresh_from_db()
    assert (run.passed, run.score) == (True, 5.0)


def test_agreeing_with_the_judge_confirms_without_a_note(judged_run, reviewer):
    run = judged_run()

    change = review_confirm(run=run, criterion_key="c1", reviewer=reviewer)

    assert change.row.action == Action.CONFIRM and change.row.to_satisfied is True
    assert change.row.note == "" and change.row.actor_name == "teo"
    run.refresh_from_db()
    assert run.passed is True


def test_disagreeing_without_a_note_is_refused_naming_the_note(judged_run, reviewer):
    run = judged_run()

    with pytest.raises(ReviewValidationError) as raised:
        override_create(run=run, criterion_key="c1", satisfied=False, note="  ", reviewer=reviewer)

    assert set(raised.value.errors) == {"note"}
    assert not VerdictOverride.objects.exists()


def test_an_unknown_criterion_is_refused_naming_the_criterion(judged_run, reviewer):
    run = judged_run()

    with pytest.raises(ReviewValidationError) as raised:
        review_confirm(run=run, criterion_key="c9", reviewer=reviewer)

    assert set(raised.value.errors) == {"criterion_id"}


def test_a_run_without_a_judged_result_cannot_be_reviewed(make_run, rubric, reviewer):
    run = make_run(rubric=rubric.slug)  # queued, never judged

    with pytest.raises(ReviewConflict):
        review_confirm(run=run, criterion_key="c1", reviewer=reviewer)


def test_saying_again_what_the_label_says_writes_nothing(judged_run, reviewer):
    run = judged_run()
    first = override_create(
        run=run, criterion_key="c1", satisfied=False, note="Wrong refund", reviewer=reviewer
    )

    again = override_create(
        run=run, criterion_key="c1", satisfied=False, note="Wrong refund", reviewer=reviewer
    )

    assert not again.created and again.row.pk == first.row.pk
    assert VerdictOverride.objects.count() == 1


def test_history_is_append_only_and_a_revert_restores_the_label_before_the_change(
    judged_run, reviewer, other_reviewer
):
    run = judged_run()
    first = review_confirm(run=run, criterion_key="c1", reviewer=reviewer).row
    second = override_create(
        run=run,
        criterion_key="c1",
        satisfied=False,
        note="Actually no refund",
        reviewer=reviewer,
    ).row
    run.refresh_from_db()
    assert run.passed is False

    # Another reviewer may revert it: teo's verdict goes back to what it was.
    revert = override_revert(row=second, reviewer=other_reviewer).row

    run.refresh_from_db()
    assert run.passed is True
    rows = list(VerdictOverride.objects.order_by("created_at"))
    assert [r.action for r in rows] == ["confirm", "override", "revert"]
    assert (rows[1].from_satisfied, rows[1].to_satisfied, rows[1].actor_name) == (
        True,
        False,
        "teo",
    )
    assert rows[2].actor_name == "olivia"
    assert (revert.from_satisfied, revert.to_satisfied, revert.reverts_id) == (
        False,
        True,
        second.pk,
    )
    label = VerdictLabel.objects.get(run=run, criterion_key="c1")
    assert label.satisfied is True and label.source_id == first.pk


def test_a_replaced_change_cannot_be_reverted(judged_run, reviewer):
    run = judged_run()
    first = override_create(
        run=run, criterion_key="c1", satisfied=False, note="No", reviewer=reviewer
    ).row
    review_confirm(run=run, criterion_key="c1", reviewer=reviewer)

    with pytest.raises(ReviewConflict):
        override_revert(row=first, reviewer=reviewer)


def test_reverting_the_only_change_removes_the_label_and_the_run_shows_the_judges_result(
    judged_run, reviewer
):
    run = judged_run(output=FAILING)
    row = override_create(
        run=run, criterion_key="c2", satisfied=True, note="It did", reviewer=reviewer
    ).row
    run.refresh_from_db()
    assert run.passed is True

    override_revert(row=row, reviewer=reviewer)

    run.refresh_from_db()
    assert run.passed is False and run.score == 0
    assert not VerdictLabel.objects.exists()
    assert RunReview.objects.get(run=run).labelled == 0


def test_a_run_is_reviewed_once_every_criterion_is_labelled_and_only_then_can_be_golden(
    judged_run, reviewer
):
    run = judged_run()
    review_confirm(run=run, criterion_key="c1", reviewer=reviewer)
    review = RunReview.objects.get(run=run)
    assert review.labelled == 1 and review.reviewed_at is None
    with pytest.raises(ReviewConflict):
        golden_set_mark(run=run, rubric_id=run.rubric_id, golden=True)

    review_confirm(run=run, criterion_key="c2", reviewer=reviewer)
    override_create(
        run=run, criterion_key="c3", satisfied=False, note="Not thankful", reviewer=reviewer
    )

    review.refresh_from_db()
    assert review.reviewed_at is not None and (review.labelled, review.overridden) == (3, 1)
    assert golden_set_mark(run=run, rubric_id=run.rubric_id, golden=True).golden is True


def test_a_rescore_reuses_the_judges_verdict_never_the_humans_and_the_label_still_applies(
    judged_run, rubric, reviewer, fake_judge
):
    run = judged_run(output=FAILING)
    override_create(run=run, criterion_key="c2", satisfied=True, note="Gave it", reviewer=reviewer)
    calls = fake_judge.stats()["completions"]

    rescore = queued_evaluation(
        run=run, kind=Kind.RUBRIC, rubric=rubric, version=rubric.current_version
    )
    judge_pending()

    reused = CriterionVerdict.objects.get(evaluation=rescore, criterion_key="c2")
    assert reused.reused_from_id is not None and reused.satisfied is False
    assert fake_judge.stats()["completions"] == calls
    run.refresh_from_db()
    assert current_evaluation(run).pk == rescore.pk
    assert run.passed is True  # the label answers the same wording, so it still applies


def test_after_rewording_a_criterion_the_old_label_no_longer_applies(judged_run, rubric, reviewer):
    run = judged_run(output=FAILING)
    for key in ("c1", "c3"):
        review_confirm(run=run, criterion_key=key, reviewer=reviewer)
    override_create(run=run, criterion_key="c2", satisfied=True, note="Gave it", reviewer=reviewer)
    assert RunReview.objects.get(run=run).reviewed_at is not None
    version, _ = rubric_set_criteria(
        rubric=rubric,
        criteria=[
            {"key": "c1", "description": 'Mentions "refund"', "required": True},
            {"key": "c2", "description": 'Gives the "order id"', "required": True},
            {"key": "c3", "description": 'Says "thanks"', "required": False},
        ],
    )

    queued_evaluation(run=run, kind=Kind.RUBRIC, rubric=rubric, version=version)
    judge_pending()

    run.refresh_from_db()
    assert run.passed is False
    review = RunReview.objects.get(run=run)
    assert review.reviewed_at is None and review.labelled == 2


def test_overriding_an_alignment_dimension_recomputes_the_alignment_score(
    make_rubric, make_run, fake_judge, reviewer
):
    rubric = make_rubric(name="Aligned", alignment_mode="user")
    run = make_run(rubric=rubric.slug)
    judge_pending()
    run.refresh_from_db()
    evaluation = Evaluation.objects.get(run=run, kind=Kind.ALIGNMENT)
    user = AlignmentBreakdown.objects.get(evaluation=evaluation, perspective="user")
    judge_score = run.alignment_score

    row = alignment_override_create(
        run=run,
        perspective="user",
        dimension="intent",
        score=0.0,
        note="Missed the point",
        reviewer=reviewer,
    ).row

    run.refresh_from_db()
    expected = judge_score - user.intent_score * user.weights["intent"] * evaluation.scale
    assert run.alignment_score == pytest.approx(expected)
    evaluation.refresh_from_db()
    assert evaluation.score == judge_score
    alignment_override_revert(row=row, reviewer=reviewer)
    run.refresh_from_db()
    assert run.alignment_score == pytest.approx(judge_score)
    assert not AlignmentLabel.objects.exists()


def test_an_alignment_score_outside_zero_to_one_is_refused_naming_the_score(
    make_rubric, make_run, fake_judge, reviewer
):
    run = make_run(rubric=make_rubric(name="Aligned", alignment_mode="user").slug)
    judge_pending()

    with pytest.raises(ReviewValidationError) as raised:
        alignment_override_create(
            run=run, perspective="user", dimension="intent", score=1.5, note="x", reviewer=reviewer
        )

    assert set(raised.value.errors) == {"score"}


def test_an_api_key_is_named_in_the_history(judged_run, team):
    from teams.services import api_key_create

    key, _ = api_key_create(team=team, name="pipeline")
    run = judged_run()

    row = review_confirm(run=run, criterion_key="c1", reviewer=Reviewer(api_key=key)).row

    assert row.api_key_id == key.pk and "pipeline" in row.actor_name
