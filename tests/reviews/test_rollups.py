"""Rollups (runs.models.rollups) agree with the raw runs and verdicts after a seeded random
sequence of ingests, judging, human overrides, reverts, re-scores and criteria edits, and the
rebuild command reproduces the incrementally maintained values."""

from __future__ import annotations

import contextlib
import random
from collections import Counter
from datetime import UTC
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.models import Count

from judging.services.rescore import RescoreScope, batch_cancel, batch_create
from reviews.models import VerdictOverride
from reviews.services import ReviewConflict, override_create, override_revert
from rubrics.services import rubric_set_criteria
from runs.models import (
    FINAL_STATUSES,
    AgentRun,
    CriterionDayRollup,
    CriterionVerdict,
    Evaluation,
    EvaluationDayRollup,
    Kind,
    RunDayRollup,
    Status,
    VersionDayRollup,
    VersionRollup,
)
from runs.models.rollups import NO_RUBRIC
from tests.conftest import queued_evaluation

from .conftest import CRITERIA, FAILING, PASSING, judge_pending

OUTPUTS = [PASSING, FAILING, "Your refund for order number 1234.", "Sorry, thanks."]


def raw_run_days() -> dict[tuple, tuple]:
    """(team, rubric, day) -> (runs, judged, passed, newest run) counted from AgentRun."""
    days: dict[tuple, list[Any]] = {}
    for run in AgentRun.objects.all():
        key = (run.team_id, run.rubric_id or NO_RUBRIC, run.created_at.astimezone(UTC).date())
        row = days.setdefault(key, [0, 0, 0, run.created_at])
        row[0] += 1
        row[1] += run.passed is not None
        row[2] += run.passed is True
        row[3] = max(row[3], run.created_at)
    return {k: tuple(v) for k, v in days.items()}


def rollup_run_days() -> dict[tuple, tuple]:
    return {
        (r.team_id, r.rubric_ref, r.day): (r.runs, r.judged, r.passed, r.last_run_at)
        for r in RunDayRollup.objects.all()
        if r.runs or r.judged or r.passed
    }


def raw_criterion_days() -> dict[tuple, tuple]:
    """(criterion, day) -> (judged, failed) over the current judge verdicts."""
    judged: Counter[tuple] = Counter()
    failed: Counter[tuple] = Counter()
    for v in CriterionVerdict.objects.filter(is_current=True, criterion__isnull=False):
        key = (v.criterion_id, v.run_created_at.astimezone(UTC).date())
        judged[key] += 1
        failed[key] += not v.satisfied
    return {k: (judged[k], failed[k]) for k in judged}


def rollup_criterion_days() -> dict[tuple, tuple]:
    return {
        (r.criterion_ref, r.day): (r.judged, r.failed)
        for r in CriterionDayRollup.objects.all()
        if r.judged or r.failed
    }


def raw_evaluation_days() -> dict[tuple, tuple]:
    """(team, day, kind, status, band of a current alignment result) -> (evaluations, tokens,
    calls) over the ended evaluations."""
    days: dict[tuple, list[int]] = {}
    for e in Evaluation.objects.filter(status__in=FINAL_STATUSES):
        band = e.band if e.kind == Kind.ALIGNMENT and e.is_current else ""
        key = (e.team_id, e.created_at.astimezone(UTC).date(), e.kind, e.status, band)
        row = days.setdefault(key, [0, 0, 0])
        row[0] += 1
        row[1] += e.prompt_tokens + e.completion_tokens
        row[2] += e.judge_calls
    return {k: tuple(v) for k, v in days.items()}


def rollup_evaluation_days() -> dict[tuple, tuple]:
    return {
        (r.team_id, r.day, r.kind, r.status, r.band): (r.evaluations, r.tokens, r.calls)
        for r in EvaluationDayRollup.objects.all()
        if r.evaluations or r.tokens or r.calls
    }


def raw_version_runs() -> dict[Any, int]:
    """Rubric version -> distinct runs with a succeeded evaluation on it."""
    pairs = set(
        Evaluation.objects.filter(
            status=Status.SUCCEEDED, rubric_version__isnull=False
        ).values_list("rubric_version_id", "run_id")
    )
    return dict(Counter(version for version, _ in pairs))


def rollup_version_runs() -> dict[Any, int]:
    return {r.version_ref: r.runs_judged for r in VersionRollup.objects.all() if r.runs_judged}


def raw_version_days() -> dict[tuple, tuple]:
    """(team, rubric, day, version) -> (judged, passed) over the runs with a result, on the
    version their result is from."""
    days: dict[tuple, list[int]] = {}
    for run in AgentRun.objects.filter(passed__isnull=False, current_version__isnull=False):
        day = run.created_at.astimezone(UTC).date()
        row = days.setdefault((run.team_id, run.rubric_id or NO_RUBRIC, day, run.current_version_id), [0, 0])  # fmt: skip
        row[0] += 1
        row[1] += run.passed is True
    return {k: tuple(v) for k, v in days.items()}


def rollup_version_days() -> dict[tuple, tuple]:
    return {
        (r.team_id, r.rubric_ref, r.day, r.version_ref): (r.judged, r.passed)
        for r in VersionDayRollup.objects.all()
        if r.judged or r.passed
    }


