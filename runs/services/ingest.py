"""Ingest: store a run and its queued evaluations in one transaction, enqueue on commit."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import timedelta
from typing import Any, NamedTuple

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from evalsite import rawsql
from evalsite.errors import Conflict, FieldErrors, TooLarge
from judge_engine.text import CriteriaSourceError, resolve_criteria
from judge_engine.trajectory import final_texts, flagged, normalise
from rubrics.models import AlignmentMode, Rubric
from rubrics.selectors import rubric_get
from rubrics.services import CriterionInput, RubricValidationError, criteria_validate
from teams.models import Team

from ..models import AgentRun, Evaluation, Kind, RunTool, Status
from ..payloads import RunPayload
from .evaluations import evaluation_build, evaluations_enqueue
from .groupcommit import GroupCommit
from .rollups import rollup_runs_added
from .sampling import nothing_to_judge_refusal, run_sampled


class RunValidationError(FieldErrors):
    """Invalid run input; ``errors`` maps each field to a message."""


class NothingToScore(RunValidationError):
    """No criteria, no rubric with criteria and alignment off: nothing would score the run."""

    def __init__(self) -> None:
        super().__init__(
            {"criteria": "nothing to score: give criteria, a rubric with criteria, or alignment"}
        )


class RunTooLarge(TooLarge, ValueError):
    """The run is over EVALSITE_MAX_RUN_BYTES (``extra["limit"]``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, extra={"limit": settings.EVALSITE_MAX_RUN_BYTES})


class RunConflict(Conflict, ValueError):
    """The external_id is taken by a run with different content."""

    def __init__(self, run: AgentRun) -> None:
        super().__init__(
            f"external_id {run.external_id!r} already names a run with different content",
            extra={"run_id": str(run.id)},
        )
        self.run = run


def canonical_hash(content: dict[str, Any]) -> str:
    blob = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def _messages(payload: RunPayload) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json") for m in payload.input.messages]


def _output(payload: RunPayload) -> Any:
    out = payload.output
    if isinstance(out, str):
        return out
    return [m if isinstance(m, str) else m.model_dump(mode="json") for m in out]


def run_check_size(payload: RunPayload) -> None:
    size = len(payload.model_dump_json().encode())
    limit = settings.EVALSITE_MAX_RUN_BYTES
    if size > limit:
        raise RunTooLarge(f"run is {size:,} bytes; the limit is {limit:,} (EVALSITE_MAX_RUN_BYTES)")


def run_rubric(team: Team, payload: RunPayload) -> Rubric | None:
    if payload.rubric is None:
        # A request_context ``rubric`` that is exactly a stored rubric's slug names that rubric;
        # any other value is criteria text (SCORING.md "Where criteria come from").
        named = payload.request_context.get("rubric")
        if isinstance(named, str) and named.strip() and "\n" not in named.strip():
            found = rubric_get(team=team, ref=named.strip(), with_criteria=False)
            return found if found is not None and found.archived_at is None else None
        return None
    rubric = rubric_get(team=team, ref=payload.rubric, with_criteria=False)
    if rubric is None:
        raise RunValidationError({"rubric": f"no rubric {payload.rubric!r} in this team"})
    if rubric.archived_at is not None:
        raise RunValidationError({"rubric": f"rubric {rubric.slug!r} is archived"})
    return rubric


class Ingested(NamedTuple):
    run: AgentRun
    created: bool
    evaluations: list[Evaluation] | None  # the new run's evaluations (None: a stored run)


def run_ingest(
    *,
    team: Team,
    payload: RunPayload,
    inline_criteria: list[dict[str, Any]] | None = None,
    judge_view: str = "",
    refuse_empty: bool = True,
) -> tuple[AgentRun, bool]:
    """Store a run and queue its evaluations. Returns (run, created).

    Idempotent on ``external_id``: the same content again returns the stored run; different
    content raises RunConflict. ``inline_criteria`` (from POST /api/score) replaces the rubric's,
    judged in ``judge_view`` (else the rubric's current version's, else the final view).
    A rubric with nothing to judge is a RunValidationError unless ``refuse_empty`` is False
    (the run is then stored with status nothing_to_judge).
    """
    run, created, _ = run_store(
        team=team,
        payload=payload,
        inline_criteria=inline_criteria,
        judge_view=judge_view,
        refuse_empty=refuse_empty,
    )
    return run, created


