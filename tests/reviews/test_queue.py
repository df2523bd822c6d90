"""The review queue: order, filters, progress and claims with a short lease."""

import threading

import pytest
from django.db import connection

from reviews.models import RunReview
from reviews.selectors import QueueFilters, review_queue, rubric_agreement
from reviews.services import claim_next, claim_take, override_create, review_confirm
from tests.conftest import queued_evaluation

from .conftest import FAILING


def review_all(run, reviewer):
    for key in ("c1", "c2", "c3"):
        review_confirm(run=run, criterion_key=key, reviewer=reviewer)


def test_two_reviewers_are_never_handed_the_same_run(judged_run, rubric, teammate, owner):
    runs = {judged_run().pk, judged_run().pk}

    first = claim_next(rubric=rubric, user=teammate)
    second = claim_next(rubric=rubric, user=owner)

    assert {first.pk, second.pk} == runs
    assert claim_take(run=first, rubric=rubric, user=owner) is False


def test_a_reviewer_with_every_run_claimed_by_others_gets_nothing(
    judged_run, rubric, teammate, owner
):
    judged_run()
    claim_next(rubric=rubric, user=teammate)

    assert claim_next(rubric=rubric, user=owner) is None


def test_an_expired_claim_is_handed_to_the_next_reviewer(
    judged_run, rubric, teammate, owner, settings
):
    settings.EVALSITE_REVIEW_CLAIM_SECONDS = 0  # every claim has already run out
    run = judged_run()
    assert claim_next(rubric=rubric, user=teammate).pk == run.pk

    assert claim_next(rubric=rubric, user=owner).pk == run.pk
    assert RunReview.objects.get(run=run).claimed_by == owner


def test_next_releases_the_current_claim_and_skips_the_run_being_left(
    judged_run, rubric, teammate, owner
):
    older, newer = judged_run(), judged_run()
    assert claim_next(rubric=rubric, user=teammate).pk == newer.pk

    moved = claim_next(rubric=rubric, user=teammate, skip=newer.pk)

    assert moved.pk == older.pk
    assert claim_next(rubric=rubric, user=owner).pk == newer.pk  # released for others


def test_reviewed_runs_are_not_handed_out_and_sink_to_the_end_of_the_queue(
    judged_run, rubric, teammate, reviewer
):
    older, newer = judged_run(), judged_run()
    review_all(newer, reviewer)

    page = review_queue(rubric=rubric, filters=QueueFilters())

    assert [i.run.pk for i in page.items] == [older.pk, newer.pk]
    assert (page.total, page.reviewed, page.remaining) == (2, 1, 1)
    assert page.items[1].reviewed_at is not None and page.items[1].labelled == 3
    assert claim_next(rubric=rubric, user=teammate).pk == older.pk
    assert claim_next(rubric=rubric, user=teammate, skip=older.pk) is None


def test_the_failing_filter_keeps_runs_whose_adjusted_result_failed(judged_run, rubric, reviewer):
    passing, failing, corrected = (
        judged_run(),
        judged_run(output=FAILING),
        judged_run(output=FAILING),
    )
    override_create(
        run=corrected, criterion_key="c2", satisfied=True, note="it did", reviewer=reviewer
    )

    page = review_queue(rubric=rubric, filters=QueueFilters(failing=True))

    assert [i.run.pk for i in page.items] == [failing.pk]
    assert passing.pk not in {i.run.pk for i in page.items}


def test_the_low_confidence_filter_keeps_runs_the_judge_gave_both_verdicts(judged_run, rubric):
    from runs.models import CriterionVerdict, Evaluation, Kind

    from .conftest import judge_pending

    steady, wavering = judged_run(), judged_run()
    queued_evaluation(
        run=wavering, kind=Kind.RUBRIC, rubric=rubric, version=rubric.current_version, force=True
    )
    judge_pending()
    # The fake judge is deterministic; a real one is not. Record that its first judgement of
    # c1 on this run said the opposite of the second.
    first = Evaluation.objects.filter(run=wavering, kind=Kind.RUBRIC).order_by("created_at").first()
    CriterionVerdict.objects.filter(evaluation=first, criterion_key="c1").update(satisfied=False)

    page = review_queue(rubric=rubric, filters=QueueFilters(low_confidence=True))

    assert [i.run.pk for i in page.items] == [wavering.pk]
    assert steady.pk not in {i.run.pk for i in page.items}


def test_the_poor_agreement_filter_keeps_runs_judged_on_flagged_criteria(
    judged_run, rubric, reviewer
):
    labelled, other = judged_run(), judged_run(output="Order number 5, thanks.")
    override_create(
        run=labelled, criterion_key="c1", satisfied=False, note="wrong refund", reviewer=reviewer
    )
    flagged = [
        c.criterion_id
        for c in rubric_agreement(rubric=rubric, version=rubric.current_version).flagged
    ]
    assert flagged == ["c1"]

    page = review_queue(
        rubric=rubric, filters=QueueFilters(poor_agreement=True), flagged_keys=flagged
    )

    assert {i.run.pk for i in page.items} == {labelled.pk, other.pk}
    none = review_queue(rubric=rubric, filters=QueueFilters(poor_agreement=True), flagged_keys=[])
    assert none.total == 0


def test_the_queue_shows_who_holds_a_claim(judged_run, rubric, teammate):
    judged_run()
    claim_next(rubric=rubric, user=teammate)

    page = review_queue(rubric=rubric, filters=QueueFilters())

    assert page.items[0].claimed_by == "teo"


@pytest.mark.django_db(transaction=True)
def test_reviewers_claiming_at_the_same_moment_each_get_a_different_run(
    make_user, team, make_rubric, make_run, fake_judge
):
    from teams.services import membership_set

    from .conftest import CRITERIA, judge_pending

    rubric = make_rubric(criteria=CRITERIA, alignment_mode="off")
    for _ in range(4):
        make_run(rubric=rubric.slug)
    judge_pending()
    users = [make_user(f"reviewer{i}") for i in range(4)]
    for user in users:
        membership_set(team=team, user=user, role="editor")
    barrier, claimed, errors = threading.Barrier(len(users)), [], []

    def claim(user):
        try:
            barrier.wait(timeout=10)
            run = claim_next(rubric=rubric, user=user)
            claimed.append(run.pk if run else None)
        except Exception as exc:  # reported below, not swallowed
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=claim, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)

    assert not errors, errors
    assert len(claimed) == 4 and None not in claimed and len(set(claimed)) == 4