def counted() -> tuple[dict, ...]:
    """Every rollup, as the tests compare them."""
    return (rollup_run_days(), rollup_criterion_days(), rollup_evaluation_days(), rollup_version_runs(), rollup_version_days())  # fmt: skip


def assert_rollups_agree() -> None:
    assert rollup_run_days() == raw_run_days()
    assert rollup_criterion_days() == raw_criterion_days()
    assert rollup_evaluation_days() == raw_evaluation_days()
    assert rollup_version_runs() == raw_version_runs()
    assert rollup_version_days() == raw_version_days()


def random_step(rng: random.Random, rubrics: list[Any], reviewer: Any, make_run: Any) -> None:
    judged = list(AgentRun.objects.filter(passed__isnull=False).order_by("created_at"))
    step = rng.choice(["ingest", "ingest", "judge", "override", "revert", "rescore", "edit"])
    if step == "ingest" or not judged:
        rubric = rng.choice(rubrics)
        make_run(rubric=rubric.slug, output=rng.choice(OUTPUTS))
        if rng.random() < 0.7:
            judge_pending()
    elif step == "judge":
        judge_pending()
    elif step == "override":
        run = rng.choice(judged)
        key = rng.choice(["c1", "c2", "c3"])
        override_create(
            run=run, criterion_key=key, satisfied=rng.random() < 0.5, note="n", reviewer=reviewer
        )
    elif step == "revert":
        rows = list(VerdictOverride.objects.order_by("created_at", "id"))
        if rows:
            # A change no longer in effect is refused: nothing changes.
            with contextlib.suppress(ReviewConflict):
                override_revert(row=rng.choice(rows), reviewer=reviewer)
    elif step == "rescore":
        run = rng.choice(judged)
        rubric = next(r for r in rubrics if r.pk == run.rubric_id)
        rubric.refresh_from_db()
        queued_evaluation(run=run, kind=Kind.RUBRIC, rubric=rubric, version=rubric.current_version)
        if rubric.alignment_mode != "off":
            queued_evaluation(
                run=run, kind=Kind.ALIGNMENT, rubric=rubric, alignment_mode=rubric.alignment_mode
            )
        judge_pending()
    else:  # a new version with other criteria: re-scores on it demote the old verdicts
        rubric = rng.choice(rubrics)
        wording = rng.choice(["thanks", "sorry", "today"])
        criteria = [dict(c, key=f"c{i + 1}") for i, c in enumerate(CRITERIA)]
        criteria[2]["description"] = f'Says "{wording}"'
        rubric_set_criteria(rubric=rubric, criteria=criteria)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rollups_agree_with_raw_counts_after_random_ingests_overrides_and_rescores(
    seed, rubric, make_rubric, reviewer, make_run
):
    rng = random.Random(seed)
    # The second rubric also judges prompt alignment: bands, and their demotion on re-scores.
    rubrics = [rubric, make_rubric(name="Second", criteria=CRITERIA, alignment_mode="user")]
    for _ in range(30):
        random_step(rng, rubrics, reviewer, make_run)
        assert_rollups_agree()
    assert VerdictOverride.objects.exists()  # the sequence did exercise overrides
    assert CriterionVerdict.objects.filter(is_current=False).exists()  # and re-scores
    demoted = Evaluation.objects.filter(kind=Kind.ALIGNMENT, is_current=False, status="succeeded")
    assert demoted.exists()  # and alignment results a re-score demoted
    twice = (
        Evaluation.objects.filter(kind=Kind.RUBRIC, status=Status.SUCCEEDED)
        .values("run_id", "rubric_version_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
    )
    assert twice.exists()  # and runs judged again on a version that already counted them
    assert len(rollup_version_runs()) > len(rubrics)  # and versions made by criteria edits


def test_the_rebuild_command_reproduces_the_incremental_rollups(
    rubric, make_rubric, reviewer, make_run, other_team
):
    rng = random.Random(7)
    rubrics = [rubric]
    for _ in range(15):
        random_step(rng, rubrics, reviewer, make_run)
    make_run(team=other_team, output=PASSING)  # no rubric: counted under NO_RUBRIC
    kept = counted()
    assert all(kept)

    call_command("rollups_rebuild", "--team", rubric.team.slug, verbosity=0)
    assert counted() == kept

    for model in (RunDayRollup, CriterionDayRollup, EvaluationDayRollup, VersionRollup, VersionDayRollup):  # fmt: skip
        model.objects.all().delete()
    call_command("rollups_rebuild", verbosity=0)
    assert counted() == kept


def test_the_rebuild_command_names_an_unknown_team(db):
    with pytest.raises(CommandError, match="--team"):
        call_command("rollups_rebuild", "--team", "nope")


def test_a_cancelled_rescore_batch_counts_its_cancelled_evaluations_once(
    team, rubric, make_run, reviewer
):
    runs = [make_run(rubric=rubric.slug, output=PASSING) for _ in range(3)]
    judge_pending()
    batch, _ = batch_create(team=team, rubric=rubric, scope=RescoreScope(runs=tuple(r.pk for r in runs)))  # fmt: skip

    batch_cancel(batch=batch)
    batch_cancel(batch=batch)  # a second cancel changes nothing

    cancelled = [k for k in rollup_evaluation_days() if k[3] == "cancelled"]
    assert len(cancelled) == 1 and rollup_evaluation_days()[cancelled[0]][0] == 3
    assert_rollups_agree()
