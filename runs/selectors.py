"""Reads for runs and evaluations, shared by the API and the HTML dashboard.

Every function is scoped to a team: another team's object is simply not found (None), which
callers turn into a 404.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from django.db.models import Count, Prefetch, Q, QuerySet, Sum
from django.db.models.functions import Substr
from django.utils.dateparse import parse_datetime
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalsite.pagination import InvalidCursor, cursor_decode, cursor_encode, page_size
from teams.models import Team

from .models import (
    AgentRun,
    AlignmentBreakdown,
    CriterionVerdict,
    Evaluation,
    RescoreBatch,
    Status,
)

PREVIEW_CHARS = 280
# Columns a list never needs (each may hold up to EVALSITE_MAX_RUN_BYTES).
HEAVY_RUN_FIELDS = (
    "input",
    "output",
    "request_context",
    "metadata",
    "task_text",
    "output_text",
    "system_text",
)
DATE_ONLY = re.compile(r"^\d{4}-\d{2}-\d{2}$")

StatusChoice = Literal["queued", "running", "succeeded", "failed", "cancelled"]


class RunFilterError(ValueError):
    """Invalid filter values; ``errors`` maps each query parameter to a message."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


class RunFilters(BaseModel):
    """The runs list's filters (the API's query parameters and the dashboard's form).

    All are optional and combine with AND. ``since`` is inclusive, ``until`` exclusive; a bare
    date (``2025-01-31``) as ``until`` includes that whole day. Naive times are UTC.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    rubric: str | None = Field(default=None, max_length=200, description="Rubric id or slug")
    version: int | None = Field(
        default=None, ge=1, le=2_147_483_647, description="Rubric version number of the result"
    )
    passed: bool | None = Field(default=None, description="Current rubric result passed or not")
    failing_criterion: str | None = Field(
        default=None,
        max_length=32,
        description="Criterion id (e.g. c3) whose current verdict is unsatisfied",
    )
    status: StatusChoice | None = Field(default=None, description="Evaluation status of the run")
    agent: str | None = Field(default=None, max_length=200)
    since: datetime | None = Field(default=None, description="Created at or after")
    until: datetime | None = Field(default=None, description="Created before")
    q: str | None = Field(
        default=None, max_length=200, description="Text in external_id, task or output"
    )

    @field_validator("rubric", "failing_criterion", "agent", "q")
    @classmethod
    def _storable_text(cls, value: str | None) -> str | None:
        if value is not None and "\x00" in value:
            raise ValueError("must not contain NUL characters")
        return value or None

    @field_validator("since", "until", mode="before")
    @classmethod
    def _bare_date(cls, value: Any, info: Any) -> Any:
        if isinstance(value, str) and DATE_ONLY.match(value.strip()):
            day = datetime.fromisoformat(value.strip())
            try:
                return day + timedelta(days=1) if info.field_name == "until" else day
            except OverflowError as exc:
                raise ValueError("date out of range") from exc
        return value

    @field_validator("since", "until")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        try:
            return value.astimezone(UTC)
        except OverflowError as exc:
            raise ValueError("date out of range") from exc

    @classmethod
    def from_query(cls, query: Any) -> RunFilters:
        """From a QueryDict (or any mapping of strings); blank values are ignored.

        Raises RunFilterError naming each invalid parameter.
        """
        data = {
            name: query.get(name) for name in cls.model_fields if query.get(name) not in (None, "")
        }
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise RunFilterError(
                {".".join(str(p) for p in e["loc"]): e["msg"] for e in exc.errors()}
            ) from exc

    def to_query(self) -> dict[str, str]:
        """The non-empty filters as query parameters (for links to other pages)."""
        out = {}
        for name, value in self.model_dump(exclude_none=True).items():
            if isinstance(value, bool):
                value = "true" if value else "false"
            elif isinstance(value, datetime):
                value = value.isoformat()
            out[name] = str(value)
        return out


@dataclass(frozen=True)
class RunPage:
    items: Sequence[AgentRun]
    next_cursor: str | None


def runs_list(
    *,
    team: Team,
    filters: RunFilters,
    cursor: str | None = None,
    limit: int | None = None,
    sort: Literal["newest", "oldest"] = "newest",
    failed_have_no_result: bool = False,
) -> RunPage:
    """One page of a team's runs, newest first, and the cursor of the next page (or None).

    ``sort`` is ``newest`` (default) or ``oldest`` first. Keyset pagination on (created_at, id):
    pages stay stable while new runs arrive and cost the
    same at any depth. Always one query whatever the page size. Rows carry ``rubric`` and
    ``current_version`` (joined) and the annotations ``task_preview`` and ``output_preview``
    (the first 280 characters); the heavy columns (input, output, request_context, metadata and
    the extracted texts) are deferred — read them only on a single run (see run_get).

    ``cursor`` is the ``next_cursor`` of the previous page with the same filters; a cursor we did
    not produce raises evalsite.pagination.InvalidCursor. ``limit`` is clamped to
    1..EVALSITE_PAGE_SIZE_MAX (default 50).

    With ``failed_have_no_result`` (the API, whose answers null a failed run's ``passed``) the
    ``passed`` filter leaves out runs whose status is failed, so every run it lists answers the
    ``passed`` asked for. The pages keep showing a failed run's last rubric result.
    """
    size = page_size(limit)
    qs = _filtered(team, filters)
    if failed_have_no_result and filters.passed is not None:
        qs = qs.exclude(status=Status.FAILED)
    oldest = sort == "oldest"
    if cursor:
        qs = qs.filter(_after(cursor, oldest=oldest))
    rows = list(
        qs.select_related("rubric", "current_version")
        .defer(*HEAVY_RUN_FIELDS)
        .annotate(
            task_preview=Substr("task_text", 1, PREVIEW_CHARS),
            output_preview=Substr("output_text", 1, PREVIEW_CHARS),
        )
        .order_by(*(("created_at", "id") if oldest else ("-created_at", "-id")))[: size + 1]
    )
    items = rows[:size]
    more = len(rows) > size
    return RunPage(items=items, next_cursor=_cursor_of(items[-1]) if more else None)


def _filtered(team: Team, f: RunFilters) -> QuerySet[AgentRun]:
    qs = AgentRun.objects.filter(team=team)
    if f.rubric:
        qs = qs.filter(_rubric_q("rubric", f.rubric))
    if f.version is not None:
        qs = qs.filter(current_version__number=f.version)
    if f.passed is not None:
        qs = qs.filter(passed=f.passed)
    if f.failing_criterion:
        qs = qs.filter(pk__in=_failing_runs(team, f))
    if f.status:
        qs = qs.filter(status=f.status)
    if f.agent:
        qs = qs.filter(agent=f.agent)
    if f.since:
        qs = qs.filter(created_at__gte=f.since)
    if f.until:
        qs = qs.filter(created_at__lt=f.until)
    if f.q:
        qs = qs.filter(
            Q(external_id__icontains=f.q)
            | Q(task_text__icontains=f.q)
            | Q(output_text__icontains=f.q)
        )
    return qs


def _rubric_q(field: str, ref: str) -> Q:
    """A rubric named by id or slug, as a condition on ``field`` (no extra query)."""
    try:
        return Q(**{f"{field}_id": uuid.UUID(ref)})
    except ValueError:
        return Q(**{f"{field}__slug": ref})


def _failing_runs(team: Team, f: RunFilters) -> QuerySet[CriterionVerdict, Any]:
    """Ids of runs whose current verdict on the criterion is unsatisfied, read from the narrow
    verdict_failing_criterion index (team, rubric, criterion_key, is_current, satisfied)."""
    verdicts = CriterionVerdict.objects.filter(
        team=team, criterion_key=f.failing_criterion, is_current=True, satisfied=False
    )
    if f.rubric:
        verdicts = verdicts.filter(_rubric_q("rubric", f.rubric))
    if f.since:
        verdicts = verdicts.filter(run_created_at__gte=f.since)
    if f.until:
        verdicts = verdicts.filter(run_created_at__lt=f.until)
    return verdicts.values("run_id")


def _cursor_of(run: AgentRun) -> str:
    return cursor_encode(run.created_at.isoformat(), run.id)


def _after(cursor: str, *, oldest: bool = False) -> Q:
    created_raw, id_raw = cursor_decode(cursor, size=2)
    try:
        created = parse_datetime(created_raw)
        run_id = uuid.UUID(id_raw)
    except ValueError as exc:
        raise InvalidCursor("not a cursor returned by this list") from exc
    if created is None:
        raise InvalidCursor("not a cursor returned by this list")
    # The redundant bound on created_at alone is what lets PostgreSQL start the index scan at
    # the cursor; with only the OR it walks the index from the top (slow on deep pages).
    if oldest:
        return Q(created_at__gte=created) & (
            Q(created_at__gt=created) | Q(created_at=created, id__gt=run_id)
        )
    return Q(created_at__lte=created) & (
        Q(created_at__lt=created) | Q(created_at=created, id__lt=run_id)
    )


def run_get(*, team: Team, run_id: Any) -> AgentRun | None:
    """One run of the team with its rubric and current version, or None."""
    try:
        key = uuid.UUID(str(run_id))
    except ValueError:
        return None
    return (
        AgentRun.objects.select_related("rubric", "current_version")
        .filter(team=team, pk=key)
        .first()
    )


def _evaluations() -> QuerySet[Evaluation]:
    """Evaluations ready to serialise: version, verdicts and alignment rows in 3 more queries."""
    return (
        Evaluation.objects.select_related("rubric_version")
        .defer("calls")
        .prefetch_related(
            Prefetch("verdicts", queryset=CriterionVerdict.objects.order_by("position")),
            Prefetch("alignment", queryset=AlignmentBreakdown.objects.order_by("perspective")),
        )
    )


def evaluations_latest_for_runs(*, run_ids: list[Any]) -> dict[Any, list[Evaluation]]:
    """For each run, its newest evaluation per (kind, rubric) — queued or final — with verdicts
    and alignment prefetched. Four queries whatever the number of runs."""
    if not run_ids:
        return {}
    rows = (
        Evaluation.objects.filter(run_id__in=run_ids, calibration=False)
        .order_by("-created_at")
        .values_list("id", "run_id", "kind", "rubric_id")
    )
    latest: dict[tuple, Any] = {}
    for evaluation_id, run_id, kind, rubric_id in rows:
        latest.setdefault((run_id, kind, rubric_id), evaluation_id)
    out: dict[Any, list[Evaluation]] = {run_id: [] for run_id in run_ids}
    for evaluation in _evaluations().filter(id__in=latest.values()).order_by("created_at", "kind"):
        out.setdefault(evaluation.run_id, []).append(evaluation)
    return out


def evaluations_for_run(*, run: AgentRun) -> list[Evaluation]:
    """The run's newest evaluation per (kind, rubric), oldest first, ready to serialise."""
    return evaluations_latest_for_runs(run_ids=[run.pk])[run.pk]


def evaluation_get(*, team: Team, evaluation_id: Any) -> Evaluation | None:
    """One evaluation of the team, ready to serialise, or None."""
    try:
        key = uuid.UUID(str(evaluation_id))
    except ValueError:
        return None
    return _evaluations().filter(team=team, pk=key).first()


def evaluations_by_ids(*, ids: list[Any]) -> list[Evaluation]:
    """Evaluations by id (any team: callers pass ids they own), ready to serialise."""
    return list(_evaluations().filter(id__in=ids).order_by("created_at", "kind"))


def evaluations_pending(*, ids: list[Any]) -> int:
    """How many of these evaluations are not final yet (one cheap query, for waiting loops)."""
    return Evaluation.objects.filter(id__in=ids, status__in=[Status.QUEUED, Status.RUNNING]).count()


# --- Dashboard pages (runs/views.py) -----------------------------------------------------------


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


def run_status_cell(*, team: Team, run_id: Any) -> AgentRun | None:
    """The few columns of the live status cell (one query)."""
    try:
        key = uuid.UUID(str(run_id))
    except ValueError:
        return None
    return (
        AgentRun.objects.filter(team=team, pk=key)
        .only("id", "status", "passed", "score", "alignment_score", "current_version__number")
        .select_related("current_version")
        .first()
    )


@dataclass
class HomeOverview:
    days: list[Any]
    pass_rates: list[dict[str, Any]]  # {"name", "id", "points": {day: (passed, judged)}}
    bands: list[tuple[str, int]]
    statuses: list[tuple[str, int]]
    usage: dict[Any, dict[str, Any]]  # day -> {"tokens", "cost", "calls"}
    runs_total: int
    judged_total: int
    passed_total: int


BANDS = ("excellent", "very good", "good", "moderate", "poor", "very poor")


def home_overview(*, team: Team, days: int = 30) -> HomeOverview:
    """The home page's charts over the last ``days`` days, bucketed by UTC day: one grouped
    query over runs, one over evaluations (both index-only on PostgreSQL, see the
    run_team_day_result and eval_team_day_usage indexes), one for rubric names."""
    from django.db.models import Count, F, Sum
    from django.db.models.functions import TruncDate
    from django.utils import timezone

    from rubrics.models import Rubric

    today = timezone.now().astimezone(UTC).date()
    day_list = [today - timedelta(days=i) for i in range(days - 1, -1, -1)]
    since = datetime.combine(day_list[0], datetime.min.time(), tzinfo=UTC)
    run_rows = (
        AgentRun.objects.filter(team=team, created_at__gte=since)
        .annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values("rubric_id", "day", "passed")
        .annotate(n=Count("created_at"))
        .order_by()
    )
    eval_rows = (
        Evaluation.objects.filter(team=team, created_at__gte=since)
        .annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values("day", "kind", "status", "is_current", "band")
        .annotate(
            n=Count("created_at"),
            tokens=Sum(F("prompt_tokens") + F("completion_tokens")),
            cost=Sum("cost"),
            calls=Sum("judge_calls"),
        )
        .order_by()
    )
    overview = HomeOverview(day_list, [], [], [], {}, 0, 0, 0)
    series = _pass_rate_series(overview, [dict(r) for r in run_rows])
    names = dict(Rubric.objects.filter(id__in=list(series)).values_list("id", "name"))
    overview.pass_rates = sorted(
        ({"id": k, "name": names.get(k, "?"), "points": v} for k, v in series.items()),
        key=lambda s: s["name"],
    )
    _evaluation_totals(overview, [dict(r) for r in eval_rows])
    return overview


def _pass_rate_series(overview: HomeOverview, rows: list[dict[str, Any]]) -> dict[Any, dict]:
    """Fill the run totals; return {rubric id: {day: (passed, judged)}}."""
    series: dict[Any, dict] = {}
    for row in rows:
        overview.runs_total += row["n"]
        if row["passed"] is None:
            continue
        overview.judged_total += row["n"]
        overview.passed_total += row["n"] if row["passed"] else 0
        if row["rubric_id"] is not None:
            passed, judged = series.setdefault(row["rubric_id"], {}).get(row["day"], (0, 0))
            series[row["rubric_id"]][row["day"]] = (
                passed + (row["n"] if row["passed"] else 0),
                judged + row["n"],
            )
    return series


def _evaluation_totals(overview: HomeOverview, rows: list[dict[str, Any]]) -> None:
    statuses = dict.fromkeys(Status.values, 0)
    bands = dict.fromkeys(BANDS, 0)
    for row in rows:
        statuses[row["status"]] = statuses.get(row["status"], 0) + row["n"]
        if row["kind"] == "alignment" and row["is_current"] and row["band"] in bands:
            bands[row["band"]] += row["n"]
        day = overview.usage.setdefault(row["day"], {"tokens": 0, "cost": None, "calls": 0})
        day["tokens"] += row["tokens"] or 0
        day["calls"] += row["calls"] or 0
        if row["cost"] is not None:
            day["cost"] = (day["cost"] or 0.0) + row["cost"]
    overview.statuses = list(statuses.items())
    overview.bands = list(bands.items())


# --- Re-score batches (runs.services.rescore) ----------------------------------------------------


def runs_matching(*, team: Team, filters: RunFilters) -> QuerySet[AgentRun]:
    """Every run of the team that the runs list would show for ``filters`` (unordered,
    unpaginated): the scope of a filtered re-score."""
    return _filtered(team, filters)


@dataclass(frozen=True)
class BatchProgress:
    """A batch as its progress bar and the API show it.

    ``counts`` has every evaluation status (held evaluations count as queued); ``progress`` is
    the share of evaluations that ended (0..1, 1 for an empty batch); ``actual`` sums what the
    ended evaluations really did, to compare with ``estimate``; ``failures`` are the newest
    failed evaluations with their messages (at most FAILURES_SHOWN)."""

    batch: RescoreBatch
    counts: dict[str, int]
    total: int
    done: int
    progress: float
    actual: dict[str, Any]
    failures: list[dict[str, Any]]

    @property
    def finished(self) -> bool:
        return self.batch.finished_at is not None

    def as_json(self) -> dict[str, Any]:
        b = self.batch
        return {
            "id": str(b.id),
            "status": b.status,
            "rubric_id": str(b.rubric_id),
            "rubric_version": b.rubric_version.number,
            "judge_model": b.judge_model,
            "force": b.force,
            "scope": b.scope,
            "total": self.total,
            "counts": self.counts,
            "done": self.done,
            "progress": self.progress,
            "estimate": b.estimate,
            "actual": self.actual,
            "failures": self.failures,
            "created_at": b.created_at.isoformat(),
            "started_at": b.started_at.isoformat() if b.started_at else None,
            "finished_at": b.finished_at.isoformat() if b.finished_at else None,
            "cancelled_at": b.cancelled_at.isoformat() if b.cancelled_at else None,
            "webhook_url": b.webhook_url,
            "webhook_delivered_at": (
                b.webhook_delivered_at.isoformat() if b.webhook_delivered_at else None
            ),
            "webhook_error": b.webhook_error,
        }


FAILURES_SHOWN = 50
BATCH_FINAL = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)


