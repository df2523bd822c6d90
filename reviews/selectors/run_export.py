"""Reads for the runs export (GET /api/runs/export, the runs list's export link): every run
the runs list would show, with its current result and verdicts as reviewers left them.

Constant memory: runs are read in keyset chunks of EXPORT_CHUNK (newest first), each chunk's
verdicts and labels in two more queries, and rows are yielded one at a time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from django.db.models import Q

from runs.models import AgentRun, CriterionVerdict
from runs.selectors.filters import RunFilters, runs_matching
from runs.selectors.runs import with_judged
from teams.models import Team

from ..effective import EffectiveVerdict, text_hash
from ..models import VerdictLabel

EXPORT_CHUNK = 500
RUN_EXPORT_FIELDS = [
    "run_id", "external_id", "agent", "created_at", "status", "rubric", "rubric_version",
    "passed", "score", "alignment_score", "adjusted", "criteria_failed", "verdicts",
]  # fmt: skip
LIGHT_FIELDS = (
    "id", "external_id", "agent", "created_at", "status", "passed", "score",
    "alignment_score", "rubric_id", "rubric__slug", "current_version__number",
)  # fmt: skip


def run_export_rows(
    *, team: Team, filters: RunFilters, chunk: int = EXPORT_CHUNK
) -> Iterator[dict[str, Any]]:
    """One dict per run (keys RUN_EXPORT_FIELDS, ``verdicts`` a list of dicts), newest first.
    ``status``, ``passed``, ``score``, ``alignment_score`` and ``adjusted`` are the run's
    result as every surface shows it (AgentRun.result: judge_engine.rules.run_result);
    each verdict carries the judge's and the reviewers' answer and the one in effect."""
    runs = runs_matching(team=team, filters=filters)
    after: Q | None = None
    while True:
        page = runs if after is None else runs.filter(after)
        rows = list(
            with_judged(page.select_related("rubric", "current_version"))
            .only(*LIGHT_FIELDS)
            .order_by("-created_at", "-id")[:chunk]
        )
        if not rows:
            return
        verdicts = _effective_by_run(rows)
        for run in rows:
            yield _row(run, verdicts.get(run.pk, []))
        if len(rows) < chunk:
            return
        last = rows[-1]
        after = Q(created_at__lte=last.created_at) & (
            Q(created_at__lt=last.created_at) | Q(created_at=last.created_at, id__lt=last.pk)
        )


def _effective_by_run(chunk: list[AgentRun]) -> dict[Any, list[EffectiveVerdict]]:
    """The current verdicts of the runs' own rubric, labels applied (two queries)."""
    ids = [r.pk for r in chunk]
    rubric_of = {r.pk: r.rubric_id for r in chunk}
    human = {
        (lb["run_id"], lb["rubric_id"], lb["criterion_key"], lb["text_hash"]): lb["satisfied"]
        for lb in VerdictLabel.objects.filter(run_id__in=ids).values(
            "run_id", "rubric_id", "criterion_key", "text_hash", "satisfied"
        )
    }
    out: dict[Any, list[EffectiveVerdict]] = defaultdict(list)
    rows = (
        CriterionVerdict.objects.filter(run_id__in=ids, is_current=True)
        .values("run_id", "rubric_id", "criterion_key", "description", "required", "satisfied")
        .order_by("run_id", "position")
    )
    for v in rows:
        if v["rubric_id"] != rubric_of[v["run_id"]]:
            continue  # a verdict of a rubric the run no longer follows
        wording = (v["run_id"], v["rubric_id"], v["criterion_key"], text_hash(v["description"]))
        out[v["run_id"]].append(
            EffectiveVerdict(
                key=v["criterion_key"],
                description=v["description"],
                required=v["required"],
                judge=v["satisfied"],
                human=human.get(wording),
            )
        )
    return out


def _row(run: AgentRun, verdicts: list[EffectiveVerdict]) -> dict[str, Any]:
    result = run.result
    return {
        "run_id": str(run.pk),
        "external_id": run.external_id,
        "agent": run.agent,
        "created_at": run.created_at.isoformat(),
        "status": result.status,
        "rubric": run.rubric.slug if run.rubric else None,
        "rubric_version": run.current_version.number if run.current_version else None,
        "passed": result.passed,
        "score": result.score,
        "alignment_score": result.alignment_score,
        "adjusted": result.adjusted,
        "criteria_failed": [v.key for v in verdicts if not v.satisfied],
        "verdicts": [
            {
                "criterion_id": v.key,
                "description": v.description,
                "required": v.required,
                "judge_satisfied": v.judge,
                "human_satisfied": v.human,
                "satisfied": v.satisfied,
            }
            for v in verdicts
        ],
    }
