"""Assembling a trace's staged spans into runs, and merging late spans into assembled runs.

Each topmost ``invoke_agent`` span (else the root) not yet assembled becomes one run from
itself and its unassembled descendants; an agent span whose tree holds no input and no output
messages makes no run and is rejected. A span arriving after its agent span's run was assembled
(a straggler) is merged within EVALSITE_OTEL_LATE_WINDOW seconds of that assembly: the run is
assembled again from all its spans, its content replaced and, when it changed, judged again (a
new evaluation; the earlier ones stay). Later, or under a span assembled without a run, it is
rejected. Every rejection and rubric warning is recorded for the team (rejections.py).

Concurrency: the trace's span rows are locked (select_for_update) and then read again, so an
export that committed spans while this one waited for the lock is seen whole: two exports of
stragglers of one run merge one after the other, the second from both.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError

from rubrics.models import Rubric
from rubrics.selectors import rubric_get
from teams.models import Team

from ..models import AgentRun
from ..payloads import RunPayload
from ..services.ingest import RunConflict, RunTooLarge, run_ingest
from ..services.replace import run_content_replace, run_rejudge
from . import rejections as say
from .bounds import OtlpInvalid
from .convert import agent_span_ids, descendants, rubric_ref, run_payload, service_name
from .models import OtelServiceRubric, OtelSpan, RejectionKind

logger = logging.getLogger(__name__)

PRUNED = {"attributes": {}, "events": [], "resource": {}, "size": 0}


@dataclass
class Assembly:
    """What assembling a trace did: runs made, runs a straggler changed, what was rejected."""

    made: list[AgentRun] = field(default_factory=list)
    merged: list[AgentRun] = field(default_factory=list)
    rejections: list[say.Rejection] = field(default_factory=list)


def otel_trace_assemble(
    *, team: Team, trace_id: str, drop_too_large: bool = True, now: datetime | None = None
) -> Assembly:
    """Make the run of every agent span of the trace that has none yet, merge stragglers into
    assembled runs, and owe no run a re-judge that can be queued now.

    A new run over EVALSITE_MAX_RUN_BYTES (or not a valid run) raises RunTooLarge (OtlpInvalid),
    or with ``drop_too_large`` (a task, the sweeper: nobody to answer) is rejected and its spans
    are pruned without a run."""
    now = now or timezone.now()
    out = Assembly()
    with transaction.atomic():
        trace = OtelSpan.objects.select_for_update().filter(team=team, trace_id=trace_id)
        list(trace.values_list("pk"))  # the locks; then the rows as committed by now
        rows = list(trace.order_by("start_ns", "span_id"))
        by_id = {r.span_id: r for r in rows}
        agents = agent_span_ids((r.span_id, r.parent_span_id, r.operation) for r in rows)
        claimed: set[str] = set()
        for agent_id in agents:
            agent = by_id[agent_id]
            if agent.assembled_at is not None:
                continue
            tree = descendants(agent_id, [r for r in rows if r.assembled_at is None])
            claimed.update([agent_id, *(r.span_id for r in tree)])
            run = _assemble_one(team, agent, tree, drop_too_large, out)
            _mark([agent, *tree], run=run, now=now, prune=run is None)
            if run is not None:
                out.made.append(run)
        _stragglers(team, rows, by_id, claimed, now, out)
        for agent in [r for r in rows if r.rejudge and r.run_id is not None]:
            _rejudge(agent)
        # A root span that is not an agent (an HTTP request around one) made no run: prune it,
        # so the sweeper does not come back for it.
        OtelSpan.objects.filter(
            team=team, trace_id=trace_id, parent_span_id="", assembled_at__isnull=True
        ).exclude(span_id__in=agents).update(assembled_at=now, **PRUNED)
        say.otel_rejections_record(team=team, rejections=out.rejections)
    return out


def _mark(rows: list[OtelSpan], *, run: AgentRun | None, now: datetime, prune: bool) -> None:
    """Assembled into ``run`` (None: into none); pruned to ids at once when nothing will
    re-assemble them, else by the sweeper after the late window."""
    changes = {"run": run, "assembled_at": now} | (PRUNED if prune else {})
    OtelSpan.objects.filter(pk__in=[r.pk for r in rows]).update(**changes)
    for r in rows:
        r.assembled_at, r.run_id = now, run.pk if run is not None else None
        if prune:
            r.size = 0


def _assemble_one(
    team: Team, agent: OtelSpan, tree: list[OtelSpan], drop_too_large: bool, out: Assembly
) -> AgentRun | None:
    data = run_payload(agent, tree)
    trace_id, span_id, spans = agent.trace_id, agent.span_id, 1 + len(tree)
    if not data["input"]["messages"] and not data["output"]:
        out.rejections.append(say.no_content(trace_id, span_id, spans))
        return None
    rubric, problem = rubric_for(team, agent)
    if problem:
        data["metadata"]["evalsite.rubric_error"] = problem
        out.rejections.append(say.rubric_problem(trace_id, span_id, problem))
    try:
        payload = RunPayload.model_validate(data | {"rubric": str(rubric.pk) if rubric else None})
    except ValidationError as exc:
        if not drop_too_large:
            raise OtlpInvalid(f"trace {trace_id} does not make a valid run: {exc}") from exc
        logger.warning("trace %s does not make a valid run; dropped", trace_id)
        why = f"does not make a valid run ({exc.error_count()} error(s)); dropped"
        out.rejections.append(say.dropped(RejectionKind.INVALID, trace_id, span_id, spans, why))
        return None
    try:
        # A trace arrives with no one to answer: a rubric that can judge nothing marks the run
        # nothing_to_judge rather than losing it.
        run, _ = run_ingest(team=team, payload=payload, refuse_empty=False)
    except RunConflict as exc:
        return exc.run  # assembled elsewhere meanwhile, from fewer spans
    except RunTooLarge as exc:
        if not drop_too_large:
            raise
        logger.warning("trace %s: the run is over EVALSITE_MAX_RUN_BYTES; dropped", trace_id)
        why = f"{exc}; dropped"
        out.rejections.append(say.dropped(RejectionKind.TOO_LARGE, trace_id, span_id, spans, why))
        return None
    return run


def rubric_for(team: Team, agent: OtelSpan) -> tuple[Rubric | None, str]:
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
    return rubric_named(team, ref)


def rubric_named(team: Team, ref: str) -> tuple[Rubric | None, str]:
    rubric = rubric_get(team=team, ref=ref, with_criteria=False)
    if rubric is None:
        return None, f"no rubric {ref!r} in this team"
    if rubric.archived_at is not None:
        return None, f"rubric {rubric.slug!r} is archived"
    return rubric, ""


# --- Stragglers -------------------------------------------------------------------------------


def assembled_above(span_id: str, parent_of: dict[str, str], assembled: set[str]) -> str | None:
    """The nearest ancestor of a span that is assembled, walking ``parent_of``; None."""
    current, seen = parent_of.get(span_id, ""), {span_id}
    while current and current not in seen:
        if current in assembled:
            return current
        seen.add(current)
        current = parent_of.get(current, "")
    return None


def _stragglers(
    team: Team,
    rows: list[OtelSpan],
    by_id: dict[str, OtelSpan],
    claimed: set[str],
    now: datetime,
    out: Assembly,
) -> None:
    parent_of = {r.span_id: r.parent_span_id for r in rows}
    assembled = {r.span_id for r in rows if r.assembled_at is not None}
    groups: dict[str, list[OtelSpan]] = {}
    for r in rows:
        if r.assembled_at is not None or r.span_id in claimed:
            continue
        above = assembled_above(r.span_id, parent_of, assembled)
        if above is not None:
            groups.setdefault(above, []).append(r)
    by_run: dict[object, list[OtelSpan]] = {}
    for above, fresh in groups.items():
        if by_id[above].run_id is None:
            out.rejections.append(
                say.no_run(fresh[0].trace_id, fresh[0].span_id, len(fresh), above)
            )
            _mark(fresh, run=None, now=now, prune=True)
        else:
            by_run.setdefault(by_id[above].run_id, []).extend(fresh)
    for run_id, fresh in by_run.items():
        members = [r for r in rows if r.run_id == run_id and r.assembled_at is not None]
        ids = {r.span_id for r in members}
        agent = next(r for r in members if r.parent_span_id not in ids)
        _merge_or_refuse(team, agent, members, fresh, now, out)


def _merge_or_refuse(
    team: Team,
    agent: OtelSpan,
    members: list[OtelSpan],
    fresh: list[OtelSpan],
    now: datetime,
    out: Assembly,
) -> None:
    trace_id, first = agent.trace_id, fresh[0].span_id
    assert agent.run_id is not None  # grouped by the run its spans were assembled into
    run = AgentRun.objects.select_for_update().filter(pk=agent.run_id).first()
    window = timedelta(seconds=settings.EVALSITE_OTEL_LATE_WINDOW)
    assert agent.assembled_at is not None
    if run is None or agent.size == 0 or agent.assembled_at < now - window:
        out.rejections.append(say.late(trace_id, first, len(fresh), agent.span_id))
        _mark(fresh, run=run, now=now, prune=True)
        return
    data = run_payload(agent, descendants(agent.span_id, [*members, *fresh]))
    if error := run.metadata.get("evalsite.rubric_error"):
        data["metadata"]["evalsite.rubric_error"] = error
    try:
        payload = RunPayload.model_validate(data | {"rubric": _ref(run)})
        changed = run_content_replace(run=run, payload=payload)
    except (ValidationError, RunTooLarge) as exc:
        kind = RejectionKind.TOO_LARGE if isinstance(exc, RunTooLarge) else RejectionKind.INVALID
        why = f"merged into its run it would not make a valid run ({exc}); not added"
        out.rejections.append(say.dropped(kind, trace_id, first, len(fresh), why))
        _mark(fresh, run=run, now=now, prune=True)
        return
    _mark(fresh, run=run, now=now, prune=False)
    if changed:
        out.merged.append(run)
        agent.rejudge = True


def _ref(run: AgentRun) -> str | None:
    return str(run.rubric_id) if run.rubric_id else None


def _rejudge(agent: OtelSpan) -> None:
    """Queue the re-judge a merge owes its run; left owed while an evaluation of it runs."""
    runs = AgentRun.objects.select_related("rubric", "team")
    run = runs.filter(pk=agent.run_id).first() if agent.run_id is not None else None
    owed = run is not None and run_rejudge(run=run) is None
    OtelSpan.objects.filter(pk=agent.pk).update(rejudge=owed)
    agent.rejudge = owed
