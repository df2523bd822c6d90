"""Reads for rubrics and their versions, always scoped to a team (another team's rubric is
None, which callers turn into a 404).

The API's reads come first; the dashboard's reads (rubric_rows, rubric_versions, version
diffs, failure rates, ...) belong below them.
"""

from __future__ import annotations

import difflib
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Max, Prefetch, Q, QuerySet
from django.utils import timezone

from evalsite.pagination import InvalidCursor, cursor_decode, cursor_encode, page_size
from teams.models import Team

from .models import Criterion, Rubric, RubricVersion


@dataclass(frozen=True)
class Page:
    items: list[Any]
    next_cursor: str | None


def _ordered_criteria() -> QuerySet[Criterion]:
    return Criterion.objects.order_by("position")


def _with_current_version(qs: QuerySet[Rubric]) -> QuerySet[Rubric]:
    return qs.select_related("current_version", "judge_connection").prefetch_related(
        Prefetch("current_version__criteria", queryset=_ordered_criteria())
    )


def rubrics_list(
    *,
    team: Team,
    include_archived: bool = False,
    cursor: str | None = None,
    limit: int | None = None,
) -> Page:
    """A page of the team's rubrics by name, each with its current version and criteria
    (two queries whatever the page size). Keyset pagination on (name, id)."""
    size = page_size(limit)
    qs = Rubric.objects.filter(team=team)
    if not include_archived:
        qs = qs.filter(archived_at__isnull=True)
    if cursor:
        name, rubric_id = cursor_decode(cursor, size=2)
        qs = qs.filter(Q(name__gt=name) | Q(name=name, id__gt=_uuid_or_invalid(rubric_id)))
    rows = list(_with_current_version(qs).order_by("name", "id")[: size + 1])
    items = rows[:size]
    more = len(rows) > size
    return Page(items, cursor_encode(items[-1].name, items[-1].id) if more else None)


