"""The runs export over the API: GET /api/runs/export (mounted before /runs/{run_id})."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from django.http import HttpRequest, StreamingHttpResponse
from ninja import Query, Router

from evalsite.schemas import with_errors
from runs.selectors.filters import RunFilters
from teams.api import caller
from teams.models import Team

from .api import csv_lines, jsonl_lines
from .selectors.run_export import RUN_EXPORT_FIELDS, run_export_rows

router = Router(tags=["runs"])


def _flat(rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """CSV cells: failed criteria space-separated, verdicts as ``c1=pass;c2=fail(human)``."""
    for row in rows:
        verdicts = ";".join(
            f"{v['criterion_id']}={'pass' if v['satisfied'] else 'fail'}"
            + ("(human)" if v["human_satisfied"] is not None else "")
            for v in row["verdicts"]
        )
        yield row | {"criteria_failed": " ".join(row["criteria_failed"]), "verdicts": verdicts}


def runs_export_response(*, team: Team, filters: RunFilters, fmt: str) -> StreamingHttpResponse:
    """The team's runs matching ``filters`` as a streamed CSV or JSONL download."""
    rows = run_export_rows(team=team, filters=filters)
    if fmt == "csv":
        lines, media = csv_lines(_flat(rows), RUN_EXPORT_FIELDS), "text/csv; charset=utf-8"
    else:
        lines, media = jsonl_lines(rows), "application/x-ndjson; charset=utf-8"
    response = StreamingHttpResponse(lines, content_type=media)
    response["Content-Disposition"] = f'attachment; filename="{team.slug}-runs.{fmt}"'
    return response


@router.get(
    "/runs/export",
    response=with_errors({}),
    openapi_extra={
        "responses": {
            200: {
                "description": "One line per run, newest first: " + ", ".join(RUN_EXPORT_FIELDS),
                "content": {
                    "text/csv": {"schema": {"type": "string"}},
                    "application/x-ndjson": {"schema": {"type": "string"}},
                },
            }
        }
    },
)
def export_runs(
    request: HttpRequest,
    filters: Query[RunFilters],
    format: Literal["csv", "jsonl"] = Query("jsonl", description="csv or jsonl"),  # noqa: A002
):
    """The team's runs (the runs list's filters) with their current, human-adjusted result
    and verdicts, streamed as CSV or JSON lines; CSV cells that start like a formula are
    quoted."""
    return runs_export_response(team=caller(request).team, filters=filters, fmt=format)