def run_store(
    *,
    team: Team,
    payload: RunPayload,
    inline_criteria: list[dict[str, Any]] | None = None,
    judge_view: str = "",
    refuse_empty: bool = True,
    claim: uuid.UUID | None = None,
    scored_only: bool = False,
) -> Ingested:
    """run_ingest, also returning a new run's evaluations. With ``claim`` (a lease token) a new
    run's evaluations are stored already claimed by the caller (running, attempt 1, leased to
    ``claim``) and sent to no broker: the caller judges them through judging.services.execute, and
    if it dies the lease expires and the sweeper queues them as for a dead worker."""
    run_check_size(payload)
    rubric = run_rubric(team, payload)
    digest = run_digest(payload)
    if payload.external_id:
        existing = AgentRun.objects.filter(team=team, external_id=payload.external_id).first()
        if existing is not None:
            return Ingested(run_same_or_conflict(existing, digest), False, None)
    built = run_build(
        team, payload, rubric, digest, inline_criteria, judge_view, refuse_empty,
        sample=not scored_only,
    )  # fmt: skip
    if scored_only and not built[1]:
        raise NothingToScore()
    if claim is not None:
        _born_claimed(built, claim)
    try:
        _store_one(built, enqueue=claim is None)
    except IntegrityError:
        # Another request stored the same external_id between our check and insert.
        existing = AgentRun.objects.get(team=team, external_id=payload.external_id)
        return Ingested(run_same_or_conflict(existing, digest), False, None)
    return Ingested(built[0], True, built[1])


def _store_one(built: Built, *, enqueue: bool) -> None:
    """Store one built run in its own transaction, committed when this returns. Concurrent
    callers in one process (gunicorn's threads) share the transaction (group commit, as
    results do): the statements and the broker publish are the same few for any number of
    runs. A group that fails is retried run by run, so an external_id race or a bad row fails
    only its own caller. Inside a caller's transaction the run is written there, alone."""
    if connection.in_atomic_block:
        _store_group([(built, enqueue)])
    else:
        _stores.submit((built, enqueue))


def _store_group(jobs: list[tuple[Built, bool]]) -> list[None]:
    """Each run is a single run: its evaluations go on the live lane, as if sent alone, one
    publish per team (a message never mixes teams, so the workers' fair sharing sees it)."""
    queued: dict[Any, list[Any]] = {}
    for (run, evaluations), queue in jobs:
        if queue:
            queued.setdefault(run.team_id, []).extend(e.id for e in evaluations)
    with transaction.atomic():
        runs_store([b for b, _ in jobs], enqueue=False)
        for ids in queued.values():
            evaluations_enqueue(ids, bulk=False)
    return [None] * len(jobs)


Built = tuple[AgentRun, list[Evaluation]]
_stores: GroupCommit[tuple[Built, bool], None] = GroupCommit(_store_group)


def _born_claimed(built: tuple[AgentRun, list[Evaluation]], token: uuid.UUID) -> None:
    """What evaluations_claim would have written, written at birth: nobody else can hold a
    claim on evaluations that do not exist yet."""
    run, evaluations = built
    if not evaluations:
        return
    now = timezone.now()
    lease = now + timedelta(seconds=settings.EVALSITE_LEASE_SECONDS)
    for evaluation in evaluations:
        evaluation.status = Status.RUNNING
        evaluation.attempts = 1
        evaluation.lease_token = token
        evaluation.lease_expires_at = lease
        evaluation.started_at = now
    run.status = Status.RUNNING


def run_digest(payload: RunPayload) -> str:
    return canonical_hash(
        payload.content() | {"rubric": payload.rubric, "alignment": payload.alignment}
    )


def run_same_or_conflict(existing: AgentRun, digest: str) -> AgentRun:
    if existing.content_hash != digest:
        raise RunConflict(existing)
    return existing


def run_content(payload: RunPayload) -> dict[str, Any]:
    """A run's content fields from its payload, the texts and steps the scorers read included."""
    messages = _messages(payload)
    output = _output(payload)
    steps = normalise(messages, output)
    task, system, final = final_texts(steps)
    return {
        "agent": payload.agent,
        "input": payload.input.model_dump(mode="json"),
        "output": output,
        "request_context": payload.request_context,
        "metadata": payload.metadata,
        "task_text": task,
        "system_text": system,
        "output_text": final,
        "steps": steps,
        "flagged_steps": flagged(steps),
        "expected_output": payload.expected_output,
    }


