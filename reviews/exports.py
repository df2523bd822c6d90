"""Streamed downloads: rows as CSV (formula cells quoted) or JSON lines, and the runs export's
response (GET /api/runs/export and the runs list's links)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from django.http import StreamingHttpResponse

from runs.selectors.filters import RunFilters
from teams.models import Team

from .selectors.run_export import RUN_EXPORT_FIELDS, run_export_rows

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    """Spreadsheets run cells that start like a formula: quote them (CSV injection)."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def csv_lines(rows: Iterator[dict[str, Any]], fields: list[str]) -> Iterator[str]:
    """A header, then one CSV line per row (``fields`` its columns), formula cells quoted."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields)
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v) for k, v in row.items()})
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def jsonl_lines(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"


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
