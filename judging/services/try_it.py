"""The rubric editor's "try it": draft criteria scored on one stored run, saving nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from judge_engine import Criterion as CriterionSpec
from judge_engine import JudgeError, ScoringInputError
from judge_engine.redact import tenant_error
from judging.judge_runtime import run_judged
from rubrics.judging import judge_config_for, judge_for
from rubrics.models import Rubric
from rubrics.services import CriterionInput, criteria_validate, judge_view_validate
from runs.models import AgentRun, Evaluation

from .plans import rubric_scoring


@dataclass(frozen=True)
class TryOutcome:
    """The editor's "try it" result: the scorer's result, or the judge's error message."""

    result: Any = None
    error: str = ""

    @property
    def tokens(self) -> int:
        calls = getattr(self.result, "calls", None) or []
        return sum((c.prompt_tokens or 0) + (c.completion_tokens or 0) for c in calls)

    @property
    def cost(self) -> float | None:
        costs = [c.cost for c in getattr(self.result, "calls", None) or [] if c.cost is not None]
        return sum(costs) if costs else None

    @property
    def latency_ms(self) -> float | None:
        calls = getattr(self.result, "calls", None) or []
        return sum(c.latency_ms for c in calls) if calls else None


def rubric_try(
    *,
    rubric: Rubric,
    criteria: Sequence[CriterionInput],
    run: AgentRun,
    judge_view: str,
    run_token_budget: int,
) -> TryOutcome:
    """Score one stored run with draft criteria, the draft's judge view and token budget and
    the rubric's judge, saving nothing and reusing no stored verdict (a try must show what the
    judge says now). Invalid input raises rubrics.services.RubricValidationError."""
    criteria_validate(criteria)
    judge_view_validate(judge_view=judge_view, run_token_budget=run_token_budget)
    # judge_for reads only the frozen judge config: the same judge a real evaluation gets.
    config = judge_config_for(rubric, prices=rubric.team.judge_prices)
    judge = judge_for(Evaluation(judge_config=config))
    specs = [
        CriterionSpec(id=c.key or f"draft{i + 1}", description=c.description, required=c.required)
        for i, c in enumerate(criteria)
    ]
    coroutine = rubric_scoring(
        run=run,
        judge=judge,
        criteria=specs,
        scale=rubric.scale,
        strategy=rubric.strategy,
        reuse={},
        view=judge_view,
        token_budget=run_token_budget,
    )
    try:
        return TryOutcome(
            result=run_judged(coroutine, timeout=judge.timeout * (judge.retries + 2) + 5)
        )
    except (JudgeError, ScoringInputError) as exc:
        return TryOutcome(error=tenant_error(str(exc)))
    except TimeoutError:
        return TryOutcome(error="the judge did not answer in time")
