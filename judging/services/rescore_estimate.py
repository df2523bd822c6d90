"""Re-scoring's estimates: what a batch will judge, reuse and cost, computed the way execution
will decide it (same judge config, same verdict keys, same reuse lookup); writes nothing.

See judging.services.rescore for batches; ``batch_create`` stores its estimate with the batch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from judge_engine import Criterion as CriterionSpec
from judge_engine import JudgeConfig, verdict_key
from judge_engine.pricing import tokens_cost
from rubrics.judging import judge_config_for, judge_for
from rubrics.models import Rubric, RubricVersion
from runs.models import AgentRun, CriterionVerdict, Evaluation, Status
from teams.models import Team

from .estimates import rubric_call_tokens
from .plans import criterion_specs
from .rescore_scope import (
    RescoreScope,
    RescoreValidationError,
    chunks,
    pending_run_ids,
    run_rubric,
    scope_run_ids,
    version_for,
)


@dataclass(frozen=True)
class Estimate:
    """What a batch will cost, computed the way execution will decide it (same judge config,
    same verdict keys, same reuse lookup). ``judge_calls`` and ``criterion_judgements`` are
    exact when nothing fails and no other work lands meanwhile; tokens are approximate (prompt
    characters / 4 plus a completion allowance per criterion); ``cost`` is None when neither
    the team (its judge prices) nor litellm has a price for the model."""

    runs: int
    judge_calls: int
    criterion_judgements: int
    criteria_reused: int
    prompt_tokens: int
    completion_tokens: int
    tokens: int
    cost: float | None
    model: str
    skipped_pending: int = 0  # runs left out: an evaluation for this version and judge is pending

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Plan:
    """Per run: how many criteria go to the judge and what the calls look like."""

    run_ids: list[Any] = field(default_factory=list)
    calls: int = 0
    judged: int = 0
    reused: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


def batch_judge(rubric: Rubric, model: str, prices: Mapping[str, Any] | None = None) -> JudgeConfig:
    """The JudgeConfig execution will build for an evaluation created with this judge (and
    the team's judge ``prices``)."""
    config = judge_config_for(rubric, model=model, prices=prices)
    judge = judge_for(Evaluation(judge_config=config))
    if judge.unusable:  # e.g. another provider's model without a judge connection
        raise RescoreValidationError({"judge": judge.unusable})
    if not judge.model:
        raise RescoreValidationError(
            {
                "judge": "no judge model configured: name one, set the rubric's, or EVALSITE_JUDGE_MODEL"
            }
        )
    return judge


def version_specs(version: RubricVersion) -> list[CriterionSpec]:
    return criterion_specs(version.pk)[0]


def _known_keys(team_id: Any, keys: set[str]) -> set[str]:
    """Keys with a stored verdict execution would reuse (same lookup as execute._reusable)."""
    known: set[str] = set()
    for chunk in chunks(sorted(keys)):
        known.update(
            CriterionVerdict.objects.filter(
                team_id=team_id, verdict_key__in=chunk, evaluation__status=Status.SUCCEEDED
            )
            .values_list("verdict_key", flat=True)
            .distinct()
        )
    return known


def plan_build(
    team_id: Any,
    run_ids: Sequence[Any],
    criteria: list[CriterionSpec],
    judge: JudgeConfig,
    strategy: str,
    force: bool,
) -> Plan:
    plan = Plan(run_ids=list(run_ids))
    for chunk in chunks(run_ids):
        texts = list(
            AgentRun.objects.filter(pk__in=chunk).values_list(
                "task_text", "system_text", "output_text"
            )
        )
        keyed = [
            (t, [verdict_key(judge, c.description, t[0], t[1], t[2]) for c in criteria])
            for t in texts
        ]
        known = set() if force else _known_keys(team_id, {k for _, ks in keyed for k in ks})
        for (task, system, output), keys in keyed:
            remaining = [c for c, k in zip(criteria, keys, strict=True) if k not in known]
            plan.reused += len(criteria) - len(remaining)
            plan.judged += len(remaining)
            groups = [remaining] if strategy != "independent" else [[c] for c in remaining]
            for group in groups if remaining else []:
                prompt, completion = rubric_call_tokens(judge, group, task, system, output)
                plan.calls += 1
                plan.prompt_tokens += prompt
                plan.completion_tokens += completion
    return plan


def _cost(judge: JudgeConfig, prompt_tokens: int, completion_tokens: int) -> float | None:
    """The price of these tokens as a judge call's (the team's price, else litellm's), or
    None when neither knows the model."""
    if not prompt_tokens and not completion_tokens:
        return 0.0
    return tokens_cost(judge.model, prompt_tokens, completion_tokens, judge.price)


def estimate_needs_confirmation(*, team: Team, costs: Sequence[float | None], tokens: int) -> bool:
    """Whether estimates (their costs, their tokens together) ask for confirmation: above the
    team's cost threshold, or, when any cost is unknown (no price for the judge), above its
    token threshold. Never skipped for an unknown cost."""
    if any(cost is None for cost in costs):
        return tokens > team.confirm_tokens_above
    return sum(c for c in costs if c is not None) > float(team.confirm_cost_above)


def estimate_from(plan: Plan, judge: JudgeConfig, skipped: int) -> Estimate:
    return Estimate(
        runs=len(plan.run_ids),
        judge_calls=plan.calls,
        criterion_judgements=plan.judged,
        criteria_reused=plan.reused,
        prompt_tokens=plan.prompt_tokens,
        completion_tokens=plan.completion_tokens,
        tokens=plan.prompt_tokens + plan.completion_tokens,
        cost=_cost(judge, plan.prompt_tokens, plan.completion_tokens),
        model=judge.model,
        skipped_pending=skipped,
    )


def judge_clean(judge: str | None) -> str:
    judge = (judge or "").strip()
    if len(judge) > 200 or any(ch.isspace() for ch in judge):
        raise RescoreValidationError({"judge": "a litellm model string, e.g. openai/gpt-4o-mini"})
    return judge


def batch_estimate(
    *,
    team: Team,
    rubric: Rubric,
    scope: RescoreScope | None = None,
    target_version: int | None = None,
    judge: str | None = None,
    force: bool = False,
) -> Estimate:
    """What ``batch_create`` with the same arguments would queue and spend; writes nothing."""
    version = version_for(rubric, target_version)
    judge_config = batch_judge(rubric, judge_clean(judge), team.judge_prices)
    run_ids = scope_run_ids(team, rubric, scope or RescoreScope())
    pending = pending_run_ids(run_ids, version, judge_config.model)
    todo = [r for r in run_ids if r not in pending]
    plan = plan_build(team.pk, todo, version_specs(version), judge_config, rubric.strategy, force)
    return estimate_from(plan, judge_config, skipped=len(pending))


def run_rescore_estimate(
    *,
    run: AgentRun,
    rubric: Rubric | None = None,
    target_version: int | None = None,
    judge: str | None = None,
    force: bool = False,
) -> Estimate:
    return batch_estimate(
        team=run.team, rubric=run_rubric(run, rubric), scope=RescoreScope(runs=(run.pk,)),
        target_version=target_version, judge=judge, force=force,
    )  # fmt: skip
