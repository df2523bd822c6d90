"""Review fixtures: runs judged in-process by the fake judge, and reviewers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from judging.services.execute import evaluation_execute
from reviews.services import Reviewer
from runs.models import Evaluation, Status
from tests.conftest import SUPPORT_CRITERIA

# The fake judge says "satisfied" iff every quoted phrase occurs in the output. With these
# criteria the default run output ("Your refund for order number 1234 was sent today,
# thanks for waiting.") satisfies all three.
CRITERIA = SUPPORT_CRITERIA
PASSING = "Your refund for order number 1234 was sent today, thanks for waiting."
FAILING = "Your refund was sent today."  # c2 (required) and c3 fail


def judge_pending() -> int:
    """Run every queued evaluation in this process (real engine, fake judge over HTTP)."""
    done = 0
    for evaluation_id in Evaluation.objects.filter(status=Status.QUEUED).values_list(
        "id", flat=True
    ):
        assert evaluation_execute(evaluation_id=str(evaluation_id)).status == "succeeded"
        done += 1
    return done


@pytest.fixture
def rubric(make_rubric, fake_judge):
    return make_rubric(criteria=CRITERIA, alignment_mode="off")


@pytest.fixture
def judged_run(make_run, rubric) -> Callable[..., Any]:
    """A run of ``rubric``, judged: ``judged_run(output=FAILING)`` fails c2 and c3."""

    def make(**overrides: Any):
        overrides.setdefault("output", PASSING)
        run = make_run(rubric=rubric.slug, **overrides)
        judge_pending()
        run.refresh_from_db()
        return run

    return make


@pytest.fixture
def reviewer(teammate) -> Reviewer:
    return Reviewer(user=teammate)


@pytest.fixture
def other_reviewer(owner) -> Reviewer:
    return Reviewer(user=owner)
