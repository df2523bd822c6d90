"""The rubric pages' run statistics (rubrics/views_*.py): pass rates, runs judged per version,
failure rates per criterion, the walk through failing runs, and the runs "try it" offers.

They read runs' tables, so they live in runs (rubrics sits below runs in the layers)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import Count, Max, Q, Sum
from django.utils import timezone

from rubrics.models import Criterion, Rubric, RubricVersion
from rubrics.selectors import version_criteria
from teams.models import Team

from ..models import AgentRun, CriterionVerdict
from ..models.rollups import CriterionDayRollup, RunDayRollup, VersionRollup

PASS_RATE_DAYS = 30  # UTC days, today included (as the home page's charts)


@dataclass
class RubricRow:
    rubric: Rubric
    criteria_count: int = 0
    judged: int = 0
    passed: int = 0
    last_run_at: datetime | None = None

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.judged if self.judged else None


def rubric_rows(*, team: Team, include_archived: bool = False) -> list[RubricRow]:
    """The rubric list: current version, criteria count, and over the last 30 UTC days the
    pass rate and the newest run. Three queries whatever the number of rubrics or runs; the
    run counts come from the rollups (one row per rubric and day)."""
    rubrics = Rubric.objects.filter(team=team).select_related("current_version")
    if not include_archived:
        rubrics = rubrics.filter(archived_at__isnull=True)
    rows = {r.id: RubricRow(rubric=r) for r in rubrics}
    version_ids = [
        r.rubric.current_version_id for r in rows.values() if r.rubric.current_version_id
    ]
    counts = dict(
        Criterion.objects.filter(version_id__in=version_ids)
        .values("version_id")
        .annotate(n=Count("position"))
        .order_by()
        .values_list("version_id", "n")
    )
    since = timezone.now().astimezone(UTC).date() - timedelta(days=PASS_RATE_DAYS - 1)
    stats = (
        RunDayRollup.objects.filter(team=team, day__gte=since, rubric_ref__in=list(rows))
        .values("rubric_ref")
        .annotate(judged=Sum("judged"), passed=Sum("passed"), last=Max("last_run_at"))
        .order_by()
    )
    for s in stats:
        row = rows[s["rubric_ref"]]
        row.judged, row.passed, row.last_run_at = s["judged"], s["passed"], s["last"]
    for row in rows.values():
        version_id = row.rubric.current_version_id
        row.criteria_count = counts.get(version_id, 0) if version_id else 0
    return list(rows.values())


TRY_RUNS = 30


def rubric_try_runs(*, rubric: Rubric) -> list[Any]:
    """Runs to pick from in the "try it" panel: this rubric's newest, else the team's."""
    fields = ("id", "external_id", "agent", "created_at", "passed", "task_text")
    runs = list(
        AgentRun.objects.filter(team_id=rubric.team_id, rubric=rubric).only(*fields)[:TRY_RUNS]
    )
    return runs or list(AgentRun.objects.filter(team_id=rubric.team_id).only(*fields)[:TRY_RUNS])


def rubric_try_run(*, rubric: Rubric, run_id: Any) -> Any:
    """One of the team's runs, or None (another team's id is just not found)."""
    try:
        wanted = uuid.UUID(str(run_id))
    except ValueError:
        return None
    return AgentRun.objects.filter(team_id=rubric.team_id, id=wanted).first()


@dataclass
class VersionRow:
    version: RubricVersion
    criteria_count: int
    runs_judged: int


def rubric_versions(*, rubric: Rubric) -> list[VersionRow]:
    """Every version, newest first, with its criteria count and how many runs were judged on
    it (distinct runs with a succeeded evaluation). Two queries; the counts come from the
    rollups (one row per version)."""
    versions = list(
        RubricVersion.objects.filter(rubric=rubric)
        .select_related("created_by")
        .annotate(criteria_count=Count("criteria"))
        .order_by("-number")
    )
    judged = dict(
        VersionRollup.objects.filter(version_ref__in=[v.id for v in versions]).values_list(
            "version_ref", "runs_judged"
        )
    )
    return [VersionRow(v, v.criteria_count, judged.get(v.id, 0)) for v in versions]  # type: ignore[attr-defined]


@dataclass
class CriterionFailures:
    criterion: Criterion
    judged: int
    failed: int

    @property
    def rate(self) -> float | None:
        return self.failed / self.judged if self.judged else None


def rubric_failure_rates(*, rubric: Rubric, version: RubricVersion) -> list[CriterionFailures]:
    """Each criterion of ``version`` with its failure count and rate over the runs whose
    current verdicts come from that version, most failed first. Two queries; the counts come
    from the rollups (one row per criterion and day)."""
    criteria = version_criteria(version_id=version.id)
    # Criterion rows belong to one version of this rubric, so their ids scope the count.
    stats: dict[Any, dict[str, Any]] = {
        row["criterion_ref"]: dict(row)
        for row in CriterionDayRollup.objects.filter(criterion_ref__in=[c.id for c in criteria])
        .values("criterion_ref")
        .annotate(judged=Sum("judged"), failed=Sum("failed"))
        .order_by()
    }
    rows = [
        CriterionFailures(
            c, stats.get(c.id, {}).get("judged", 0), stats.get(c.id, {}).get("failed", 0)
        )
        for c in criteria
    ]
    return sorted(rows, key=lambda r: (-r.failed, -(r.rate or 0), r.criterion.position))


def versions_judged(*, rubric: Rubric) -> dict[Any, int]:
    """Per version of ``rubric`` whose criteria have current verdicts: how many runs (its most
    judged criterion's count), as the failed-criteria table counts them. One query on the
    rollups; versions without any are absent."""
    rows = (
        CriterionDayRollup.objects.filter(team_id=rubric.team_id, rubric_ref=rubric.id)
        .values("version_ref", "criterion_ref")
        .annotate(judged=Sum("judged"))
        .order_by()
    )
    out: dict[Any, int] = {}
    for row in rows:
        if row["judged"] > 0:
            out[row["version_ref"]] = max(out.get(row["version_ref"], 0), row["judged"])
    return out


@dataclass
class FailingRunStep:
    """One failing verdict in the walk, with its neighbours (None at either end)."""

    verdict: Any
    newer_run_id: Any
    older_run_id: Any
    position: int
    total: int


def failing_runs_walk(
    *, rubric: Rubric, criterion: Criterion, run_id: Any = None
) -> FailingRunStep | None:
    """Walk the runs failing ``criterion`` (current verdicts), newest first, on the keyset
    (run_created_at, run_id). Without ``run_id`` the walk starts at the newest. Five queries;
    the position and total come from the criterion's rollup (CriterionDayRollup) and a count
    within one day."""
    failing = CriterionVerdict.objects.filter(
        team_id=rubric.team_id,
        rubric=rubric,
        criterion_key=criterion.key,
        is_current=True,
        satisfied=False,
        criterion=criterion,
    )
    newest_first = failing.order_by("-run_created_at", "-run_id")
    start = failing.filter(run_id=run_id) if run_id else newest_first
    verdict = start.select_related("run", "evaluation").first()
    if verdict is None:
        return None
    at = verdict.run_created_at
    newer = Q(run_created_at__gt=at) | Q(run_created_at=at, run_id__gt=verdict.run_id)
    older = Q(run_created_at__lt=at) | Q(run_created_at=at, run_id__lt=verdict.run_id)
    newer_id = (
        failing.filter(newer)
        .order_by("run_created_at", "run_id")
        .values_list("run_id", flat=True)
        .first()
    )
    older_id = newest_first.filter(older).values_list("run_id", flat=True).first()
    # Counts from the rollups, and raw only within the verdict's own UTC day: bounded work.
    day = at.astimezone(UTC).date()
    day_start = datetime.combine(day, datetime.min.time(), tzinfo=UTC)
    same_day = failing.filter(newer, run_created_at__lt=day_start + timedelta(days=1)).count()
    days = CriterionDayRollup.objects.filter(criterion_ref=criterion.id).aggregate(
        total=Sum("failed"), later=Sum("failed", filter=Q(day__gt=day))
    )
    return FailingRunStep(
        verdict=verdict,
        newer_run_id=newer_id,
        older_run_id=older_id,
        position=(days["later"] or 0) + same_day + 1,
        total=days["total"] or 0,
    )
