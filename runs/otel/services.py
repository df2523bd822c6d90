"""Staging spans, answering an export, the sweeper, and the per-service default rubrics.

An export stores each span once per (team, trace id, span id): a retried export stores nothing
twice. When a trace's root span arrives (the SDK exports a span once it has ended, and the
root ends last), the trace is assembled (assemble.py) EVALSITE_OTEL_ASSEMBLE_DELAY seconds later
by a task (0: in the request itself), so children exported in the same or a slightly later
batch join the run: each topmost ``invoke_agent`` span (else the root) becomes one. An agent
span with a parent waits for the root (the parent may be a supervisor agent still running); a
trace whose root never comes here (its parent lives in another service) is assembled by the
sweeper. The run's ``external_id`` is ``otel:<trace id>:<agent span id>``, so assembling again
can never make two runs. A span arriving after its agent's run was made (a straggler) is merged
into the run within EVALSITE_OTEL_LATE_WINDOW (assembled at once, or by the task), and rejected
in the answer after it. What the request can know is answered in OTLP ``partialSuccess``
(rejected spans, or warnings with none rejected): stragglers past the window, a rubric named
that is not usable, and with a delay, a trace whose root came with no content to judge
anywhere (assembled at once, so rejected at once); what a task finds later is recorded for
the team (rejections.py). The sweeper prunes assembled spans to ids after the late window and
deletes every span after EVALSITE_OTEL_SPAN_TTL_HOURS, recording those that never joined a run.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from celery import signature
from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from evalsite.errors import TooLarge
from teams.models import Team

from ..services.evaluations import lane
from . import rejections as say
from .assemble import PRUNED, assembled_above, otel_trace_assemble, rubric_named
from .bounds import check_trace_spans
from .conventions import normalize
from .convert import (
    AGENT,
    agent_span_ids,
    completes_trace,
    descendants,
    operation_of,
    rubric_ref,
    run_payload,
)
from .decode import Span
from .models import OtelSpan
from .service_rubrics import (  # noqa: F401 - the views and API import them from here
    ServiceRubricError,
    otel_rubric_choices,
    otel_service_set,
    otel_services_list,
)

logger = logging.getLogger(__name__)

__all__ = ["ExportResult", "otel_export", "otel_sweep", "otel_trace_assemble"]

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
    """An export's outcome. ``rejected``: spans of this export not stored or that made no run;
    ``message``: why, and warnings about runs stored (non-empty with ``rejected`` 0 then)."""

    received: int
    stored: int
    duplicates: int
    rejected: int
    message: str


class Known(NamedTuple):
    parent: str
    assembled_at: datetime | None
    run_id: Any


def _size(span: Span) -> int:
    return len(json.dumps([span.attributes, span.events], ensure_ascii=False).encode())


def otel_export(*, team: Team, spans: list[Span]) -> ExportResult:
    """Stage an export's spans and assemble (or schedule) the traces whose root or stragglers
    came; the answer's rejections and warnings.

    Raises TraceTooLarge (413, nothing stored) when a trace's staged spans would exceed
    EVALSITE_MAX_RUN_BYTES; with no delay, the run's own limit (RunTooLarge) likewise."""
    normalize(spans)
    unique = list({(s.trace_id, s.span_id): s for s in reversed(spans)}.values())[::-1]
    known = _known(team, {s.trace_id for s in unique})
    now = timezone.now()
    trees = _trees(known, unique)
    new: list[tuple[Span, int]] = []
    late: dict[tuple[str, str], list[Span]] = {}
    stragglers: set[str] = set()
    duplicates = 0
    for span in unique:
        if (span.trace_id, span.span_id) in known:
            duplicates += 1
            continue
        parent_of, assembled = trees[span.trace_id]
        above = assembled_above(span.span_id, parent_of, assembled)
        if above is not None and _past_window(known, span.trace_id, above, now):
            late.setdefault((span.trace_id, above), []).append(span)
            continue
        if above is not None:
            stragglers.add(span.trace_id)  # merged, rejected, or a new agent: assembled now
        new.append((span, _size(span)))
    _check_sizes(team, new)
    refused = [say.late(t, s[0].span_id, len(s), a) for (t, a), s in late.items()]
    ready = {s.trace_id for s, _ in new if completes_trace(s.parent_span_id)} | stragglers
    with transaction.atomic():
        OtelSpan.objects.bulk_create(
            [_row(team, s, size) for s, size in new], ignore_conflicts=True
        )
        answered = _assemble_or_schedule(team, sorted(ready), [s for s, _ in new])
        say.otel_rejections_record(team=team, rejections=refused)
    incoming: dict[str, int] = {}
    for s, _ in new:
        incoming[s.trace_id] = incoming.get(s.trace_id, 0) + 1
    rejected = sum(len(s) for s in late.values()) + _rejected_here(answered, incoming)
    return ExportResult(
        len(spans),
        len(new),
        duplicates + len(spans) - len(unique),
        rejected,
        say.answer_message(refused + answered),
    )