def batch_get(*, team: Team, batch_id: Any) -> RescoreBatch | None:
    """One re-score batch of the team (with its rubric and version), or None."""
    try:
        key = uuid.UUID(str(batch_id))
    except ValueError:
        return None
    return (
        RescoreBatch.objects.select_related("rubric", "rubric_version")
        .filter(team=team, pk=key)
        .first()
    )


@dataclass(frozen=True)
class BatchPage:
    items: list[RescoreBatch]
    next_cursor: str | None


def batches_list(
    *,
    team: Team,
    status: str | None = None,
    rubric: str | None = None,
    cursor: str | None = None,
    limit: int | None = None,
) -> BatchPage:
    """The team's batches, newest first (keyset on created_at, id); one query. ``rubric`` is an
    id or slug; ``cursor`` is the previous page's ``next_cursor``."""
    size = page_size(limit)
    qs = RescoreBatch.objects.filter(team=team).select_related("rubric", "rubric_version")
    if status:
        qs = qs.filter(status=status)
    if rubric:
        qs = qs.filter(_rubric_q("rubric", rubric))
    if cursor:
        qs = qs.filter(_after(cursor))
    rows = list(qs.order_by("-created_at", "-id")[: size + 1])
    items = rows[:size]
    more = len(rows) > size
    last = items[-1] if more else None
    return BatchPage(
        items=items,
        next_cursor=cursor_encode(last.created_at.isoformat(), last.id) if last else None,
    )


