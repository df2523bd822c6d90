"""Rubrics: /api/rubrics. ``{rubric}`` in a path is the rubric's id or its slug."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest
from django.urls import register_converter
from ninja import Path, Query, Router, Status

from evalsite.schemas import INT_MAX, with_errors
from runs.selectors.trends import TREND_DAYS, TREND_DAYS_MAX, rubric_trend
from teams.api import Caller, caller, editor

from .models import Rubric
from .schemas import (
    SLUG_PATTERN,
    CriteriaIn,
    CriteriaValue,
    RubricIn,
    RubricOut,
    RubricPageOut,
    RubricPatch,
    TrendOut,
    VersionOut,
    VersionPageOut,
    rubric_out,
    version_out,
)
from .selectors import rubric_get, rubric_version_get, rubric_versions_page, rubrics_list
from .services import (
    RESERVED_SLUGS,
    CriterionInput,
    RubricValidationError,
    criteria_from_any,
    rubric_archive,
    rubric_create,
    rubric_set_criteria,
    rubric_update,
)

router = Router(tags=["rubrics"])

RubricRef = Path(..., max_length=100, pattern=SLUG_PATTERN, description="Rubric id or slug")


class RubricRefSegment:
    """A rubric id or slug in /rubrics/{rubric}: any one path segment but the words of sibling
    routes (/rubrics/draft-from-prompt in reviews.api_draft), so which route answers never
    depends on the order routers are mounted in (tests/api/test_routes_unique.py). New rubrics
    never get those words as slugs (rubrics.services.RESERVED_SLUGS)."""

    regex = rf"(?!(?:{'|'.join(RESERVED_SLUGS)})(?![^/]))[^/]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: object) -> str:
        return str(value)


register_converter(RubricRefSegment, "rubricref")


def _criteria(value: CriteriaValue | None) -> Any:
    if isinstance(value, list):
        return [CriterionInput(c.description, c.required, c.criterion_id) for c in value]
    if isinstance(value, str) and not criteria_from_any(value):
        # Blank lines and headings only: not "no criteria yet" but criteria that say nothing.
        raise RubricValidationError({"criteria": "the text holds no criterion (one per line)"})
    return value


def _found(request: HttpRequest, ref: str) -> Rubric:
    rubric = rubric_get(team=caller(request).team, ref=ref)
    if rubric is None:
        raise Http404("No such rubric in this team")
    return rubric


def _editable(request: HttpRequest, ref: str) -> tuple[Rubric, Caller]:
    """The team's rubric (else 404) and its caller, who must be allowed to write (else 403)."""
    rubric = _found(request, ref)
    return rubric, editor(request)


def _reloaded(request: HttpRequest, rubric: Rubric) -> dict[str, Any]:
    """The rubric as stored, with its current version's criteria (after a write)."""
    return rubric_out(_found(request, str(rubric.id)))


# --- Operations -------------------------------------------------------------------------------


@router.get("", response=with_errors({200: RubricPageOut}))
def list_rubrics(
    request: HttpRequest,
    include_archived: bool = False,
    cursor: str | None = Query(None, max_length=500),
    limit: int = Query(
        50, ge=1, le=INT_MAX, description="Page size, capped at EVALSITE_PAGE_SIZE_MAX"
    ),
):
    """The team's rubrics by name, each with its current version and criteria."""
    page = rubrics_list(
        team=caller(request).team, include_archived=include_archived, cursor=cursor, limit=limit
    )
    return {"items": [rubric_out(r) for r in page.items], "next_cursor": page.next_cursor}


@router.post("", response=with_errors({201: RubricOut}, 400, 413))
def create_rubric(request: HttpRequest, payload: RubricIn):
    """Create a rubric; with criteria it starts at version 1."""
    fields = payload.model_dump(exclude={"criteria", "judge_params"})
    judge_params = (
        payload.judge_params.model_dump(exclude_none=True) if payload.judge_params else None
    )
    who = editor(request)
    rubric = rubric_create(
        team=who.team,
        criteria=_criteria(payload.criteria),
        judge_params=judge_params,
        user=who.user,
        **fields,
    )
    return Status(201, _reloaded(request, rubric))


