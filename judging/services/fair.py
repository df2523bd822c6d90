"""What a broker message does: its evaluations, grouped by team, run under the worker's fair
share of threads (judging.fair_worker) or parked until a thread is the team's to take."""

from __future__ import annotations

import uuid
from collections import Counter

from judging.fair_worker import run_fairly
from runs.models import Evaluation, Status

from .execute import Outcome, evaluation_execute, evaluations_execute
from .stranded import evaluations_in_hand


def evaluations_execute_fairly(*, evaluation_ids: list[str]) -> Counter[str]:
    """Execute the evaluations (each exactly as ``evaluation_execute`` would), a team's group
    at a time; outcomes counted by status, ``parked`` for those left for a later thread.
    Ids that are not queued any more are skipped without a claim. A database that goes away
    strands the message's evaluations (judging.services.stranded)."""
    counts: Counter[str] = Counter()
    with evaluations_in_hand(evaluation_ids):
        by_team = _queued_by_team(evaluation_ids)
    for team, ids in by_team.items():
        outcomes = run_fairly(team, ids, _execute)
        if outcomes is None:
            counts["parked"] += len(ids)
        else:
            counts.update(o.status for o in outcomes)
    return counts


def _queued_by_team(evaluation_ids: list[str]) -> dict[str, list[str]]:
    wanted: list[uuid.UUID] = []
    for raw in evaluation_ids:
        try:
            wanted.append(uuid.UUID(str(raw)))
        except ValueError:
            continue  # not an evaluation id: nothing to run
    rows = Evaluation.objects.filter(id__in=wanted, status=Status.QUEUED).values_list(
        "id", "team_id"
    )
    teams = {evaluation_id: str(team_id) for evaluation_id, team_id in rows}
    out: dict[str, list[str]] = {}
    for evaluation_id in dict.fromkeys(wanted):  # the message's order, each id once
        if evaluation_id in teams:
            out.setdefault(teams[evaluation_id], []).append(str(evaluation_id))
    return out


def _execute(team: str, ids: list[str]) -> list[Outcome]:
    """One unit of work, run now or parked and run by a later thread."""
    with evaluations_in_hand(ids):
        if len(ids) == 1:
            return [evaluation_execute(evaluation_id=ids[0])]
        return evaluations_execute(evaluation_ids=ids, team=team)
