"""Staging spans, assembling runs from them, the sweeper, and the per-service default rubrics.

An export stores each span once per (team, trace id, span id): a retried export stores nothing
twice. When a trace's root span arrives (the SDK exports a span once it has ended, and the
root ends last), the trace is assembled EVALSITE_OTEL_ASSEMBLE_DELAY seconds later by a task (0:
in the request itself), so children exported in the same or a slightly later batch join the run:
each topmost ``invoke_agent`` span (else the root) becomes one. An agent span with a parent
waits for the root (the parent may be a supervisor agent still running); a trace whose root
never comes here (its parent lives in another service) is assembled by the sweeper. The run's ``external_id`` is ``otel:<trace id>:<agent span id>``, so assembling again
can never make two runs. Assembled spans are pruned to their ids (tombstones): a span arriving
after its agent's run was made is not added to it (runs are judged as they were stored) and is
answered as rejected in ``partialSuccess``. Every staged span expires after
EVALSITE_OTEL_SPAN_TTL_HOURS (the sweeper), with or without an agent span.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from celery import signature
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from pydantic import ValidationError

from evalsite.errors import FieldErrors, TooLarge
from rubrics.models import Rubric
from rubrics.selectors import rubric_get
from teams.models import Team

from ..models import AgentRun
from ..payloads import RunPayload
from ..services.evaluations import lane
from ..services.ingest import RunConflict, RunTooLarge, run_ingest
from .conventions import normalize
from .convert import (
    AGENT,
    agent_span_ids,
    completes_trace,
    descendants,
    operation_of,
    rubric_ref,
    run_payload,
    service_name,
)
from .decode import OtlpInvalid, Span
from .models import OtelServiceRubric, OtelSpan

logger = logging.getLogger(__name__)

ASSEMBLE_TASK = "runs.tasks.otel_assemble"
# The sweeper assembles traces whose root span waited this much longer than the delay (a task
# lost with a broker that was down) ...
ASSEMBLE_GRACE = timedelta(seconds=60)
# ... and traces whose root never came (a parent in another service) this long after an agent
# span arrived: long enough for a supervisor agent still running to end and be exported.
ROOTLESS_WAIT = timedelta(minutes=10)
SWEEP_CHUNK = 5000


class TraceTooLarge(TooLarge):
    def __init__(self, trace_id: str, size: int) -> None:
        limit = settings.EVALSITE_MAX_RUN_BYTES
        super().__init__(
            f"trace {trace_id} is {size:,} bytes of span attributes and events; the limit is "
            f"{limit:,} (EVALSITE_MAX_RUN_BYTES): nothing of this export was stored",
            extra={"limit": limit, "trace_id": trace_id},
        )


@dataclass(frozen=True)
class ExportResult:
    received: int
    stored: int
    duplicates: int
    # Spans whose agent's run was already made: not added to it.
    late: int

    def rejection(self) -> str:
        if not self.late:
            return ""
        return (
            f"{self.late} span(s) arrived after their agent span's run was assembled and were "
            "not added to it (raise EVALSITE_OTEL_ASSEMBLE_DELAY to wait longer)"
        )


def _size(span: Span) -> int:
    return len(json.dumps([span.attributes, span.events], ensure_ascii=False).encode())


def otel_export(*, team: Team, spans: list[Span]) -> ExportResult:
    """Stage an export's spans and assemble (or schedule) the traces whose agent span came.

    Raises TraceTooLarge (413, nothing stored) when a trace's staged spans would exceed
    EVALSITE_MAX_RUN_BYTES; with no delay, the run's own limit (RunTooLarge) likewise."""
    normalize(spans)
    unique = list({(s.trace_id, s.span_id): s for s in reversed(spans)}.values())[::-1]
    traces = {s.trace_id for s in unique}
    known = _known(team, traces)
    new: list[tuple[Span, int]] = []
    duplicates = late = 0
    parents = {(s.trace_id, s.span_id): s.parent_span_id for s in unique}
    for span in unique:
        if (span.trace_id, span.span_id) in known:
            duplicates += 1
        elif _assembled_ancestor(span, known, parents):
            late += 1
        else:
            new.append((span, _size(span)))
    _check_sizes(team, new)
    ready = sorted({s.trace_id for s, _ in new if completes_trace(s.parent_span_id)})
    delay = settings.EVALSITE_OTEL_ASSEMBLE_DELAY
    with transaction.atomic():
        OtelSpan.objects.bulk_create(
            [_row(team, s, size) for s, size in new], ignore_conflicts=True
        )
        if delay <= 0:
            for trace_id in ready:
                otel_trace_assemble(team=team, trace_id=trace_id, drop_too_large=False)
        else:
            transaction.on_commit(lambda: _schedule(team.pk, ready, delay))
    return ExportResult(len(spans), len(new), duplicates + len(spans) - len(unique), late)


