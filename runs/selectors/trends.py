"""Pass-rate trends that never mix rubric versions: one series per version, per UTC day, from
the version-day rollup (runs.models.rollups.VersionDayRollup). The home page, the rubric
editor, the failed-criteria page and ``GET /api/rubrics/{rubric}/trend`` read them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.utils import timezone

from rubrics.models import Rubric, RubricVersion

from ..models import AgentRun
from ..models.rollups import VersionDayRollup
from .filters import result_passed_q

TREND_DAYS = 30  # the default window, UTC days, today included (as the home page's charts)
TREND_DAYS_MAX = 365


@dataclass
class TrendPoint:
    day: date
    runs: int  # runs with a result judged on the version, created that day
    passed: int

    @property
    def pass_rate(self) -> float:
        return self.passed / self.runs if self.runs else 0.0


@dataclass
class VersionSeries:
    """One rubric version's daily pass rates in the window. ``took_over``: the UTC day the
    version was saved, when that is inside the window and it had a predecessor (the day its
    series starts counting instead of the one before); else None."""

    rubric_id: Any
    rubric_name: str
    version_id: Any
    version: int
    points: list[TrendPoint] = field(default_factory=list)
    took_over: date | None = None

    @property
    def name(self) -> str:
        return f"{self.rubric_name} v{self.version}"

    def by_day(self) -> dict[date, tuple[int, int]]:
        """{day: (passed, runs)}: what the charts take."""
        return {p.day: (p.passed, p.runs) for p in self.points}


def trend_days(days: int) -> list[date]:
    """The last ``days`` UTC days, oldest first, today included."""
    today = timezone.now().astimezone(UTC).date()
    return [today - timedelta(days=i) for i in range(days - 1, -1, -1)]


def rubric_trend(*, rubric: Rubric, days: int = TREND_DAYS) -> list[VersionSeries]:
    """``rubric``'s series, oldest version first. Two queries."""
    return team_trends(team_id=rubric.team_id, days=days, rubric_ids=[rubric.id])


def team_trends(
    *, team_id: Any, days: int = TREND_DAYS, rubric_ids: list[Any] | None = None
) -> list[VersionSeries]:
    """Every series of the team's rubrics (or of ``rubric_ids``) with a result in the last
    ``days`` UTC days, by rubric name then version number. Two queries, bounded by the window:
    rollup rows are one per rubric, version and day."""
    days = max(1, min(int(days), TREND_DAYS_MAX))
    window = trend_days(days)
    rows = VersionDayRollup.objects.filter(team_id=team_id, day__gte=window[0])
    if rubric_ids is not None:
        rows = rows.filter(rubric_ref__in=rubric_ids)
    points: dict[Any, list[TrendPoint]] = {}
    owner: dict[Any, Any] = {}
    for r in rows.values("rubric_ref", "version_ref", "day", "judged", "passed").order_by("day"):
        if r["judged"] > 0:
            points.setdefault(r["version_ref"], []).append(
                TrendPoint(r["day"], r["judged"], r["passed"])
            )
            owner[r["version_ref"]] = r["rubric_ref"]
    versions = RubricVersion.objects.filter(id__in=list(points), rubric__team_id=team_id)
    series = [
        VersionSeries(
            rubric_id=v.rubric_id,
            rubric_name=v.rubric.name,
            version_id=v.id,
            version=v.number,
            points=points[v.id],
            took_over=_took_over(v, window[0]),
        )
        for v in versions.select_related("rubric")
        # A run of one rubric judged by another's version (no series of its own rubric).
        if owner[v.id] == v.rubric_id
    ]
    return sorted(series, key=lambda s: (s.rubric_name, str(s.rubric_id), s.version))


def chart_data(series: list[VersionSeries], days: int = TREND_DAYS) -> dict[str, Any]:
    """What the pass-rate chart partial (runs/_version_trend.html) takes: the window's days,
    one line per version (``points``: {day: (passed, runs)}), and a marker per version that
    took over inside the window, naming the version it replaced when that one is drawn."""
    lines = [
        {"id": s.rubric_id, "name": s.name, "version": s.version, "points": s.by_day()}
        for s in series
    ]
    markers = []
    for i, s in enumerate(series):
        if s.took_over is None:
            continue
        earlier = [p.version for p in series[:i] if p.rubric_id == s.rubric_id]
        markers.append(
            {
                "day": s.took_over, "name": s.rubric_name, "version": s.version,
                "previous": earlier[-1] if earlier else None,
            }
        )  # fmt: skip
    return {"trend_days": trend_days(days), "trend_lines": lines, "trend_markers": markers}


def _took_over(version: RubricVersion, since: date) -> date | None:
    day = version.created_at.astimezone(UTC).date()
    return day if version.number > 1 and day >= since else None


@dataclass
class PeriodVersions:
    """The rubric versions that judged the runs of two periods: ``before`` the earlier one's,
    ``after`` the later one's (version numbers, oldest first)."""

    before: list[int]
    after: list[int]

    @property
    def changed(self) -> bool:
        return bool(self.before) and bool(self.after) and self.before != self.after

    @property
    def note(self) -> str:
        """ "v2 → v3 changed between these periods", or "" when one set of versions judged
        both."""
        if not self.changed:
            return ""
        return (
            f"{_numbers(self.before)} → {_numbers(self.after)} changed between these periods "
            "(the pass rates are from different rubric versions)"
        )


def _numbers(numbers: list[int]) -> str:
    return ", ".join(f"v{n}" for n in numbers)


def period_versions(
    *,
    team_id: Any,
    rubric_id: Any,
    before: tuple[datetime, datetime],
    after: tuple[datetime, datetime],
) -> PeriodVersions:
    """Which versions judged the results of ``rubric_id``'s runs created in each period
    ([start, end) pairs): two grouped queries over the runs with a result, as the pass rates
    of those periods count them (reviews' pass-rate alert compares two such periods)."""

    def numbers(start: datetime, end: datetime) -> list[int]:
        runs = AgentRun.objects.filter(
            result_passed_q(True) | result_passed_q(False),  # runs with a result (run_result)
            team_id=team_id, rubric_id=rubric_id, created_at__gte=start, created_at__lt=end,
            current_version__isnull=False,
        )  # fmt: skip
        found = runs.values_list("current_version__number", flat=True).distinct().order_by()
        return sorted(found)

    return PeriodVersions(before=numbers(*before), after=numbers(*after))