def batch_progress(*, batch: RescoreBatch) -> BatchProgress:
    """Counts, progress, actual usage and failures of one batch: two queries."""
    return batches_progress(batches=[batch], with_failures=True)[batch.pk]


def batches_progress(
    *, batches: list[RescoreBatch], with_failures: bool = False
) -> dict[Any, BatchProgress]:
    """Progress of several batches (a list page) in one query, plus one for failures."""
    stats: dict[Any, dict[str, Any]] = {b.pk: _empty_stats() for b in batches}
    rows = (
        Evaluation.objects.filter(batch_id__in=list(stats))
        .values("batch_id", "status")
        .annotate(
            n=Count("id"),
            calls=Sum("judge_calls"),
            judged=Sum("criteria_judged"),
            reused=Sum("criteria_reused"),
            prompt=Sum("prompt_tokens"),
            completion=Sum("completion_tokens"),
            spent=Sum("cost"),
        )
    )
    for row in rows:
        _add_row(stats[row["batch_id"]], row)
    failures = _batch_failures(batches[0]) if with_failures and len(batches) == 1 else []
    return {b.pk: _progress(b, stats[b.pk], failures) for b in batches}


def _empty_stats() -> dict[str, Any]:
    return {
        "counts": {s: 0 for s in Status.values},
        "judge_calls": 0,
        "criterion_judgements": 0,
        "criteria_reused": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost": None,
    }


