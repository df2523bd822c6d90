"""Judge usage over a bounded date range: per day, per rubric and per judge model
(GET /api/usage). Three grouped queries over the team's evaluations, by the UTC day they were
created (the eval_team_day_usage index serves the per-day one)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from evalsite.errors import FieldErrors
from runs.models import Evaluation
from teams.models import Team

USAGE_MAX_DAYS = 92
USAGE_DEFAULT_DAYS = 30


class UsageRangeError(FieldErrors):
    location = "query"


@dataclass(frozen=True)
class UsageReport:
    start: date
    end: date
    days: list[dict[str, Any]]
    rubrics: list[dict[str, Any]]
    models: list[dict[str, Any]]


def usage_range(start: date | None, end: date | None) -> tuple[date, date]:
    """The range asked for (inclusive, UTC days): by default the last 30 days; a 422 naming
    ``end`` when it is before ``start``, ``start`` when the range is over 92 days."""
    end = end or timezone.now().astimezone(UTC).date()
    start = start or end - timedelta(days=USAGE_DEFAULT_DAYS - 1)
    if end < start:
        raise UsageRangeError({"end": "must be on or after start"})
    if (end - start).days + 1 > USAGE_MAX_DAYS:
        raise UsageRangeError({"start": f"the range may span at most {USAGE_MAX_DAYS} days"})
    return start, end


NAMES = ("evaluations", "calls", "prompt", "completion", "cost", "unpriced")


def _totals() -> dict[str, Any]:
    # Named apart from the model's fields: an annotation named like one would replace it in
    # the filter below.
    return {
        "n_evaluations": Count("id"),
        "n_calls": Sum("judge_calls"),
        "n_prompt": Sum("prompt_tokens"),
        "n_completion": Sum("completion_tokens"),
        "n_cost": Sum("cost"),
        # Judged, but the cost of the calls is unknown: their tokens count, their cost cannot.
        "n_unpriced": Count("id", filter=Q(cost__isnull=True, judge_calls__gt=0)),
    }


def _row(values: dict[str, Any]) -> dict[str, Any]:
    totals = {name: values.pop(f"n_{name}") for name in NAMES}
    prompt, completion = totals["prompt"] or 0, totals["completion"] or 0
    return {
        **values,
        "evaluations": totals["evaluations"],
        "calls": totals["calls"] or 0,
        "cost": totals["cost"],
        "unpriced": totals["unpriced"],
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "tokens": prompt + completion,
    }


def _named(row: dict[str, Any]) -> dict[str, Any]:
    row["rubric_name"] = row.pop("rubric__name")
    return row


def usage_report(*, team: Team, start: date | None = None, end: date | None = None) -> UsageReport:
    first, last = usage_range(start, end)
    since = datetime.combine(first, time.min, tzinfo=UTC)
    until = datetime.combine(last + timedelta(days=1), time.min, tzinfo=UTC)
    rows = Evaluation.objects.filter(team=team, created_at__gte=since, created_at__lt=until)
    days = (
        rows.annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values("day")
        .annotate(**_totals())
        .order_by("day")
    )
    rubrics = (
        rows.values("rubric_id", "rubric__name")
        .annotate(**_totals())
        .order_by("rubric__name", "rubric_id")
    )
    models = rows.values("judge_model").annotate(**_totals()).order_by("judge_model")
    return UsageReport(
        start=first,
        end=last,
        days=[_row(dict(r)) for r in days],
        rubrics=[_row(_named(dict(r))) for r in rubrics],
        models=[_row(dict(r)) for r in models],
    )
