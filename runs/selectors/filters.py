"""The runs list's filters: validated from a query, applied to a team's runs."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import Q, QuerySet
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalsite.errors import FieldErrors
from judge_engine.rules import WHOLE_STATUS
from teams.models import Team

from ..models import (
    AgentRun,
    CriterionVerdict,
    RunTool,
    StatusChoice,
)

DATE_ONLY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class RunFilterError(FieldErrors):
    """Invalid filter values; ``errors`` maps each query parameter to a message."""

    location = "query"


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
    passed: bool | None = Field(
        default=None,
        description="Current rubric result passed or not (only succeeded runs have one)",
    )
    failing_criterion: str | None = Field(
        default=None,
        max_length=32,
        description="Criterion id (e.g. c3) whose current verdict is unsatisfied",
    )
    status: StatusChoice | None = Field(default=None, description="Evaluation status of the run")
    agent: str | None = Field(default=None, max_length=200)
    tool: str | None = Field(
        default=None, max_length=200, description="Tool name the run called (e.g. refund)"
    )
    since: datetime | None = Field(default=None, description="Created at or after")
    until: datetime | None = Field(default=None, description="Created before")
    q: str | None = Field(
        default=None, max_length=200, description="Text in external_id, task or output"
    )

    @field_validator("rubric", "failing_criterion", "agent", "tool", "q")
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


def result_passed_q(passed: bool) -> Q:
    """Runs whose result (judge_engine.rules.run_result) has this ``passed``, in SQL: only a
    succeeded run has one, whatever its stored column still holds."""
    return Q(status=WHOLE_STATUS, passed=passed)


def _filtered(team: Team, f: RunFilters) -> QuerySet[AgentRun]:
    qs = AgentRun.objects.filter(team=team, **_column_lookups(f))
    if f.rubric:
        qs = qs.filter(rubric_q("rubric", f.rubric))
    if f.passed is not None:
        qs = qs.filter(result_passed_q(f.passed))
    if f.failing_criterion:
        qs = qs.filter(pk__in=_failing_runs(team, f))
    if f.tool:
        qs = qs.filter(pk__in=_runs_calling(team, f))
    if f.q:
        qs = qs.filter(
            Q(external_id__icontains=f.q)
            | Q(task_text__icontains=f.q)
            | Q(output_text__icontains=f.q)
        )
    return qs


def _column_lookups(f: RunFilters) -> dict[str, Any]:
    """The filters that are one lookup on the run's own columns, for those given."""
    lookups = {
        "current_version__number": f.version,
        "status": f.status or None,
        "agent": f.agent or None,
        "created_at__gte": f.since or None,
        "created_at__lt": f.until or None,
    }
    return {name: value for name, value in lookups.items() if value is not None}


def rubric_q(field: str, ref: str) -> Q:
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
        verdicts = verdicts.filter(rubric_q("rubric", f.rubric))
    if f.since:
        verdicts = verdicts.filter(run_created_at__gte=f.since)
    if f.until:
        verdicts = verdicts.filter(run_created_at__lt=f.until)
    return verdicts.values("run_id")


def _runs_calling(team: Team, f: RunFilters) -> QuerySet[RunTool, Any]:
    """Ids of runs that called the tool, read from run_tool_team_newest (team, tool,
    run_created_at): one row per run and tool, so a run that called it twice is listed once."""
    calls = RunTool.objects.filter(team=team, tool=f.tool)
    if f.since:
        calls = calls.filter(run_created_at__gte=f.since)
    if f.until:
        calls = calls.filter(run_created_at__lt=f.until)
    return calls.values("run_id")


RECENT_TOOL_RUNS = 1_000
RECENT_TOOLS_SHOWN = 100


def tools_recent(*, team: Team) -> list[str]:
    """The tool names called by the team's newest 1,000 runs (at most 100, by name): what the
    tool filter offers. One bounded query: the newest runs come from run_team_newest, their
    tools from run_tool_unique (run, tool)."""
    newest = AgentRun.objects.filter(team=team).order_by("-created_at", "-id").values("id")
    names = (
        RunTool.objects.filter(run_id__in=newest[:RECENT_TOOL_RUNS])
        .values_list("tool", flat=True)
        .distinct()
        .order_by("tool")[:RECENT_TOOLS_SHOWN]
    )
    return list(names)


def runs_matching(*, team: Team, filters: RunFilters) -> QuerySet[AgentRun]:
    """Every run of the team that the runs list would show for ``filters`` (unordered,
    unpaginated): the scope of a filtered re-score."""
    return _filtered(team, filters)