def _rejected_here(rejections: list[say.Rejection], incoming: dict[str, int]) -> int:
    """Rejected spans of this export: a trace's rejections may count spans staged before."""
    per_trace: dict[str, int] = {}
    for r in rejections:
        per_trace[r.trace_id] = per_trace.get(r.trace_id, 0) + r.spans
    return sum(min(n, incoming.get(t, 0)) for t, n in per_trace.items())


def _known(team: Team, traces: set[str]) -> dict[tuple[str, str], Known]:
    """(trace, span) → its parent, when it was assembled and into which run, for the spans
    already staged for these traces."""
    rows = OtelSpan.objects.filter(team=team, trace_id__in=traces).values_list(
        "trace_id", "span_id", "parent_span_id", "assembled_at", "run_id"
    )
    return {(t, s): Known(p, a, r) for t, s, p, a, r in rows}


def _trees(
    known: dict[tuple[str, str], Known], spans: list[Span]
) -> dict[str, tuple[dict[str, str], set[str]]]:
    """Per trace: span → parent (staged and incoming spans), and the assembled spans."""
    out: dict[str, tuple[dict[str, str], set[str]]] = {}
    for (trace_id, span_id), k in known.items():
        parent_of, assembled = out.setdefault(trace_id, ({}, set()))
        parent_of[span_id] = k.parent
        if k.assembled_at is not None:
            assembled.add(span_id)
    for span in spans:
        out.setdefault(span.trace_id, ({}, set()))[0].setdefault(span.span_id, span.parent_span_id)
    return out


def _past_window(
    known: dict[tuple[str, str], Known], trace_id: str, above: str, now: datetime
) -> bool:
    """Whether the run a straggler under ``above`` would join was assembled before the late
    window (its first assembled span: its agent). Under a span assembled without a run (a
    rejection, or a new agent span of its own), or a run deleted since: the assembly says."""
    run_id = known[(trace_id, above)].run_id
    if run_id is None:
        return False
    first = min(
        k.assembled_at
        for (t, _), k in known.items()
        if t == trace_id and k.run_id == run_id and k.assembled_at is not None
    )
    return first < now - timedelta(seconds=settings.EVALSITE_OTEL_LATE_WINDOW)


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
        check_trace_spans(trace_id, counts[trace_id])
    staged = OtelSpan.objects.filter(
        team=team, trace_id__in=list(incoming), assembled_at__isnull=True
    ).values_list("trace_id", "size")
    for trace_id, size in staged:
        incoming[trace_id] += size
        counts[trace_id] += 1
        if incoming[trace_id] > limit:
            raise TraceTooLarge(trace_id, incoming[trace_id])
    for trace_id, count in counts.items():
        check_trace_spans(trace_id, count)


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


def _assemble_or_schedule(team: Team, ready: list[str], new: list[Span]) -> list[say.Rejection]:
    """Assemble the ready traces now (no delay), else schedule them, assembling now those with
    nothing to judge (their rejection is known now) and warning of unusable rubrics named."""
    delay = settings.EVALSITE_OTEL_ASSEMBLE_DELAY
    if delay <= 0:
        done = [otel_trace_assemble(team=team, trace_id=t, drop_too_large=False) for t in ready]
        return [r for assembly in done for r in assembly.rejections]
    empty = [t for t in ready if not _has_content(team, t)]
    answered: list[say.Rejection] = []
    for trace_id in empty:
        answered += otel_trace_assemble(team=team, trace_id=trace_id).rejections
    later = [t for t in ready if t not in empty]
    transaction.on_commit(lambda: _schedule(team.pk, later, delay))
    return answered + _rubric_warnings(team, [s for s in new if s.trace_id not in empty])


