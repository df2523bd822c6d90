"""Several reviewers: each keeps a verdict of their own, the label is their majority, a tie is
disputed, reverts touch one reviewer's verdict, the second-opinion queue, the data migration."""

import importlib

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reviews.models import ReviewerLabel, RunReview, VerdictLabel, VerdictOverride
from reviews.selectors import QueueFilters, review_queue, run_review_get
from reviews.services import (
    Reviewer,
    claim_next,
    override_create,
    override_revert,
    review_confirm,
)
from teams.services import api_key_create
from tests.conftest import member

from .conftest import FAILING

SECOND = QueueFilters(second_opinion=True)


@pytest.fixture
def third_reviewer(make_user, team) -> Reviewer:
    return Reviewer(user=member(make_user, team, "tara", "editor"))


def say(run, reviewer, satisfied: bool, key: str = "c2"):
    return override_create(
        run=run, criterion_key=key, satisfied=satisfied, note=f"{reviewer.name} says so",
        reviewer=reviewer,
    ).row  # fmt: skip


def test_each_reviewer_keeps_a_verdict_and_the_label_is_the_majority(
    judged_run, reviewer, other_reviewer, third_reviewer
):
    run = judged_run(output=FAILING)  # the judge fails c2, a required criterion
    say(run, reviewer, True)
    say(run, other_reviewer, False)
    say(run, third_reviewer, True)

    votes = {v.reviewer_key: v.satisfied for v in ReviewerLabel.objects.filter(run=run)}
    assert sorted(votes.values()) == [False, True, True] and len(votes) == 3
    label = VerdictLabel.objects.get(run=run, criterion_key="c2")
    assert label.satisfied is True and label.note == "tara says so"
    run.refresh_from_db()
    assert run.passed is True  # the human-adjusted result follows the majority
    review = RunReview.objects.get(run=run)
    assert (review.reviewers, review.disputed, review.labelled) == (3, 0, 1)
    assert VerdictOverride.objects.filter(run=run).count() == 3


def test_a_tie_is_disputed_counts_as_unlabelled_and_leaves_the_judges_verdict(
    judged_run, reviewer, other_reviewer
):
    run = judged_run(output=FAILING)
    for key in ("c1", "c2", "c3"):
        review_confirm(run=run, criterion_key=key, reviewer=reviewer)
    assert RunReview.objects.get(run=run).reviewed_at is not None

    say(run, other_reviewer, True)  # c2: the judge and teo say no, olivia says yes

    assert not VerdictLabel.objects.filter(run=run, criterion_key="c2").exists()
    review = RunReview.objects.get(run=run)
    assert (review.disputed, review.labelled, review.reviewers) == (1, 2, 2)
    assert review.reviewed_at is None
    run.refresh_from_db()
    assert run.passed is False
    row = next(v for v in run_review_get(run=run).verdicts if v.verdict.key == "c2")
    assert row.verdict.disputed and row.verdict.human is None
    assert [(b.reviewer, b.satisfied) for b in row.votes] == [("teo", False), ("olivia", True)]


def test_a_reviewer_changing_their_mind_replaces_only_their_own_verdict(
    judged_run, reviewer, other_reviewer
):
    run = judged_run(output=FAILING)
    say(run, reviewer, True)
    say(run, other_reviewer, True)
    say(run, reviewer, False)  # now 1–1

    assert ReviewerLabel.objects.filter(run=run).count() == 2
    assert not VerdictLabel.objects.filter(run=run).exists()
    rows = list(VerdictOverride.objects.filter(run=run).order_by("created_at"))
    assert [(r.actor_name, r.from_satisfied, r.to_satisfied) for r in rows] == [
        ("teo", None, True), ("olivia", None, True), ("teo", True, False),
    ]  # fmt: skip
    assert rows[2].previous_id == rows[0].pk


def test_a_revert_undoes_one_reviewers_verdict_and_the_majority_is_taken_again(
    judged_run, reviewer, other_reviewer, third_reviewer
):
    run = judged_run(output=FAILING)
    say(run, reviewer, True)
    say(run, other_reviewer, False)
    decisive = say(run, third_reviewer, False)
    assert VerdictLabel.objects.get(run=run).satisfied is False

    revert = override_revert(row=decisive, reviewer=reviewer).row  # teo reverts tara's verdict

    assert revert.reviewer_key == decisive.reviewer_key and revert.actor_name == "teo"
    assert not ReviewerLabel.objects.filter(run=run, reviewer_key=decisive.reviewer_key).exists()
    assert not VerdictLabel.objects.filter(run=run).exists()  # 1–1 again: disputed
    assert RunReview.objects.get(run=run).disputed == 1
    assert VerdictOverride.objects.filter(run=run).count() == 4