def _known(team: Team, traces: set[str]) -> dict[tuple[str, str], tuple[str, bool]]:
    """(trace, span) → (parent, assembled) of the spans already staged for these traces."""
    rows = OtelSpan.objects.filter(team=team, trace_id__in=traces).values_list(
        "trace_id", "span_id", "parent_span_id", "assembled_at"
    )
    return {(t, s): (p, a is not None) for t, s, p, a in rows}


def _assembled_ancestor(
    span: Span, known: dict[tuple[str, str], tuple[str, bool]], parents: dict[tuple[str, str], str]
) -> bool:
    current, seen = span.parent_span_id, set()
    while current and current not in seen:
        seen.add(current)
        key = (span.trace_id, current)
        if key in known:
            parent, assembled = known[key]
            if assembled:
                return True
            current = parent
        else:
            current = parents.get(key, "")
    return False


def _check_sizes(team: Team, new: list[tuple[Span, int]]) -> None:
    """Each trace's staged and incoming spans: at most EVALSITE_MAX_RUN_BYTES of attributes and
    events, and at most EVALSITE_OTEL_MAX_TRACE_SPANS spans."""
    incoming: dict[str, int] = {}
    counts: dict[str, int] = {}
    for span, size in new:
        incoming[span.trace_id] = incoming.get(span.trace_id, 0) + size
        counts[span.trace_id] = counts.get(span.trace_id, 0) + 1
    limit = settings.EVALSITE_MAX_RUN_BYTES
    for trace_id, size in incoming.items():
        if size > limit:
            raise TraceTooLarge(trace_id, size)
        _check_span_count(trace_id, counts[trace_id])
    staged = OtelSpan.objects.filter(
        team=team, trace_id__in=list(incoming), assembled_at__isnull=True
    ).values_list("trace_id", "size")
    for trace_id, size in staged:
        incoming[trace_id] += size
        counts[trace_id] += 1
        if incoming[trace_id] > limit:
            raise TraceTooLarge(trace_id, incoming[trace_id])
    for trace_id, count in counts.items():
        _check_span_count(trace_id, count)


def _check_span_count(trace_id: str, count: int) -> None:
    limit = settings.EVALSITE_OTEL_MAX_TRACE_SPANS
    if count > limit:
        raise TooLarge(
            f"trace {trace_id} has {count:,} spans; the limit is {limit:,} "
            "(EVALSITE_OTEL_MAX_TRACE_SPANS): nothing of this export was stored",
            extra={
                "limit": limit,
                "setting": "EVALSITE_OTEL_MAX_TRACE_SPANS",
                "trace_id": trace_id,
            },
        )


def _row(team: Team, span: Span, size: int) -> OtelSpan:
    return OtelSpan(
        team=team,
        trace_id=span.trace_id,
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        name=span.name,
        operation=operation_of(span.attributes),
        start_ns=span.start_ns,
        end_ns=span.end_ns,
        attributes=span.attributes,
        events=span.events,
        resource=span.resource,
        status=span.status,
        status_message=span.status_message,
        size=size,
    )


def _schedule(team_id: Any, trace_ids: list[str], delay: float) -> None:
    """One message per export, naming every trace whose agent span it brought."""
    if not trace_ids:
        return
    try:
        signature(ASSEMBLE_TASK, args=[str(team_id), trace_ids]).apply_async(
            countdown=delay, queue=lane(bulk=False)
        )
    except Exception:  # noqa: BLE001 - a broker that is down: the sweeper assembles later
        logger.warning("broker unreachable; %d trace(s) wait for the sweeper", len(trace_ids))


