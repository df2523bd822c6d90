"""Comparisons (two sides on the same runs) and the publishing gate, judged in-process by the
fake judge: it says "satisfied" iff every quoted phrase of a criterion occurs in the output."""

from __future__ import annotations

from typing import Any

import pytest

from evalsite.errors import Conflict
from reviews.models import GateState
from reviews.selectors.compare import comparison_report, comparison_report_json
from reviews.services import override_create, review_confirm
from reviews.services.compare import SampleIn, SideIn, comparison_start
from reviews.services.comparisons import ComparisonValidationError
from reviews.services.errors import ReviewValidationError
from reviews.services.gate import GateRefused, OwnersOnly, gate_set, publish_request
from rubrics.drafts import draft_create
from rubrics.models import RubricVersion
from runs.models import AgentRun, Evaluation

from .conftest import FAILING, PASSING, judge_pending

# c2 reworded (key kept): "Your refund was sent today." now satisfies it.
DRAFT = [
    {"key": "c1", "description": 'Mentions "refund"', "required": True},
    {"key": "c2", "description": 'Mentions "sent"', "required": True},
    {"key": "c3", "description": 'Says "thanks"', "required": False},
]


@pytest.fixture
def labelled(judged_run, reviewer) -> tuple[list[Any], list[Any]]:
    """Three passing and three failing runs, every verdict confirmed by a reviewer."""
    # Distinct outputs: identical texts would share verdict keys and be judged once.
    passing = [judged_run(output=f"{PASSING} (#{i})") for i in range(3)]
    failing = [judged_run(output=f"{FAILING} (#{i})") for i in range(3)]
    for run in passing + failing:
        for key in ("c1", "c2", "c3"):
            review_confirm(run=run, criterion_key=key, reviewer=reviewer)
    return passing, failing


def _compare(team, rubric, **kwargs: Any):
    kwargs.setdefault("b", SideIn(draft={"criteria": DRAFT}))
    kwargs.setdefault("sample", SampleIn(kind="labelled"))
    comparison, estimate, created = comparison_start(team=team, rubric=rubric, a=SideIn(), **kwargs)
    return comparison, estimate


def test_a_draft_compared_with_the_current_version_judges_only_the_edited_criterion(
    team, rubric, labelled
):
    passing, failing = labelled
    comparison, estimate = _compare(team, rubric)
    # Side a is the current version: every verdict is stored already. Side b reuses c1, c3.
    assert estimate["a"]["criterion_judgements"] == 0
    assert estimate["b"]["criterion_judgements"] == 6
    assert estimate["b"]["criteria_reused"] == 12
    assert judge_pending() == 12
    side_b = Evaluation.objects.filter(batch=comparison.batch_b)
    assert sum(e.criteria_judged for e in side_b) == 6
    assert sum(e.judge_calls for e in Evaluation.objects.filter(batch=comparison.batch_a)) == 0
    report = comparison_report(comparison=comparison)
    c2 = next(row for row in report.criteria if row.criterion_id == "c2")
    assert sorted(c2.fail_to_pass, key=str) == sorted((r.pk for r in failing), key=str)
    assert c2.pass_to_fail == [] and c2.reworded
    assert (c2.rate_a, c2.rate_b) == (0.5, 1.0)
    # Humans agreed with the old verdicts, so the new wording disagrees on the failing runs.
    assert c2.agreement_a.agreement == 1.0 and c2.agreement_b.agreement == 0.5
    assert sorted(report.run_fail_to_pass, key=str) == sorted((r.pk for r in failing), key=str)
    assert report.done


def test_comparison_evaluations_never_become_current_nor_change_a_run(team, rubric, labelled):
    _, failing = labelled
    before = {r.pk: (r.passed, r.current_version_id, r.status) for r in failing}
    comparison, _ = _compare(team, rubric)
    judge_pending()
    assert (
        not Evaluation.objects.filter(batch__in=[comparison.batch_a, comparison.batch_b])
        .filter(is_current=True)
        .exists()
    )
    after = {
        r.pk: (r.passed, r.current_version_id, r.status)
        for r in AgentRun.objects.filter(pk__in=before)
    }
    assert after == before
    assert not RubricVersion.objects.get(pk=comparison.version_b_id).published
    rubric.refresh_from_db()
    assert rubric.current_version.number == 1


def test_a_version_compared_with_itself_is_refused(team, rubric, labelled):
    with pytest.raises(ComparisonValidationError) as err:
        _compare(team, rubric, b=SideIn(version=1))
    assert "itself" in err.value.errors["b"]


def test_the_same_draft_saved_twice_is_one_draft_and_the_idempotency_key_returns_it(
    team, rubric, labelled
):
    first, _ = _compare(team, rubric, idempotency_key="k1")
    again, _ = _compare(team, rubric, idempotency_key="k1")
    assert again.pk == first.pk
    with pytest.raises(Conflict):
        _compare(team, rubric, idempotency_key="k1", sample=SampleIn(kind="latest", n=3))