def test_second_opinions_go_to_someone_who_has_not_labelled_the_run(
    judged_run, rubric, teammate, owner, reviewer, other_reviewer
):
    labelled = judged_run()
    judged_run()  # nobody has labelled this one: not a second-opinion run
    review_confirm(run=labelled, criterion_key="c1", reviewer=reviewer)

    assert claim_next(rubric=rubric, user=teammate, filters=SECOND) is None
    assert claim_next(rubric=rubric, user=owner, filters=SECOND).pk == labelled.pk

    review_confirm(run=labelled, criterion_key="c1", reviewer=other_reviewer)
    # Two reviewers agree on it now: it no longer needs a second opinion.
    assert RunReview.objects.get(run=labelled).reviewers == 2
    assert claim_next(rubric=rubric, user=owner, filters=SECOND) is None


def test_a_disputed_run_goes_to_a_third_reviewer_and_never_to_the_two_who_dispute_it(
    judged_run, rubric, teammate, owner, reviewer, other_reviewer, third_reviewer
):
    run = judged_run(output=FAILING)
    say(run, reviewer, True)
    say(run, other_reviewer, False)
    assert RunReview.objects.get(run=run).disputed == 1

    for user in (teammate, owner):
        assert claim_next(rubric=rubric, user=user, filters=SECOND) is None
        # Nor does the plain queue hand a disputed run back to one of its reviewers.
        assert claim_next(rubric=rubric, user=user) is None
    assert claim_next(rubric=rubric, user=third_reviewer.user, filters=SECOND).pk == run.pk

    say(run, third_reviewer, True)
    review = RunReview.objects.get(run=run)
    assert (review.disputed, review.reviewers) == (0, 3)
    assert VerdictLabel.objects.get(run=run).satisfied is True


def test_the_second_opinion_filter_lists_runs_with_one_reviewer_or_a_dispute(
    judged_run, rubric, reviewer, other_reviewer
):
    one, disputed, agreed, _untouched = judged_run(), judged_run(), judged_run(), judged_run()
    review_confirm(run=one, criterion_key="c1", reviewer=reviewer)
    say(disputed, reviewer, True)
    say(disputed, other_reviewer, False)
    for r in (reviewer, other_reviewer):
        review_confirm(run=agreed, criterion_key="c1", reviewer=r)

    page = review_queue(rubric=rubric, filters=SECOND)

    assert {item.run.pk for item in page.items} == {one.pk, disputed.pk}
    assert {item.run.pk: item.disputed for item in page.items} == {one.pk: 0, disputed.pk: 1}


def test_the_data_migration_turns_each_single_label_into_its_reviewers_verdict(
    judged_run, reviewer, other_reviewer, team
):

    key, _ = api_key_create(team=team, name="labeller")
    run = judged_run(output=FAILING)
    review_confirm(run=run, criterion_key="c1", reviewer=reviewer)
    first = say(run, other_reviewer, True, key="c2")
    override_revert(row=say(run, other_reviewer, False, key="c2"), reviewer=reviewer)
    say(run, Reviewer(api_key=key), False, key="c3")
    before = {
        (lb.criterion_key, lb.satisfied, lb.source_id, lb.note)
        for lb in VerdictLabel.objects.filter(run=run)
    }
    # The schema as it was before several reviewers: no per-reviewer verdicts, no keys.
    ReviewerLabel.objects.all().delete()
    VerdictOverride.objects.update(reviewer_key="")
    RunReview.objects.update(reviewers=0)

    importlib.import_module("reviews.migrations.0002_several_reviewers").forwards(apps, None)

    after = {
        (lb.criterion_key, lb.satisfied, lb.source_id, lb.note)
        for lb in VerdictLabel.objects.filter(run=run)
    }
    assert after == before and len(before) == 3
    votes = {v.criterion_key: v for v in ReviewerLabel.objects.filter(run=run)}
    assert votes["c1"].reviewer_key == f"user:{reviewer.user.pk}"
    assert votes["c2"].reviewer_key == f"user:{other_reviewer.user.pk}"
    assert votes["c2"].source_id == first.pk and votes["c2"].satisfied is True
    assert votes["c3"].reviewer_key == f"key:{key.pk}"
    revert = VerdictOverride.objects.get(run=run, action="revert")
    assert revert.reviewer_key == f"user:{other_reviewer.user.pk}"  # the reverted reviewer's
    assert RunReview.objects.get(run=run).reviewers == 3


@pytest.mark.parametrize("filters", [QueueFilters(), SECOND], ids=["plain", "second opinion"])
def test_handing_out_a_run_joins_each_runs_review_row_once(
    judged_run, rubric, owner, reviewer, filters
):
    review_confirm(run=judged_run(), criterion_key="c1", reviewer=reviewer)

    with CaptureQueriesContext(connection) as ctx:
        claim_next(rubric=rubric, user=owner, filters=filters)
        review_queue(rubric=rubric, filters=filters)

    reads = [q["sql"] for q in ctx.captured_queries if 'FROM "runs_agentrun"' in q["sql"]]
    assert reads and all(sql.count('JOIN "reviews_runreview"') <= 1 for sql in reads)
