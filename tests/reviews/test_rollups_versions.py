"""Runs judged per rubric version (runs.models.rollups.VersionRollup): a run counts once per
version whether it is judged there by ingest, a re-score or a calibration's repeats, and
whether those results are written one by one or together."""

from __future__ import annotations

from judging.services.execute import evaluations_execute
from reviews.services import consistency_check
from rubrics.services import rubric_set_criteria
from runs.models import Evaluation, Kind, Status, VersionRollup
from tests.conftest import queued_evaluation

from .conftest import FAILING, PASSING, judge_pending
from .test_rollups import assert_rollups_agree


def runs_judged(version) -> int:
    row = VersionRollup.objects.filter(version_ref=version.pk).first()
    return row.runs_judged if row else 0


def test_a_run_judged_again_on_its_version_counts_once_and_on_a_new_version_counts_there(
    rubric, make_run
):
    first = rubric.current_version
    runs = [make_run(rubric=rubric.slug, output=out) for out in (PASSING, FAILING)]
    judge_pending()
    queued_evaluation(run=runs[0], kind=Kind.RUBRIC, rubric=rubric, version=first)
    judge_pending()
    assert runs_judged(first) == 2

    rubric_set_criteria(rubric=rubric, criteria='- Says "thanks"')
    rubric.refresh_from_db()
    queued_evaluation(run=runs[1], kind=Kind.RUBRIC, rubric=rubric, version=rubric.current_version)
    judge_pending()

    assert (runs_judged(first), runs_judged(rubric.current_version)) == (2, 1)
    assert_rollups_agree()


def test_calibration_repeats_written_together_count_their_run_once(rubric, make_run):
    version = rubric.current_version
    run = make_run(rubric=rubric.slug, output=PASSING)  # its own evaluation stays queued
    consistency_check(rubric=rubric, run_ids=[run.pk], repeats=3)
    repeats = Evaluation.objects.filter(run=run, calibration=True)

    outcomes = evaluations_execute(evaluation_ids=list(repeats.values_list("id", flat=True)))

    assert [o.status for o in outcomes] == ["succeeded"] * 3  # one write for all three
    assert runs_judged(version) == 1
    judge_pending()  # the run's own result, on the version that already counted it
    assert Evaluation.objects.filter(run=run, status=Status.SUCCEEDED).count() == 4
    assert runs_judged(version) == 1
    assert_rollups_agree()