def otel_trace_assemble(
    *, team: Team, trace_id: str, drop_too_large: bool = True
) -> list[AgentRun]:
    """Make the run of every agent span of the trace that has none yet; the runs made.

    A run over EVALSITE_MAX_RUN_BYTES raises RunTooLarge, or with ``drop_too_large`` (a task,
    the sweeper: nobody to answer) is logged and its spans are pruned without a run."""
    made = []
    with transaction.atomic():
        rows = list(
            OtelSpan.objects.select_for_update()
            .filter(team=team, trace_id=trace_id)
            .order_by("start_ns", "span_id")
        )
        by_id = {r.span_id: r for r in rows}
        agents = agent_span_ids((r.span_id, r.parent_span_id, r.operation) for r in rows)
        for agent_id in agents:
            agent = by_id[agent_id]
            if agent.assembled_at is not None:
                continue
            pending = [r for r in rows if r.assembled_at is None]
            tree = descendants(agent_id, pending)
            run = _assemble_one(team, agent, tree, drop_too_large)
            OtelSpan.objects.filter(pk__in=[agent.pk, *(r.pk for r in tree)]).update(
                run=run, assembled_at=timezone.now(), attributes={}, events=[], resource={}
            )
            for r in [agent, *tree]:
                r.assembled_at = timezone.now()
            if run is not None:
                made.append(run)
        # A root span that is not an agent (an HTTP request around one) made no run: prune it,
        # so the sweeper does not come back for it.
        OtelSpan.objects.filter(
            team=team, trace_id=trace_id, parent_span_id="", assembled_at__isnull=True
        ).exclude(span_id__in=agents).update(
            assembled_at=timezone.now(), attributes={}, events=[], resource={}
        )
    return made


def _assemble_one(
    team: Team, agent: OtelSpan, tree: list[OtelSpan], drop_too_large: bool
) -> AgentRun | None:
    data = run_payload(agent, tree)
    rubric, problem = _rubric_for(team, agent)
    if problem:
        data["metadata"]["evalsite.rubric_error"] = problem
    try:
        payload = RunPayload.model_validate(data | {"rubric": str(rubric.pk) if rubric else None})
    except ValidationError as exc:
        if not drop_too_large:
            raise OtlpInvalid(f"trace {agent.trace_id} does not make a valid run: {exc}") from exc
        logger.warning("trace %s does not make a valid run; dropped", agent.trace_id)
        return None
    try:
        # A trace arrives with no one to answer: a rubric that can judge nothing marks the run
        # nothing_to_judge rather than losing it.
        run, _ = run_ingest(team=team, payload=payload, refuse_empty=False)
    except RunConflict as exc:
        return exc.run  # assembled elsewhere meanwhile, from fewer spans
    except RunTooLarge:
        if not drop_too_large:
            raise
        logger.warning("trace %s: the run is over EVALSITE_MAX_RUN_BYTES; dropped", agent.trace_id)
        return None
    return run


def _rubric_for(team: Team, agent: OtelSpan) -> tuple[Rubric | None, str]:
    """The span's or resource's ``evalsite.rubric``, else the service's default, else none;
    and what was wrong with a rubric named that cannot judge (the run is stored unjudged)."""
    ref = rubric_ref(agent)
    if ref is None:
        default = (
            OtelServiceRubric.objects.filter(team=team, service_name=service_name(agent))
            .select_related("rubric")
            .first()
        )
        rubric = default.rubric if default else None
        return (rubric, "") if rubric is None or rubric.archived_at is None else (None, "")
    rubric = rubric_get(team=team, ref=ref, with_criteria=False)
    if rubric is None:
        return None, f"no rubric {ref!r} in this team"
    if rubric.archived_at is not None:
        return None, f"rubric {rubric.slug!r} is archived"
    return rubric, ""


def otel_sweep(*, now: datetime | None = None) -> tuple[int, int]:
    """Assemble traces whose assembly task was lost, and delete spans past their time to live
    (EVALSITE_OTEL_SPAN_TTL_HOURS). Returns (runs made, spans deleted)."""
    now = now or timezone.now()
    waited = now - timedelta(seconds=settings.EVALSITE_OTEL_ASSEMBLE_DELAY) - ASSEMBLE_GRACE
    ready = Q(parent_span_id="", received_at__lt=waited) | Q(
        operation=AGENT, received_at__lt=now - ROOTLESS_WAIT
    )
    stuck = list(
        OtelSpan.objects.filter(ready, assembled_at__isnull=True)
        .values_list("team_id", "trace_id")
        .distinct()[:200]
    )
    made = 0
    teams = {t.pk: t for t in Team.objects.filter(pk__in={t for t, _ in stuck})}
    for team_id, trace_id in stuck:
        made += len(otel_trace_assemble(team=teams[team_id], trace_id=trace_id))
    expired = now - timedelta(hours=settings.EVALSITE_OTEL_SPAN_TTL_HOURS)
    deleted = 0
    while True:
        ids = list(
            OtelSpan.objects.filter(received_at__lt=expired).values_list("pk", flat=True)[
                :SWEEP_CHUNK
            ]
        )
        if not ids:
            break
        deleted += OtelSpan.objects.filter(pk__in=ids).delete()[0]
    return made, deleted


# --- Default rubric per service.name ---------------------------------------------------------


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