def _add_row(stats: dict[str, Any], row: Any) -> None:
    stats["counts"][row["status"]] = row["n"]
    stats["judge_calls"] += row["calls"] or 0
    stats["criterion_judgements"] += row["judged"] or 0
    stats["criteria_reused"] += row["reused"] or 0
    stats["prompt_tokens"] += row["prompt"] or 0
    stats["completion_tokens"] += row["completion"] or 0
    if row["spent"] is not None:
        stats["cost"] = (stats["cost"] or 0.0) + row["spent"]


def _batch_failures(batch: RescoreBatch) -> list[dict[str, Any]]:
    rows = (
        Evaluation.objects.filter(batch=batch, status=Status.FAILED)
        .order_by("-finished_at")
        .values_list("id", "run_id", "error")[:FAILURES_SHOWN]
    )
    return [{"evaluation_id": str(e), "run_id": str(r), "error": err} for e, r, err in rows]


def _progress(batch: RescoreBatch, stats: dict[str, Any], failures: list) -> BatchProgress:
    counts = stats.pop("counts")
    total = sum(counts.values())
    done = sum(counts[s] for s in BATCH_FINAL)
    actual = stats | {"tokens": stats["prompt_tokens"] + stats["completion_tokens"]}
    return BatchProgress(
        batch=batch, counts=counts, total=total, done=done,
        progress=done / total if total else 1.0, actual=actual, failures=failures,
    )  # fmt: skip
