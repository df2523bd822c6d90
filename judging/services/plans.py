"""What judging a claimed evaluation needs (its plan: judge, rendered run, criteria, what may be
reused), and the scorers' coroutines for a stored run. The claim/judge/write loop is
judging.services.execute; "try it" and the estimates use the pieces here too."""

from __future__ import annotations

from collections.abc import Coroutine
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Literal, cast

from django.conf import settings

from evalsite import rawsql
from judge_engine import (
    AlignmentScorer,
    AlignmentWeights,
    Example,
    JudgeConfig,
    PriorVerdict,
    RubricScorer,
)
from judge_engine import Criterion as CriterionSpec
from judge_engine.render import RunView
from rubrics.judging import judge_for
from rubrics.selectors import version_criteria, version_examples
from runs.models import AgentRun, CriterionVerdict, Evaluation, Kind, Status
from teams.selectors import judge_connections_by_id

from .judge_view import run_rendered

AlignmentModeName = Literal["user", "system", "both"]


@dataclass(frozen=True)
class Plan:
    """What judging a claimed evaluation needs, read with its claim."""

    judge: JudgeConfig
    shown: RunView | None = None  # the run as the judge sees it (None: not rendered yet)
    criteria: list[CriterionSpec] = field(default_factory=list)
    criteria_ids: dict[str, Any] = field(default_factory=dict)
    reuse: dict[str, PriorVerdict] = field(default_factory=dict)
    instructions: str = ""  # the rubric version's judge instructions and graded examples
    examples: tuple[Example, ...] = ()


def plans_read(evaluations: list[Evaluation]) -> list[Plan]:
    plans = []
    # The group's judge connections in one query (none when no evaluation has one).
    connections = judge_connections_by_id(
        ids={e.judge_config.get("connection") for e in evaluations} - {None}
    )
    for evaluation in evaluations:
        judge = judge_for(evaluation, connections)
        shown = run_rendered(
            evaluation.run,
            model=judge.model,
            view=evaluation.judge_view,
            budget=evaluation.run_token_budget,
        )
        if evaluation.kind == Kind.RUBRIC:
            criteria, criteria_ids = _criteria(evaluation)
            instructions, examples = _taught(evaluation)
            plans.append(Plan(judge, shown, criteria, criteria_ids, {}, instructions, examples))
        else:
            plans.append(Plan(judge, shown))
    reuse = _reusable(list(zip(evaluations, plans, strict=True)))
    return [
        replace(plan, reuse=reuse[evaluation.id]) if evaluation.id in reuse else plan
        for evaluation, plan in zip(evaluations, plans, strict=True)
    ]


def _criteria(evaluation: Evaluation) -> tuple[list[CriterionSpec], dict[str, Any]]:
    """The criteria to judge and a map from criterion key to its stored row id."""
    if evaluation.rubric_version_id:
        return criterion_specs(evaluation.rubric_version_id)
    items = evaluation.inline_criteria or []
    specs = [
        CriterionSpec(
            id=f"c{i + 1}", description=c["description"], required=c.get("required", True)
        )
        for i, c in enumerate(items)
    ]
    return specs, {}


def criterion_specs(version_id: Any) -> tuple[list[CriterionSpec], dict[str, Any]]:
    """A rubric version's criteria as the engine takes them, in order, and a map from
    criterion key to row id. Versions never change once written (rubrics.services makes a new
    version for every edit), so each process reads them once; callers get their own copies."""
    specs, ids = _criterion_specs(version_id)
    return list(specs), dict(ids)


@lru_cache(maxsize=1024)
def _criterion_specs(version_id: Any) -> tuple[tuple[CriterionSpec, ...], dict[str, Any]]:
    rows = version_criteria(version_id=version_id)
    specs = tuple(
        CriterionSpec(id=c.key, description=c.description, required=c.required) for c in rows
    )
    return specs, {c.key: c.id for c in rows}


def _taught(evaluation: Evaluation) -> tuple[str, tuple[Example, ...]]:
    version = evaluation.rubric_version
    if version is None:
        return "", ()
    return version.instructions, _version_examples(version.pk)


@lru_cache(maxsize=1024)
def _version_examples(version_id: Any) -> tuple[Example, ...]:
    rows = version_examples(version_id=version_id)
    return tuple(Example(e.criterion_key, e.excerpt, e.satisfied, e.reason) for e in rows)