def _uuid_or_invalid(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError as exc:
        raise InvalidCursor("not a cursor returned by this list") from exc


def rubric_get(*, team: Team, ref: str) -> Rubric | None:
    """The team's rubric named by its id or its slug, with its current version's criteria."""
    qs = _with_current_version(Rubric.objects.filter(team=team))
    try:
        return qs.filter(id=uuid.UUID(ref)).first()
    except ValueError:
        return qs.filter(slug=ref).first()


def rubric_versions_page(
    *, rubric: Rubric, cursor: str | None = None, limit: int | None = None
) -> Page:
    """A page of the rubric's versions, newest first, each with its criteria."""
    size = page_size(limit)
    qs = rubric.versions.all()
    if cursor:
        (number,) = cursor_decode(cursor, size=1)
        if not number.isdigit():
            raise InvalidCursor("not a cursor returned by this list")
        qs = qs.filter(number__lt=int(number))
    rows = list(
        qs.prefetch_related(Prefetch("criteria", queryset=_ordered_criteria())).order_by("-number")[
            : size + 1
        ]
    )
    items = rows[:size]
    return Page(items, cursor_encode(items[-1].number) if len(rows) > size else None)


def rubric_version_get(*, rubric: Rubric, number: int) -> RubricVersion | None:
    return (
        rubric.versions.prefetch_related(Prefetch("criteria", queryset=_ordered_criteria()))
        .filter(number=number)
        .first()
    )


# --- Dashboard reads (rubrics/views.py) -------------------------------------------------------

PASS_RATE_WINDOW = timedelta(days=30)


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
    """The rubric list: current version, criteria count, and over the last 30 days the pass
    rate and the newest run. Three queries whatever the number of rubrics; the run counts are
    an index-only scan of the window (run_team_day_result)."""
    from runs.models import AgentRun

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
    since = timezone.now() - PASS_RATE_WINDOW
    stats = (
        AgentRun.objects.filter(team=team, created_at__gte=since, rubric_id__in=list(rows))
        .values("rubric_id")
        .annotate(
            judged=Count("created_at", filter=Q(passed__isnull=False)),
            passed=Count("created_at", filter=Q(passed=True)),
            last=Max("created_at"),
        )
        .order_by()
    )
    for s in stats:
        row = rows[s["rubric_id"]]
        row.judged, row.passed, row.last_run_at = s["judged"], s["passed"], s["last"]
    for row in rows.values():
        version_id = row.rubric.current_version_id
        row.criteria_count = counts.get(version_id, 0) if version_id else 0
    return list(rows.values())


def version_criteria(*, version_id: Any) -> list[Criterion]:
    if not version_id:
        return []
    return list(Criterion.objects.filter(version_id=version_id).order_by("position"))


TRY_RUNS = 30


def rubric_try_runs(*, rubric: Rubric) -> list[Any]:
    """Runs to pick from in the "try it" panel: this rubric's newest, else the team's."""
    from runs.models import AgentRun

    fields = ("id", "external_id", "agent", "created_at", "passed", "task_text")
    runs = list(
        AgentRun.objects.filter(team_id=rubric.team_id, rubric=rubric).only(*fields)[:TRY_RUNS]
    )
    return runs or list(AgentRun.objects.filter(team_id=rubric.team_id).only(*fields)[:TRY_RUNS])


def rubric_try_run(*, rubric: Rubric, run_id: Any) -> Any:
    """One of the team's runs, or None (another team's id is just not found)."""
    import uuid

    from runs.models import AgentRun

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
    it (distinct runs with a succeeded evaluation). Two queries."""
    from runs.models import Evaluation, Status

    versions = list(
        RubricVersion.objects.filter(rubric=rubric)
        .select_related("created_by")
        .annotate(criteria_count=Count("criteria"))
        .order_by("-number")
    )
    # Read from the eval_version_runs index alone (the evaluation rows are wide).
    judged = dict(
        Evaluation.objects.filter(
            rubric_version_id__in=[v.id for v in versions], status=Status.SUCCEEDED
        )
        .values("rubric_version_id")
        .annotate(n=Count("run_id", distinct=True))
        .order_by()
        .values_list("rubric_version_id", "n")
    )
    return [VersionRow(v, v.criteria_count, judged.get(v.id, 0)) for v in versions]  # type: ignore[attr-defined]


@dataclass
class DiffEntry:
    """One criterion key's change between two versions. ``kind`` is added, removed, reworded,
    required_changed or unchanged; a reworded criterion may also have changed its flag."""

    kind: str
    key: str
    old: Criterion | None = None
    new: Criterion | None = None
    required_changed: bool = False
    words: list[tuple[str, str]] = field(default_factory=list)


def rubric_version_diff(*, rubric: Rubric, old_number: int, new_number: int) -> list[DiffEntry]:
    """Compare two versions by stable criterion key (one query). Unknown numbers give []."""
    rows = Criterion.objects.filter(
        version__rubric=rubric, version__number__in=[old_number, new_number]
    ).select_related("version")
    old = {c.key: c for c in rows if c.version.number == old_number}
    new = {c.key: c for c in rows if c.version.number == new_number}
    entries = [_diff_entry(key, old.get(key), new.get(key)) for key in _diff_order(old, new)]
    return entries


def _diff_order(old: dict[str, Criterion], new: dict[str, Criterion]) -> list[str]:
    # New version's order first, then what was removed in the old version's order.
    keys = [c.key for c in sorted(new.values(), key=lambda c: c.position)]
    keys += [c.key for c in sorted(old.values(), key=lambda c: c.position) if c.key not in new]
    return keys


def _diff_entry(key: str, old: Criterion | None, new: Criterion | None) -> DiffEntry:
    if old is None:
        return DiffEntry("added", key, new=new)
    if new is None:
        return DiffEntry("removed", key, old=old)
    flag = old.required != new.required
    if old.description != new.description:
        return DiffEntry(
            "reworded", key, old, new, flag, _word_diff(old.description, new.description)
        )
    return DiffEntry("required_changed" if flag else "unchanged", key, old, new, flag)


def _word_diff(a: str, b: str) -> list[tuple[str, str]]:
    """Word-level changes as (op, text) with op in "=", "-", "+"."""
    old, new = a.split(" "), b.split(" ")
    out: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append(("=", " ".join(old[i1:i2])))
            continue
        if i2 > i1:
            out.append(("-", " ".join(old[i1:i2])))
        if j2 > j1:
            out.append(("+", " ".join(new[j1:j2])))
    return out


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
    current verdicts come from that version, most failed first. Two queries."""
    from runs.models import CriterionVerdict

    criteria = version_criteria(version_id=version.id)
    # Criterion rows belong to one version of this rubric, so their ids scope the count; it
    # is read from the verdict_criterion_stats index alone.
    stats: dict[Any, dict[str, Any]] = {
        row["criterion_id"]: dict(row)
        for row in CriterionVerdict.objects.filter(
            criterion_id__in=[c.id for c in criteria], is_current=True
        )
        .values("criterion_id")
        .annotate(
            judged=Count("criterion_id"),
            failed=Count("criterion_id", filter=Q(satisfied=False)),
        )
        .order_by()
    }
    rows = [
        CriterionFailures(
            c, stats.get(c.id, {}).get("judged", 0), stats.get(c.id, {}).get("failed", 0)
        )
        for c in criteria
    ]
    return sorted(rows, key=lambda r: (-r.failed, -(r.rate or 0), r.criterion.position))


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
    (run_created_at, run_id). Without ``run_id`` the walk starts at the newest. Five queries."""
    from runs.models import CriterionVerdict

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
    return FailingRunStep(
        verdict=verdict,
        newer_run_id=newer_id,
        older_run_id=older_id,
        position=failing.filter(newer).count() + 1,
        total=failing.count(),
    )