def run_build(
    team: Team,
    payload: RunPayload,
    rubric: Rubric | None,
    digest: str,
    inline_criteria: list[dict[str, Any]] | None,
    judge_view: str = "",
    refuse_empty: bool = True,
    *,
    sample: bool = True,
) -> tuple[AgentRun, list[Evaluation]]:
    """The unsaved run and its unsaved queued evaluations (none when its rubric's sampling
    leaves it out, unless ``sample`` is False: status not_sampled, the decision on
    ``run.sampling``)."""
    run = AgentRun(
        id=uuid.uuid4(),
        team=team,
        external_id=payload.external_id,
        **run_content(payload),
        content_hash=digest,
        rubric=rubric,
        alignment_mode=payload.alignment
        or (rubric.alignment_mode if rubric else AlignmentMode.OFF),
    )
    evaluations = _initial_evaluations(run, payload, rubric, inline_criteria, judge_view)
    if not evaluations:
        if refuse_empty and (problem := nothing_to_judge_refusal(payload=payload, rubric=rubric)):
            raise RunValidationError(problem)
        run.status = Status.NOTHING_TO_JUDGE
        return run, []
    if (
        sample
        and rubric is not None
        and inline_criteria is None
        and not run_sampled(run=run, rubric=rubric)
    ):
        run.status = Status.NOT_SAMPLED
        return run, []
    run.status = Status.QUEUED
    return run, evaluations


def runs_store(built: list[tuple[AgentRun, list[Evaluation]]], *, enqueue: bool = True) -> None:
    """Insert runs and evaluations with a fixed number of queries; enqueue after commit."""
    runs = [run for run, _ in built]
    rawsql.insert_rows(AgentRun, runs)
    rollup_runs_added(runs=runs)
    tools = [tool for run in runs for tool in run_tools(run)]
    if tools:
        RunTool.objects.bulk_create(tools)
    evaluations = [e for _, es in built for e in es]
    rawsql.insert_rows(Evaluation, evaluations)
    if enqueue:
        evaluations_enqueue(e.id for e in evaluations)


def run_tools(run: AgentRun) -> list[RunTool]:
    """One row per distinct tool the run called, with how many times."""
    calls: dict[str, int] = {}
    for step in run.steps:
        if step["kind"] == "tool_call" and step.get("tool"):
            name = str(step["tool"])[:200]
            calls[name] = calls.get(name, 0) + 1
    return [
        RunTool(run=run, team_id=run.team_id, tool=name, calls=n, run_created_at=run.created_at)
        for name, n in calls.items()
    ]


def _initial_evaluations(
    run: AgentRun,
    payload: RunPayload,
    rubric: Rubric | None,
    inline_criteria: list[dict[str, Any]] | None,
    judge_view: str = "",
) -> list[Evaluation]:
    out = []
    prices = run.team.judge_prices  # the team ingest was given: no query
    if inline_criteria is not None:
        out.append(
            evaluation_build(
                run=run,
                kind=Kind.RUBRIC,
                rubric=rubric,
                inline_criteria=inline_criteria,
                judge_view=judge_view,
                prices=prices,
            )
        )
    elif rubric is not None and rubric.current_version_id:
        out.append(version_evaluation(run=run, rubric=rubric, prices=prices))
    elif rubric is None or payload.rubric is not None:
        # A request_context ``rubric`` that named this rubric is its slug, not criteria text.
        inline = _context_criteria(payload)
        if inline:
            out.append(
                evaluation_build(
                    run=run, kind=Kind.RUBRIC, rubric=rubric, inline_criteria=inline, prices=prices
                )
            )
    return out + alignment_evaluations(run=run, rubric=rubric, prices=prices)


def version_evaluation(*, run: AgentRun, rubric: Rubric, prices: Any) -> Evaluation:
    """A new evaluation of ``run`` on its rubric's current version (not saved)."""
    return evaluation_build(
        run=run, kind=Kind.RUBRIC, rubric=rubric, version=rubric.current_version, prices=prices
    )


def alignment_evaluations(*, run: AgentRun, rubric: Rubric | None, prices: Any) -> list[Evaluation]:
    """The alignment evaluation ``run`` asks for (none when its alignment is off; not saved)."""
    if run.alignment_mode == AlignmentMode.OFF:
        return []
    return [
        evaluation_build(
            run=run,
            kind=Kind.ALIGNMENT,
            rubric=rubric,
            alignment_mode=run.alignment_mode,
            prices=prices,
        )
    ]


def _context_criteria(payload: RunPayload) -> list[dict[str, Any]]:
    """The criteria a run carries itself (its request context, metadata or input ``rubric``),
    held to a rubric's rules: at most EVALSITE_MAX_CRITERIA, no over-long description."""
    try:
        criteria, source = resolve_criteria(
            None, payload.request_context, payload.metadata, payload.input.model_dump(mode="json")
        )
    except CriteriaSourceError as exc:
        raise RunValidationError({f"{exc.source}.rubric": str(exc)}) from exc
    try:
        criteria_validate([CriterionInput(c.description, c.required) for c in criteria])
    except RubricValidationError as exc:
        raise RunValidationError(
            {k.replace("criteria", f"{source}.rubric", 1): v for k, v in exc.errors.items()}
        ) from exc
    return [{"description": c.description, "required": c.required} for c in criteria]