@router.get("/{rubricref:rubric}", response=with_errors({200: RubricOut}, 404))
def get_rubric(request: HttpRequest, rubric: str = RubricRef):
    return rubric_out(_found(request, rubric))


@router.patch("/{rubricref:rubric}", response=with_errors({200: RubricOut}, 400, 404, 413))
def update_rubric(request: HttpRequest, payload: RubricPatch, rubric: str = RubricRef):
    """Change settings; only the fields sent change. A new `judge_view` or `run_token_budget`
    is a new version with the current criteria (the answer shows it as `current_version`)."""
    found, who = _editable(request, rubric)
    fields = payload.model_dump(exclude_unset=True)
    if "judge_params" in fields:
        fields["judge_params"] = payload.judge_params.model_dump(exclude_none=True)
    updated = rubric_update(rubric=found, user=who.user, **fields)
    return _reloaded(request, updated)


@router.post("/{rubric}/archive", response=with_errors({200: RubricOut}, 404))
def archive_rubric(request: HttpRequest, rubric: str = RubricRef):
    """Archive: new runs can no longer name it; its runs and results stay. Idempotent."""
    found, _ = _editable(request, rubric)
    return _reloaded(request, rubric_archive(rubric=found))


@router.put(
    "/{rubric}/criteria", response=with_errors({200: VersionOut, 201: VersionOut}, 400, 404, 413)
)
def set_criteria(request: HttpRequest, payload: CriteriaIn, rubric: str = RubricRef):
    """Replace the criteria (and, when sent, the judge view and token budget): 201 with the
    new version. The same criteria (text, required flags and order), view and budget as the
    current version's create nothing: 200 with the current one."""
    found, who = _editable(request, rubric)
    version, created = rubric_set_criteria(
        rubric=found,
        criteria=_criteria(payload.criteria),
        user=who.user,
        note=payload.note,
        judge_view=payload.judge_view,
        run_token_budget=payload.run_token_budget,
        instructions=payload.instructions,
    )
    stored = rubric_version_get(rubric=version.rubric, number=version.number)
    return Status(201 if created else 200, version_out(stored))


@router.get("/{rubric}/versions", response=with_errors({200: VersionPageOut}, 404))
def list_versions(
    request: HttpRequest,
    rubric: str = RubricRef,
    cursor: str | None = Query(None, max_length=500),
    limit: int = Query(
        50, ge=1, le=INT_MAX, description="Page size, capped at EVALSITE_PAGE_SIZE_MAX"
    ),
):
    """The rubric's versions, newest first, each with its criteria."""
    page = rubric_versions_page(rubric=_found(request, rubric), cursor=cursor, limit=limit)
    return {"items": [version_out(v) for v in page.items], "next_cursor": page.next_cursor}


@router.get("/{rubric}/versions/{number}", response=with_errors({200: VersionOut}, 404))
def get_version(
    request: HttpRequest,
    rubric: str = RubricRef,
    number: int = Path(..., ge=1, le=INT_MAX),
):
    version = rubric_version_get(rubric=_found(request, rubric), number=number)
    if version is None:
        raise Http404("No such version of this rubric")
    return version_out(version)


@router.get("/{rubric}/trend", response=with_errors({200: TrendOut}, 404))
def get_trend(
    request: HttpRequest,
    rubric: str = RubricRef,
    days: int = Query(TREND_DAYS, ge=1, le=TREND_DAYS_MAX, description="UTC days, today included"),
):
    """The rubric's pass rate per UTC day, one series per rubric version (a run counts on the
    version its result is from; versions never share a series), from the rollups."""
    series = rubric_trend(rubric=_found(request, rubric), days=days)
    return {
        "days": days,
        "series": [
            {
                "version": s.version,
                "took_over": s.took_over,
                "points": [
                    {"day": p.day, "runs": p.runs, "pass_rate": round(p.pass_rate, 4)}
                    for p in s.points
                ],
            }
            for s in series
        ],
    }