def _has_content(team: Team, trace_id: str) -> bool:
    """Whether an agent span of the trace not yet assembled would make a run with something to
    judge from the spans staged so far (or the trace has only stragglers: the task decides)."""
    rows = list(OtelSpan.objects.filter(team=team, trace_id=trace_id, size__gt=0))
    agents = agent_span_ids((r.span_id, r.parent_span_id, r.operation) for r in rows)
    by_id = {r.span_id: r for r in rows}
    pending = [r for r in rows if r.assembled_at is None]
    fresh = [by_id[a] for a in agents if by_id[a].assembled_at is None]
    if not fresh:
        return True
    for agent in fresh:
        data = run_payload(agent, descendants(agent.span_id, pending))
        if data["input"]["messages"] or data["output"]:
            return True
    return False


def _rubric_warnings(team: Team, spans: list[Span]) -> list[say.Rejection]:
    """Agent spans of this export naming a rubric that cannot judge: answered now (the task
    records them when it assembles the run)."""
    out, seen = [], set()
    for span in spans:
        ref = rubric_ref(span)
        if ref is None or span.trace_id in seen:
            continue
        if operation_of(span.attributes) != AGENT and span.parent_span_id:
            continue
        seen.add(span.trace_id)
        _, problem = rubric_named(team, ref)
        if problem:
            out.append(say.rubric_problem(span.trace_id, span.span_id, problem))
    return out


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


def otel_sweep(*, now: datetime | None = None) -> tuple[int, int]:
    """Assemble traces whose assembly task was lost, queue re-judges owed, prune assembled
    spans past the late window to ids, and delete spans past their time to live
    (EVALSITE_OTEL_SPAN_TTL_HOURS), recording those that never joined a run. Returns (runs
    made, spans deleted)."""
    now = now or timezone.now()
    waited = now - timedelta(seconds=settings.EVALSITE_OTEL_ASSEMBLE_DELAY) - ASSEMBLE_GRACE
    ready = (
        Q(parent_span_id="", received_at__lt=waited, assembled_at__isnull=True)
        | Q(operation=AGENT, received_at__lt=now - ROOTLESS_WAIT, assembled_at__isnull=True)
        | Q(rejudge=True)
    )
    stuck = list(OtelSpan.objects.filter(ready).values_list("team_id", "trace_id").distinct()[:200])
    made = 0
    teams = {t.pk: t for t in Team.objects.filter(pk__in={t for t, _ in stuck})}
    for team_id, trace_id in stuck:
        made += len(otel_trace_assemble(team=teams[team_id], trace_id=trace_id, now=now).made)
    _prune(now - timedelta(seconds=settings.EVALSITE_OTEL_LATE_WINDOW))
    expired = now - timedelta(hours=settings.EVALSITE_OTEL_SPAN_TTL_HOURS)
    _record_expired(expired)
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


def _prune(before: datetime) -> None:
    """Assembled spans past the late window keep only their ids (no straggler joins now)."""
    while True:
        ids = list(
            OtelSpan.objects.filter(assembled_at__lt=before, size__gt=0).values_list(
                "pk", flat=True
            )[:SWEEP_CHUNK]
        )
        if not ids:
            return
        OtelSpan.objects.filter(pk__in=ids).update(**PRUNED)


def _record_expired(expired: datetime) -> None:
    """Spans about to expire that never joined a run: one rejection per trace."""
    rows = (
        OtelSpan.objects.filter(received_at__lt=expired, assembled_at__isnull=True)
        .values("team_id", "trace_id")
        .annotate(n=Count("pk"))
        .order_by()
    )
    per_team: dict[Any, list[say.Rejection]] = {}
    for row in rows:
        per_team.setdefault(row["team_id"], []).append(say.expired(row["trace_id"], row["n"]))
    for team in Team.objects.filter(pk__in=list(per_team)):
        say.otel_rejections_record(team=team, rejections=per_team[team.pk])
