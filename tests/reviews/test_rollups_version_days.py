"""Pass rates per rubric version and day (runs.models.rollups.VersionDayRollup): a run counts
on the version its result is from, moves when a re-score on a new version replaces that result,
counts only while it has a result, and the rebuild reproduces the rows."""

from __future__ import annotations

from django.core.management import call_command

from judging.services.rescore import RescoreScope, batch_create
from rubrics.services import rubric_set_criteria
from runs.models import VersionDayRollup
from runs.selectors.trends import rubric_trend
from tests.conftest import queued_evaluation

from .conftest import FAILING, PASSING, judge_pending
from .test_rollups import assert_rollups_agree, rollup_version_days


def series_counts(rubric) -> dict[int, tuple[int, int]]:
    """version number -> (runs, passed) summed over the trend's days."""
    return {
        s.version: (sum(p.runs for p in s.points), sum(p.passed for p in s.points))
        for s in rubric_trend(rubric=rubric)
    }


def test_a_rescore_on_a_new_version_moves_the_run_to_that_versions_series(rubric, make_run):
    first = rubric.current_version
    runs = [make_run(rubric=rubric.slug, output=out) for out in (PASSING, PASSING, FAILING)]
    judge_pending()
    assert series_counts(rubric) == {1: (3, 2)}

    rubric_set_criteria(rubric=rubric, criteria='- Says "thanks"')
    rubric.refresh_from_db()
    second = rubric.current_version
    queued_evaluation(run=runs[2], kind="rubric", rubric=rubric, version=second)
    judge_pending()  # the failing run re-scored on v2: still fails ("thanks" is missing)
    make_run(rubric=rubric.slug, output=PASSING)
    judge_pending()  # a new run judged on v2: passes

    assert series_counts(rubric) == {1: (2, 2), 2: (2, 1)}
    trend = rubric_trend(rubric=rubric)
    assert [s.version_id for s in trend] == [first.pk, second.pk]
    assert trend[0].took_over is None  # v1 has no predecessor
    assert trend[1].took_over == trend[1].points[0].day  # v2 was saved today
    assert_rollups_agree()

    kept = rollup_version_days()
    VersionDayRollup.objects.all().delete()
    call_command("rollups_rebuild", verbosity=0)
    assert rollup_version_days() == kept


def test_a_run_counts_on_a_version_once_judged_and_once_again_after_a_rescore(
    team, rubric, make_run
):
    run = make_run(rubric=rubric.slug, output=PASSING)
    assert series_counts(rubric) == {}  # queued: no result yet
    judge_pending()
    batch_create(team=team, rubric=rubric, scope=RescoreScope(runs=(run.pk,)))
    run.refresh_from_db()
    # Queued for a re-score, it keeps its stored result until the new one is written (the run
    # days count it the same way), then moves.
    assert run.status == "queued"
    assert series_counts(rubric) == {1: (1, 1)}
    assert_rollups_agree()
    judge_pending()
    assert series_counts(rubric) == {1: (1, 1)}
    assert_rollups_agree()


def test_another_teams_rubric_has_no_series_of_ours(rubric, make_run, other_team, make_rubric):
    make_run(rubric=rubric.slug, output=PASSING)
    judge_pending()
    theirs = make_rubric(team=other_team, name="Theirs", criteria='- Says "thanks"')
    make_run(team=other_team, rubric=theirs.slug, output=PASSING)
    judge_pending()
    assert series_counts(rubric) == {1: (1, 1)}
    assert series_counts(theirs) == {1: (1, 1)}
    assert {s.rubric_id for s in rubric_trend(rubric=theirs)} == {theirs.pk}