def test_bad_samples_name_the_field(team, rubric, labelled):
    for sample, field in [
        (SampleIn(kind="nope"), "sample.kind"),
        (SampleIn(kind="latest", n=0), "sample.n"),
        (SampleIn(kind="golden"), "sample"),
    ]:
        with pytest.raises(ComparisonValidationError) as err:
            _compare(team, rubric, sample=sample)
        assert field in err.value.errors


def test_the_report_json_carries_flips_and_both_sides(team, rubric, labelled):
    comparison, _ = _compare(team, rubric)
    judge_pending()
    body = comparison_report_json(comparison_report(comparison=comparison))
    c2 = next(c for c in body["criteria"] if c["criterion_id"] == "c2")
    assert c2["fail_to_pass"] == 3 and c2["human_b"]["agreement"] == 0.5
    assert body["b"]["draft"] is True and body["a"]["version"] == 1


# --- The gate ---------------------------------------------------------------------------------


def test_a_gate_on_a_rubric_without_labels_is_refused_saying_how_to_label(rubric):
    with pytest.raises(ReviewValidationError) as err:
        gate_set(rubric=rubric, min_agreement=0.8)
    assert "review queue" in err.value.errors["gate"]


def test_gate_bounds_are_checked_per_field(rubric, labelled):
    with pytest.raises(ReviewValidationError) as err:
        gate_set(rubric=rubric, min_agreement=1.5, min_kappa="x")
    assert set(err.value.errors) == {"min_agreement", "min_kappa"}


def test_without_a_gate_a_draft_is_published_at_once(team, rubric):
    draft, created = draft_create(rubric=rubric, criteria=DRAFT)
    assert created and not draft.published
    outcome = publish_request(team=team, rubric=rubric, version=draft)
    assert outcome.state == "published"
    rubric.refresh_from_db()
    assert rubric.current_version_id == draft.pk


def test_the_gate_blocks_a_draft_that_agrees_less_and_an_owner_may_publish_anyway(
    team, rubric, labelled
):
    gate_set(rubric=rubric, min_agreement=0.9)
    draft, _ = draft_create(rubric=rubric, criteria=DRAFT)
    outcome = publish_request(team=team, rubric=rubric, version=draft)
    assert outcome.state == GateState.CHECKING
    judge_pending()  # in-process: no batch hook ran, the next request settles it
    with pytest.raises(GateRefused) as err:
        publish_request(team=team, rubric=rubric, version=draft)
    assert err.value.status == 409
    failing = err.value.extra["comparison"]["gate_result"]["failing"]
    assert [f["criterion_id"] for f in failing] == ["c2"]
    rubric.refresh_from_db()
    assert rubric.current_version.number == 1
    with pytest.raises(OwnersOnly):
        publish_request(team=team, rubric=rubric, version=draft, override_reason="ship it")
    outcome = publish_request(
        team=team, rubric=rubric, version=draft, override_reason="ship it",
        actor_name="olive", is_owner=True,
    )  # fmt: skip
    assert outcome.state == "published"
    draft.refresh_from_db()
    assert draft.gate_note == "published over the gate by olive: ship it"


def test_the_gate_publishes_a_draft_that_agrees_as_well(team, rubric, labelled, reviewer):
    gate_set(rubric=rubric, min_agreement=0.9, max_drop=0.0)
    same_meaning = [dict(c) for c in DRAFT]
    same_meaning[1]["description"] = 'Gives the "order number" (digits)'
    draft, _ = draft_create(rubric=rubric, criteria=same_meaning)
    assert publish_request(team=team, rubric=rubric, version=draft).state == "checking"
    judge_pending()
    outcome = publish_request(team=team, rubric=rubric, version=draft)
    assert outcome.state == "published"
    rubric.refresh_from_db()
    assert rubric.current_version_id == draft.pk
    assert "passed" in RubricVersion.objects.get(pk=draft.pk).gate_note


def test_a_human_disagreement_makes_the_draft_the_better_side(team, rubric, labelled, reviewer):
    """Reviewers who overrode c2 on the failing runs (the order number is implied) agree with
    the draft: its agreement rises and the gate passes."""
    _, failing = labelled
    for run in failing:
        override_create(
            run=run, criterion_key="c2", satisfied=True, note="implied", reviewer=reviewer
        )
    gate_set(rubric=rubric, min_agreement=0.9)
    draft, _ = draft_create(rubric=rubric, criteria=DRAFT)
    publish_request(team=team, rubric=rubric, version=draft)
    judge_pending()
    assert publish_request(team=team, rubric=rubric, version=draft).state == "published"
