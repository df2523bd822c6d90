"""Each team's default rubric per ``service.name``: what judges runs whose spans name none."""

from __future__ import annotations

from evalsite.errors import FieldErrors
from rubrics.models import Rubric
from rubrics.selectors import rubric_get
from teams.models import Team

from .models import OtelServiceRubric


class ServiceRubricError(FieldErrors):
    """A service default that cannot be set (unknown or archived rubric, blank name)."""


def otel_services_list(*, team: Team) -> list[OtelServiceRubric]:
    return list(OtelServiceRubric.objects.filter(team=team).select_related("rubric"))


def otel_service_set(
    *, team: Team, service_name: str, rubric: str | None
) -> OtelServiceRubric | None:
    """Set (or with ``rubric`` None, clear) the default rubric of runs of ``service_name``."""
    name = service_name.strip()
    if not name:
        raise ServiceRubricError({"service_name": "name the service (its service.name)"})
    if rubric is None or not rubric.strip():
        OtelServiceRubric.objects.filter(team=team, service_name=name).delete()
        return None
    found = rubric_get(team=team, ref=rubric.strip(), with_criteria=False)
    if found is None:
        raise ServiceRubricError({"rubric": f"no rubric {rubric.strip()!r} in this team"})
    if found.archived_at is not None:
        raise ServiceRubricError({"rubric": f"rubric {found.slug!r} is archived"})
    row, _ = OtelServiceRubric.objects.update_or_create(
        team=team, service_name=name, defaults={"rubric": found}
    )
    return row


def otel_rubric_choices(*, team: Team, limit: int = 200) -> list[tuple[str, str]]:
    """(slug, name) of the team's active rubrics, by name: what the settings page offers."""
    rows = Rubric.objects.filter(team=team, archived_at__isnull=True).order_by("name")
    return list(rows.values_list("slug", "name")[:limit])
