"""Ingest many runs at once (the bulk API, seed data): bulk inserts, one enqueue pass, and
every item answered as if it had been sent alone."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from rubrics.models import Rubric
from teams.models import Team

from ..models import AgentRun, Evaluation
from ..payloads import RunPayload
from .ingest import (
    RunConflict,
    RunTooLarge,
    RunValidationError,
    run_build,
    run_check_size,
    run_digest,
    run_rubric,
    run_same_or_conflict,
    runs_store,
)


def runs_ingest_many(
    *,
    team: Team,
    payloads: list[RunPayload],
    stored: dict[Any, list[Evaluation]] | None = None,
) -> tuple[list[tuple[AgentRun, bool]], list[tuple[int, Exception]]]:
    """Ingest many runs with a fixed number of queries (bulk inserts, one enqueue pass).

    Returns (run, created) per payload in order, and the (index, error) of every payload that
    is invalid (unknown rubric, too large, conflicting external_id). The caller decides whether
    errors roll the whole call back; it must call this inside ``transaction.atomic()``.
    Payloads repeating an external_id (with the same content) map to one run.

    Another ingest storing some of the same external_ids at the same time is answered as if
    it had come first (as the sequential case would be): the insert that collides is undone
    (a savepoint), the runs stored meanwhile are read again and every item is classified anew
    (same content: that run, not created; other content: a conflict), up to STORE_ATTEMPTS.

    ``stored``, when given, receives run id -> the evaluations this call stored for each run
    it created, as stored (queued, no verdicts yet): an answer needs not read them back.
    """
    rubrics: dict[str, Rubric | None] = {}
    for attempt in range(1, STORE_ATTEMPTS + 1):
        results, errors, built = _classify(team, payloads, rubrics)
        if errors or not built:
            break
        try:
            with transaction.atomic():
                runs_store(built)
        except IntegrityError:
            if attempt == STORE_ATTEMPTS:
                raise
            continue
        if stored is not None:
            stored.update((run.pk, evaluations) for run, evaluations in built)
        break
    return [r for r in results if r is not None], errors


# A bulk loses the race for an external_id only to a commit that stored it, so every retry
# knows more of its ids; a handful of attempts covers any realistic contention.
STORE_ATTEMPTS = 5

Built = tuple[AgentRun, list[Evaluation]]


def _classify(
    team: Team, payloads: list[RunPayload], rubrics: dict[str, Rubric | None]
) -> tuple[list[tuple[AgentRun, bool] | None], list[tuple[int, Exception]], list[Built]]:
    """Each payload's (run, created) against the runs stored now (None for an invalid one),
    the errors, and the unsaved runs to insert."""
    existing = _existing_runs(team, payloads)
    results: list[tuple[AgentRun, bool] | None] = []
    errors: list[tuple[int, Exception]] = []
    built: list[Built] = []
    for index, payload in enumerate(payloads):
        try:
            run_check_size(payload)
            rubric = _cached_rubric(team, payload, rubrics)
            digest = run_digest(payload)
            known = existing.get(payload.external_id) if payload.external_id else None
            if known is not None:
                results.append((run_same_or_conflict(known, digest), False))
                continue
            run, evaluations = run_build(team, payload, rubric, digest, None)
        except (RunValidationError, RunTooLarge, RunConflict) as exc:
            errors.append((index, exc))
            results.append(None)
            continue
        if payload.external_id:
            existing[payload.external_id] = run
        built.append((run, evaluations))
        results.append((run, True))
    return results, errors, built


def _existing_runs(team: Team, payloads: list[RunPayload]) -> dict[str, AgentRun]:
    ids = {p.external_id for p in payloads if p.external_id}
    if not ids:
        return {}
    return {
        r.external_id: r
        for r in AgentRun.objects.filter(team=team, external_id__in=ids)
        if r.external_id
    }


def _cached_rubric(
    team: Team, payload: RunPayload, cache: dict[str, Rubric | None]
) -> Rubric | None:
    key = f"{payload.rubric}|{payload.request_context.get('rubric') if payload.rubric is None else ''}"
    if key not in cache:
        cache[key] = run_rubric(team, payload)
    return cache[key]
