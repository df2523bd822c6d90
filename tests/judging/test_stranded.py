"""What a worker had in hand when its database went away is given back, by compare-and-set."""

from __future__ import annotations

import pytest
from django.db import OperationalError

from judging.services.execute import evaluations_claim
from judging.services.stranded import evaluations_hand_back_stranded, evaluations_in_hand
from runs.models import Evaluation, Status


def strand(ids: list[str], claim: bool) -> None:
    """A unit of work that claimed (or not) and then met a database that went away."""
    with pytest.raises(OperationalError), evaluations_in_hand(ids):
        if claim:
            evaluations_claim(ids)
        raise OperationalError("terminating connection due to administrator command")


def test_a_stranded_claim_is_queued_again_with_its_attempt_not_counted(db, make_rubric, make_run):
    evaluation = make_run(rubric=make_rubric().slug).evaluations.get()
    strand([str(evaluation.id)], claim=True)
    assert Evaluation.objects.get(id=evaluation.id).status == Status.RUNNING

    assert evaluations_hand_back_stranded() == 1
    evaluation.refresh_from_db()
    assert (evaluation.status, evaluation.attempts, evaluation.lease_token) == (
        Status.QUEUED,
        0,
        None,
    )
    assert evaluation.enqueued_at is not None  # sent again
    assert evaluations_hand_back_stranded() == 0  # once


def test_an_evaluation_claimed_by_another_worker_meanwhile_is_left_alone(db, make_rubric, make_run):
    evaluation = make_run(rubric=make_rubric().slug).evaluations.get()
    strand([str(evaluation.id)], claim=False)  # this worker never claimed it
    (other,) = evaluations_claim([str(evaluation.id)])  # another worker did
    assert other is not None

    assert evaluations_hand_back_stranded() == 0
    evaluation.refresh_from_db()
    assert (evaluation.status, evaluation.lease_token) == (Status.RUNNING, other.token)


def test_a_unit_that_ends_without_a_database_error_strands_nothing(db, make_rubric, make_run):
    evaluation = make_run(rubric=make_rubric().slug).evaluations.get()
    with evaluations_in_hand([str(evaluation.id)]):
        evaluations_claim([str(evaluation.id)])
    assert evaluations_hand_back_stranded() == 0
    assert Evaluation.objects.get(id=evaluation.id).status == Status.RUNNING
