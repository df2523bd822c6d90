"""The run page and the home page's charts (runs/views.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import Count, F, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from judge_engine.rules import BANDS as BAND_FLOORS
from rubrics.models import Rubric
from teams.models import ApiKey, Team

from ..models import (
    PENDING_STATUSES,
    AgentRun,
    AlignmentBreakdown,
    CriterionVerdict,
    Evaluation,
    Status,
)
from ..models.rollups import EvaluationDayRollup, RunDayRollup
from .runs import run_get
from .trends import chart_data, team_trends


@dataclass
class RunDetail:
    """Everything the run page shows. ``rubric_eval`` / ``alignment_eval`` are the evaluations
    on display (the current ones unless another was picked); ``others`` are the rest."""

    run: AgentRun
    evaluations: list[Evaluation]
    rubric_eval: Evaluation | None
    alignment_eval: Evaluation | None
    verdicts: list[CriterionVerdict]
    perspectives: list[AlignmentBreakdown]

    @property
    def others(self) -> list[Evaluation]:
        shown = {e.pk for e in (self.rubric_eval, self.alignment_eval) if e is not None}
        return [e for e in self.evaluations if e.pk not in shown]


def run_detail(*, team: Team, run_id: Any, evaluation_id: Any = None) -> RunDetail | None:
    """The run page: the run, all its evaluations (newest first) and, for the ones on
    display, verdicts, alignment rows and the judge calls. Five queries."""
    run = run_get(team=team, run_id=run_id)
    if run is None:
        return None
    evaluations = list(
        Evaluation.objects.filter(run=run)
        .select_related("rubric", "rubric_version", "batch")
        .defer("calls")
        .order_by("-created_at")
    )
    picked = next((e for e in evaluations if str(e.pk) == str(evaluation_id)), None)
    rubric_eval = _shown(evaluations, "rubric", picked, run.rubric_id)
    alignment_eval = _shown(evaluations, "alignment", picked, run.rubric_id)
    shown = [e.pk for e in (rubric_eval, alignment_eval) if e is not None]
    calls = dict(Evaluation.objects.filter(pk__in=shown).values_list("pk", "calls"))
    for e in (rubric_eval, alignment_eval):
        if e is not None:
            e.calls = calls.get(e.pk) or []
    verdicts = (
        list(CriterionVerdict.objects.filter(evaluation=rubric_eval).order_by("position"))
        if rubric_eval
        else []
    )
    # The user perspective first: it carries the larger share of a "both" score.
    perspectives = (
        list(AlignmentBreakdown.objects.filter(evaluation=alignment_eval).order_by("-perspective"))
        if alignment_eval
        else []
    )
    return RunDetail(run, evaluations, rubric_eval, alignment_eval, verdicts, perspectives)


def _shown(
    evaluations: list[Evaluation], kind: str, picked: Evaluation | None, rubric_id: Any
) -> Evaluation | None:
    """The picked evaluation when it is of this kind; else the current one (preferring the
    run's own rubric); else the newest of the kind (still queued, or failed)."""
    if picked is not None and picked.kind == kind:
        return picked
    of_kind = [e for e in evaluations if e.kind == kind]
    current = [e for e in of_kind if e.is_current]
    preferred = [e for e in current if e.rubric_id == rubric_id] or current
    candidates = preferred or of_kind
    return candidates[0] if candidates else None


@dataclass
class HomeOverview:
    days: list[Any]
    # One per rubric version (trends.chart_data): {"name", "id", "version", "points": {day:
    # (passed, judged)}}; never one series across versions.
    pass_rates: list[dict[str, Any]]
    bands: list[tuple[str, int]]
    statuses: list[tuple[str, int]]
    usage: dict[Any, dict[str, Any]]  # day -> {"tokens", "cost", "calls"}
    runs_total: int
    judged_total: int
    passed_total: int
    version_marks: list[dict[str, Any]] = field(default_factory=list)  # days a version took over


BANDS = tuple(label for _, label in BAND_FLOORS)  # the engine's alignment bands, best first


def home_overview(*, team: Team, days: int = 30) -> HomeOverview:
    """The home page's charts over the last ``days`` days, bucketed by UTC day, from the
    rollups (runs per rubric and day for the totals, per rubric version and day for the pass
    rates, ended evaluations per day, kind, status and band), one grouped query over the
    pending evaluations, one for the versions and their rubrics' names."""
    today = timezone.now().astimezone(UTC).date()
    day_list = [today - timedelta(days=i) for i in range(days - 1, -1, -1)]
    since = datetime.combine(day_list[0], datetime.min.time(), tzinfo=UTC)
    run_rows = RunDayRollup.objects.filter(team=team, day__gte=day_list[0]).values(
        "rubric_ref", "day", "runs", "judged", "passed"
    )
    ended = EvaluationDayRollup.objects.filter(team=team, day__gte=day_list[0]).values(
        "day", "kind", "status", "band", "evaluations", "tokens", "cost", "calls"
    )
    # Pending evaluations are not rolled up (they are counted when they end): few, read from
    # the eval_team_status index.
    pending = (
        Evaluation.objects.filter(team=team, status__in=PENDING_STATUSES, created_at__gte=since)
        .annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values("day", "kind", "status")
        .annotate(
            evaluations=Count("created_at"),
            tokens=Sum(F("prompt_tokens") + F("completion_tokens")),
            cost=Sum("cost"),
            calls=Sum("judge_calls"),
        )
        .order_by()
    )
    overview = HomeOverview(day_list, [], [], [], {}, 0, 0, 0)
    _run_totals(overview, [dict(r) for r in run_rows])
    chart = chart_data(team_trends(team_id=team.id, days=days), days)
    overview.pass_rates, overview.version_marks = chart["trend_lines"], chart["trend_markers"]
    _evaluation_totals(overview, [dict(r) for r in ended] + [dict(r, band="") for r in pending])
    return overview


def _run_totals(overview: HomeOverview, rows: list[dict[str, Any]]) -> None:
    for row in rows:
        overview.runs_total += row["runs"]
        overview.judged_total += row["judged"]
        overview.passed_total += row["passed"]


def _evaluation_totals(overview: HomeOverview, rows: list[dict[str, Any]]) -> None:
    statuses = dict.fromkeys(Status.values, 0)
    bands = dict.fromkeys(BANDS, 0)
    for row in rows:  # "band" is set only on current alignment results
        statuses[row["status"]] = statuses.get(row["status"], 0) + row["evaluations"]
        if row["kind"] == "alignment" and row["band"] in bands:
            bands[row["band"]] += row["evaluations"]
        day = overview.usage.setdefault(row["day"], {"tokens": 0, "cost": None, "calls": 0})
        day["tokens"] += row["tokens"] or 0
        day["calls"] += row["calls"] or 0
        if row["cost"] is not None:
            day["cost"] = (day["cost"] or 0.0) + row["cost"]
    overview.statuses = list(statuses.items())
    overview.bands = list(bands.items())


@dataclass
class FirstSteps:
    """A new team's first steps on the home page, each done or not; shown until it has runs.
    ``rubric_slug``: its first active rubric's (the snippet names it); ``key_prefix``: the
    first characters of its newest active API key (the full key is shown once, at creation)."""

    rubric_slug: str | None
    key_prefix: str | None

    @property
    def done(self) -> int:
        return (self.rubric_slug is not None) + (self.key_prefix is not None)


def first_steps(*, team: Team) -> FirstSteps | None:
    """None once the team has a run; else which first steps are done. At most three queries."""
    if AgentRun.objects.filter(team=team).exists():
        return None
    slug = (
        Rubric.objects.filter(team=team, archived_at__isnull=True)
        .order_by("created_at")
        .values_list("slug", flat=True)
        .first()
    )
    prefix = (
        ApiKey.objects.filter(team=team, revoked_at__isnull=True)
        .order_by("-created_at")
        .values_list("prefix", flat=True)
        .first()
    )
    return FirstSteps(rubric_slug=slug, key_prefix=prefix)
