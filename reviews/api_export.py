"""The runs export over the API: GET /api/runs/export (never taken for a run id: runs.api.RunRef)."""

from __future__ import annotations

from typing import Literal

from django.http import HttpRequest
from ninja import Query, Router

from evalsite.schemas import with_errors
from runs.selectors.filters import RunFilters
from teams.api import caller

from .exports import runs_export_response
from .selectors.run_export import RUN_EXPORT_FIELDS

router = Router(tags=["runs"])


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
