"""Comparisons and the publishing gate: /api/comparisons, /api/rubrics/{id}/drafts,
/api/rubrics/{id}/gate and /api/rubrics/{id}/versions/{n}/publish.

A comparison answers 202 with its report (progress included) and fills in as its two batches
run; ``dry_run`` answers 200 with the estimate of both sides. Publishing a draft under a gate
is asynchronous: 202 ``{"state": "checking"}`` until the gate check ends, then 200 (published)
or 409 with the comparison report.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Literal
from uuid import UUID

from django.http import Http404, HttpRequest, HttpResponse
from ninja import Field, Header, Path, Query, Router, Schema, Status
from pydantic import ConfigDict

from evalsite.schemas import INT_MAX, SignedAmount, with_errors
from judging.services.rescore_scope import RescoreScope
from reviews.selectors.compare import (
    comparison_export_rows,
    comparison_report,
    comparison_report_json,
)
from reviews.services.gate import gate_set, publish_request
from rubrics.drafts import draft_create
from rubrics.models import RubricVersion
from rubrics.selectors import rubric_get
from teams.api import caller, editor

from .services.compare import SampleIn, SideIn, comparison_start
from .services.comparisons import comparison_get

router = Router(tags=["comparisons"])

IdempotencyKey = Header(
    None,
    alias="Idempotency-Key",
    max_length=200,
    description="Retrying with the same key returns the same comparison instead of a new one",
)


class DraftIn(Schema):
    model_config = ConfigDict(extra="forbid")
    criteria: str | list[Any] = Field(description="Text (one per line) or a list of objects")
    judge_view: Literal["final", "conversation", "trajectory"] | None = None
    run_token_budget: int | None = Field(None, ge=1000, le=1_000_000)
    instructions: str | None = Field(None, description="Default: the current version's")
    note: str = Field("", max_length=300)


class SideSchema(Schema):
    model_config = ConfigDict(extra="forbid")
    version: int | None = Field(None, ge=1, le=INT_MAX, description="Default: current")
    judge: str | None = Field(None, max_length=200, description="Another judge model")
    draft: DraftIn | None = Field(None, description="Criteria not published: saved as a draft")


class SampleSchema(Schema):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["latest", "filter", "runs", "golden", "labelled"] = "latest"
    n: int = Field(50, ge=1, le=5_000, description="kind=latest: the newest n runs")
    runs: list[UUID] | None = Field(None, max_length=20_000, description="kind=runs")
    version: int | None = Field(None, ge=1, le=INT_MAX, description="kind=filter")
    failed_only: bool = False
    criterion_id: str | None = Field(None, max_length=32)


class ComparisonIn(Schema):
    model_config = ConfigDict(extra="forbid")
    rubric: str = Field(max_length=200, description="Rubric id or slug")
    a: SideSchema | None = Field(None, description="Baseline (default: the current version)")
    b: SideSchema = Field(description="Candidate: a version, a draft and/or another judge")
    sample: SampleSchema | None = Field(None, description="Default: the 50 newest runs")
    dry_run: bool = Field(False, description="Answer 200 with the estimate; queue nothing")


class GateIn(Schema):
    model_config = ConfigDict(extra="forbid")
    min_agreement: SignedAmount | None = Field(None, description="Per criterion of the draft, 0..1")
    min_kappa: SignedAmount | None = Field(None, description="Per criterion of the draft, -1..1")
    max_drop: SignedAmount | None = Field(
        None, description="Largest agreement drop vs current, 0..1"
    )


class PublishIn(Schema):
    model_config = ConfigDict(extra="forbid")
    override_reason: str | None = Field(
        None, max_length=500, description="Owners: publish a draft that failed the gate"
    )


def _rubric(request: HttpRequest, ref: str) -> Any:
    found = rubric_get(team=caller(request).team, ref=ref, with_criteria=False)
    if found is None:
        raise Http404("No such rubric")
    return found


def _side(side: SideSchema) -> SideIn:
    draft = side.draft.model_dump(exclude_none=True) if side.draft is not None else None
    return SideIn(version=side.version, judge=side.judge or "", draft=draft)


def _sample(sample: SampleSchema) -> SampleIn:
    filters = RescoreScope(
        version=sample.version, failed_only=sample.failed_only, criterion=sample.criterion_id
    )
    runs = tuple(sample.runs or ())
    return SampleIn(kind=sample.kind, n=sample.n, runs=runs, filters=filters)


@router.post(
    "/comparisons",
    response=with_errors({200: dict[str, Any], 202: dict[str, Any]}, 404, 409),
    operation_id="comparison_create",
)
def comparison_create(
    request: HttpRequest, payload: ComparisonIn, idempotency_key: str | None = IdempotencyKey
):
    """Judge side b (a version, a draft, another judge) and side a (default: the current
    version) on the same sample of runs. 202 with the report; 200 with the estimate for
    `dry_run`."""
    who = editor(request)
    rubric = _rubric(request, payload.rubric)
    comparison, estimate, _ = comparison_start(
        team=who.team, rubric=rubric, a=_side(payload.a or SideSchema.model_validate({})),
        b=_side(payload.b), sample=_sample(payload.sample or SampleSchema.model_validate({})),
        idempotency_key=idempotency_key, dry_run=payload.dry_run, user=who.user,
    )  # fmt: skip
    if comparison is None:
        return Status(200, {"estimate": estimate})
    return Status(202, comparison_report_json(comparison_report(comparison=comparison)))


def _comparison(request: HttpRequest, comparison_id: UUID) -> Any:
    found = comparison_get(team=caller(request).team, comparison_id=comparison_id)
    if found is None:
        raise Http404("No such comparison")
    return found


@router.get(
    "/comparisons/{comparison_id}",
    response=with_errors({200: dict[str, Any]}, 404),
    operation_id="comparison_get",
)
def comparison_read(request: HttpRequest, comparison_id: UUID):
    """The report: per criterion flips both ways, pass rates and agreement with human labels
    on both sides, run-level flips, progress, tokens and cost of each side."""
    comparison = _comparison(request, comparison_id)
    return comparison_report_json(comparison_report(comparison=comparison))


class ExportQuery(Schema):
    format: Literal["csv", "jsonl"] = "csv"


EXPORT_DOC = {
    "responses": {
        200: {
            "description": "One row per run and criterion (CSV, or JSON Lines with format=jsonl)",
            "content": {
                "text/csv": {"schema": {"type": "string"}},
                "application/x-ndjson": {"schema": {"type": "string"}},
            },
        }
    }
}


@router.get(
    "/comparisons/{comparison_id}/export",
    response=with_errors({}, 404),
    openapi_extra=EXPORT_DOC,
    operation_id="comparison_export",
)
def comparison_export(request: HttpRequest, comparison_id: UUID, q: Query[ExportQuery]):
    """One row per run and criterion: run_id, run, criterion_id, a, b, flipped, human."""
    report = comparison_report(comparison=_comparison(request, comparison_id))
    return export_response(report, q.format)


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    """Spreadsheets run cells that start like a formula (an external id may): quote them."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def export_response(report: Any, fmt: str) -> HttpResponse:
    rows = list(comparison_export_rows(report))
    name = f"comparison-{report.comparison.pk}.{fmt}"
    if fmt == "jsonl":
        text = "".join(json.dumps(row) + "\n" for row in rows)
        response = HttpResponse(text, content_type="application/x-ndjson")
    else:
        out = io.StringIO()
        fields = ["run_id", "run", "criterion_id", "a", "b", "flipped", "human"]
        writer = csv.DictWriter(out, fieldnames=fields)
        writer.writeheader()
        writer.writerows({k: _cell(v) for k, v in row.items()} for row in rows)
        response = HttpResponse(out.getvalue(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@router.post(
    "/rubrics/{rubric_ref}/drafts",
    response=with_errors({200: dict[str, Any], 201: dict[str, Any]}, 404),
    operation_id="rubric_draft_create",
)
def rubric_draft(request: HttpRequest, rubric_ref: str, payload: DraftIn):
    """Save criteria (and what the judge sees) as a draft: a version that is not published.
    The same draft again answers 200 with the first one."""
    who = editor(request)
    rubric = _rubric(request, rubric_ref)
    draft, created = draft_create(
        rubric=rubric, user=who.user, **payload.model_dump(exclude_none=True)
    )
    return Status(201 if created else 200, _version_json(draft))


def _version_json(version: RubricVersion) -> dict[str, Any]:
    return {
        "number": version.number,
        "published": version.published,
        "gate_note": version.gate_note,
        "judge_view": version.judge_view,
        "run_token_budget": version.run_token_budget,
        "criteria": [
            {"key": c.key, "description": c.description, "required": c.required}
            for c in version.criteria.order_by("position")
        ],
    }


@router.put(
    "/rubrics/{rubric_ref}/gate",
    response=with_errors({200: dict[str, Any]}, 404),
    operation_id="rubric_gate_set",
)
def rubric_gate(request: HttpRequest, rubric_ref: str, payload: GateIn):
    """Set the publishing gate (every bound null: no gate). Refused (422) on a rubric no
    reviewer has labelled yet."""
    editor(request)
    rubric = gate_set(rubric=_rubric(request, rubric_ref), **payload.model_dump())
    return {"gate": rubric.gate}


@router.post(
    "/rubrics/{rubric_ref}/versions/{number}/publish",
    response=with_errors({200: dict[str, Any], 202: dict[str, Any]}, 403, 404, 409),
    operation_id="rubric_version_publish",
)
def rubric_publish(
    request: HttpRequest,
    rubric_ref: str,
    payload: PublishIn,
    number: int = Path(..., ge=1, le=INT_MAX),
):
    """Publish a draft. No gate: at once (200). A gate: 202 "checking" while the draft is
    judged on the golden set (else the labelled runs) next to the current version, 200 once it
    passed and is published, 409 with the comparison report once it failed; an owner may send
    ``override_reason`` to publish it anyway (recorded in the version history)."""
    who = editor(request)
    rubric = _rubric(request, rubric_ref)
    version = RubricVersion.objects.filter(rubric=rubric, number=number).first()
    if version is None:
        raise Http404("No such version")
    outcome = publish_request(
        team=who.team, rubric=rubric, version=version, user=who.user,
        actor_name=_actor_name(who), override_reason=payload.override_reason or "", is_owner=who.can_manage,
    )  # fmt: skip
    answer = {"state": outcome.state, "version": _version_json(outcome.version)}
    if outcome.comparison is not None:
        answer["comparison_id"] = str(outcome.comparison.pk)
    return Status(200 if outcome.state == "published" else 202, answer)


def _actor_name(who: Any) -> str:
    if who.user is not None:
        return who.user.get_username()
    return f"API key {who.api_key.name}" if who.api_key is not None else ""