def rubric_scorer(
    judge: JudgeConfig, criteria: Any, scale: float, strategy: str, instructions: str, examples: Any
) -> RubricScorer:
    return RubricScorer(
        judge=judge,
        criteria=criteria,
        scale=scale,
        strategy="independent" if strategy == "independent" else "batched",
        instructions=instructions,
        examples=examples,
        max_examples_per_criterion=settings.EVALSITE_MAX_EXAMPLES_PER_CRITERION,
    )


def _reusable(items: list[tuple[Evaluation, Plan]]) -> dict[Any, dict[str, PriorVerdict]]:
    """Stored verdicts each rubric evaluation may reuse (same judge, prompt version, criterion
    and texts: judge_engine.verdict_key), by evaluation id; one query for all of them."""
    keys_of: dict[Any, tuple[Any, list[str]]] = {}
    for evaluation, plan in items:
        if evaluation.kind != Kind.RUBRIC or evaluation.force or not plan.criteria:
            continue
        assert plan.shown is not None  # rendered for every claimed evaluation
        scorer = rubric_scorer(plan.judge, plan.criteria, 1, "", plan.instructions, plan.examples)
        keys = scorer.verdict_keys(plan.criteria, plan.shown)
        keys_of[evaluation.id] = (evaluation.team_id, list(keys.values()))
    if not keys_of:
        return {}
    rows = _prior_verdicts(
        list({team for team, _ in keys_of.values()}),
        list({key for _, keys in keys_of.values() for key in keys}),
    )
    found: dict[tuple[Any, str], PriorVerdict] = {}
    for row in rows:
        source = row["reused_from_id"] or row["id"]
        found.setdefault(
            (row["team_id"], row["verdict_key"]),
            PriorVerdict(
                satisfied=row["satisfied"],
                reasoning=row["reasoning"],
                source_id=str(source),
                evidence=row["evidence"] or [],
            ),
        )
    return {
        evaluation_id: {key: found[(team, key)] for key in keys if (team, key) in found}
        for evaluation_id, (team, keys) in keys_of.items()
    }


_PRIOR = ("id", "team_id", "verdict_key", "satisfied", "reasoning", "reused_from_id", "evidence")


def _prior_verdicts(teams: list[Any], keys: list[str]) -> list[dict[str, Any]]:
    """The teams' verdicts with these keys from succeeded evaluations, oldest run first: one
    fixed-shape read through raw() (every claimed rubric evaluation runs it; evalsite.rawsql)."""
    rows = rawsql.select_in(
        CriterionVerdict,
        _PRIOR,
        "team_id",
        teams,
        within={"verdict_key": keys},
        equal={"evaluation__status": Status.SUCCEEDED},
        order_by="run_created_at",
    )
    return [dict(zip(_PRIOR, row, strict=True)) for row in rows]


def rubric_scoring(
    *,
    run: AgentRun,
    judge: JudgeConfig,
    criteria: list[CriterionSpec],
    scale: float,
    strategy: str,
    reuse: dict[str, PriorVerdict],
    view: str = "final",
    token_budget: int | None = None,
    shown: RunView | None = None,
    instructions: str = "",
    examples: Any = (),
) -> Coroutine[Any, Any, Any]:
    """The rubric scorer's coroutine for one stored run in a judge view: a worker's
    evaluation (``shown``: the run already rendered), or the editor's "try it" (which reuses
    nothing)."""
    shown = shown or run_rendered(run, model=judge.model, view=view, budget=token_budget)
    scorer = rubric_scorer(judge, criteria, scale, strategy, instructions, examples)
    return scorer.ascore(
        request_context=run.request_context,
        metadata=run.metadata,
        input=run.input,
        reuse=reuse,
        rendered=shown,
    )


async def alignment_scoring(evaluation: Evaluation, judge: JudgeConfig, shown: RunView | None):
    run = evaluation.run
    weights = (
        AlignmentWeights.model_validate(evaluation.alignment_weights)
        if evaluation.alignment_weights
        else None
    )
    scorer = AlignmentScorer(
        judge=judge,
        mode=cast(AlignmentModeName, evaluation.alignment_mode or "both"),
        scale=evaluation.scale,
        weights=weights,
    )
    shown = shown or run_rendered(
        run, model=judge.model, view=evaluation.judge_view, budget=evaluation.run_token_budget
    )
    return await scorer.ascore(rendered=shown)
