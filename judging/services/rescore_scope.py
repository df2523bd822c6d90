"""Re-scoring's targets: which runs a batch re-scores (its scope) and against which version.

Errors name the request field at fault (RescoreValidationError, a 422 in the API). See
judging.services.rescore for batches.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from pydantic import ValidationError

from evalsite.errors import FieldErrors
from rubrics.models import Rubric, RubricVersion
from runs.models import PENDING_STATUSES, AgentRun, Evaluation, Kind, StatusChoice
from runs.selectors import RunFilters, runs_matching
from teams.models import Team

CHUNK = 500  # ids per IN (...) clause: well under SQLite's variable limit


class RescoreValidationError(FieldErrors):
    """Invalid re-score request; ``errors`` maps each field to a message a person can act on."""


@dataclass(frozen=True)
class RescoreScope:
    """Which runs a batch re-scores: explicit ``runs`` (ids of the team, any rubric), else the
    runs of the batch's rubric narrowed by the runs list's filters (all combine with AND)."""

    runs: tuple[uuid.UUID, ...] | None = None
    version: int | None = None  # the run's current result is on this version number
    failed_only: bool = False  # the run's current result did not pass
    criterion: str | None = None  # the current verdict on this criterion key is unsatisfied
    status: StatusChoice | None = None  # the run's status, e.g. not_sampled (sampling left it out)
    since: datetime | None = None  # created at or after
    until: datetime | None = None  # created before

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["runs"] = [str(r) for r in self.runs] if self.runs is not None else None
        for name in ("since", "until"):
            out[name] = out[name].isoformat() if out[name] else None
        if out["status"] is None:
            del out["status"]  # absent as before it existed: earlier request hashes still match
        return out


# --- Scope --------------------------------------------------------------------------------------


def version_for(rubric: Rubric, number: int | None) -> RubricVersion:
    if number is not None:
        found = RubricVersion.objects.filter(rubric=rubric, number=number).first()
        if found is None:
            raise RescoreValidationError({"target_version": f"rubric has no version {number}"})
        return found
    if rubric.current_version_id is None:
        raise RescoreValidationError({"rubric": "this rubric has no criteria yet"})
    return RubricVersion.objects.get(pk=rubric.current_version_id)


def run_rubric(run: AgentRun, rubric: Rubric | None) -> Rubric:
    """The rubric a one-run re-score uses: the one named, else the run's own."""
    rubric = rubric or run.rubric
    if rubric is None:
        raise RescoreValidationError({"rubric": "this run has no rubric: name one"})
    return rubric


def _scope_runs(team: Team, rubric: Rubric, scope: RescoreScope) -> QuerySet[AgentRun]:
    if scope.runs is not None:
        return AgentRun.objects.filter(team=team, pk__in=scope.runs)
    try:
        filters = RunFilters(
            rubric=str(rubric.pk),
            version=scope.version,
            passed=False if scope.failed_only else None,
            failing_criterion=scope.criterion,
            status=scope.status,
            since=scope.since,
            until=scope.until,
        )
    except ValidationError as exc:
        names = {"failing_criterion": "criterion_id"}
        raise RescoreValidationError(
            {names.get(str(e["loc"][0]), str(e["loc"][0])): e["msg"] for e in exc.errors()}
        ) from exc
    return runs_matching(team=team, filters=filters)


def scope_run_ids(team: Team, rubric: Rubric, scope: RescoreScope) -> list[Any]:
    """The scope's run ids, oldest first; errors name the field at fault."""
    if scope.runs is not None and not scope.runs:
        raise RescoreValidationError({"runs": "give at least one run id"})
    if scope.runs is not None and scope != RescoreScope(runs=scope.runs):
        raise RescoreValidationError({"runs": "give either run ids or filters, not both"})
    ids = list(
        _scope_runs(team, rubric, scope)
        .order_by("created_at", "id")
        .values_list("id", flat=True)[: settings.EVALSITE_RESCORE_MAX_RUNS + 1]
    )
    if scope.runs is not None:
        missing = len(set(scope.runs)) - len(ids)
        if missing:
            raise RescoreValidationError(
                {"runs": f"{missing} of these ids name no run of this team"}
            )
    if len(ids) > settings.EVALSITE_RESCORE_MAX_RUNS:
        limit = settings.EVALSITE_RESCORE_MAX_RUNS
        raise RescoreValidationError(
            {
                "runs": f"more than {limit:,} runs match: narrow the filters (EVALSITE_RESCORE_MAX_RUNS)"
            }
        )
    return ids


def chunks(items: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def pending_run_ids(run_ids: Sequence[Any], version: RubricVersion, model: str) -> set[Any]:
    """Runs that already have a queued or running evaluation for this version and judge."""
    found: set[Any] = set()
    for chunk in chunks(run_ids):
        found.update(
            Evaluation.objects.filter(
                run_id__in=chunk,
                kind=Kind.RUBRIC,
                rubric_version=version,
                judge_model=model,
                status__in=PENDING_STATUSES,
                calibration=False,  # consistency checks may judge a run many times at once
            ).values_list("run_id", flat=True)
        )
    return found
