"""How big a judge call will be, before it is made: for re-score estimates and the rate limiter.

Prompt tokens are the characters of the exact messages the engine will send
(judge_engine.prompts builds them) divided by 4, the usual rule of thumb for English text with
OpenAI-style tokenizers; the JSON schema sent in ``response_format`` is not counted (providers
count it differently). Completion tokens are an allowance: ANSWER_TOKENS_PER_VERDICT for each
criterion asked plus ANSWER_TOKENS_OVERHEAD. Both are approximations, documented as such
wherever they are shown; the number of calls and of criteria asked is exact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from judge_engine import Criterion as CriterionSpec
from judge_engine import JudgeConfig, PriorVerdict, ScoringInputError, verdict_key
from judge_engine.alignment import perspectives_for
from judge_engine.prompts import alignment_messages, rubric_messages
from judge_engine.types import AlignmentMode
from runs.models import Evaluation, Kind

CHARS_PER_TOKEN = 4
ANSWER_TOKENS_PER_VERDICT = 40
ANSWER_TOKENS_OVERHEAD = 30
ALIGNMENT_ANSWER_TOKENS = 350


def _chars(messages: list[dict[str, str]]) -> int:
    return sum(len(m.get("content") or "") for m in messages)


def rubric_call_tokens(
    judge: JudgeConfig, criteria: Sequence[CriterionSpec], task: str, system: str, output: str
) -> tuple[int, int]:
    """(prompt, completion) tokens of one rubric call asking about ``criteria``."""
    messages = rubric_messages(
        task=task,
        system=system or None,
        output=output,
        criteria=[(str(c.id), c.description) for c in criteria],
    )
    completion = ANSWER_TOKENS_OVERHEAD + ANSWER_TOKENS_PER_VERDICT * len(criteria)
    return _chars(messages) // CHARS_PER_TOKEN, completion


@dataclass(frozen=True)
class CallPlan:
    requests: int
    tokens: int


def rubric_plan(
    judge: JudgeConfig,
    criteria: Sequence[CriterionSpec],
    reuse: Mapping[str, PriorVerdict],
    *,
    task: str,
    system: str,
    output: str,
    strategy: str,
) -> CallPlan:
    """The calls a rubric evaluation will make once ``reuse`` is taken into account (the same
    rule as RubricScorer.ascore: a criterion whose verdict key is in ``reuse`` is not asked)."""
    remaining = [
        c for c in criteria if verdict_key(judge, c.description, task, system, output) not in reuse
    ]
    if not remaining:
        return CallPlan(requests=0, tokens=0)
    groups = [[c] for c in remaining] if strategy == "independent" else [remaining]
    tokens = sum(sum(rubric_call_tokens(judge, g, task, system, output)) for g in groups)
    return CallPlan(requests=len(groups), tokens=tokens)


def alignment_plan(evaluation: Evaluation) -> CallPlan:
    """One call per perspective judged (the scorer's own rule: judge_engine.alignment); none
    when a missing prompt makes the evaluation fail before any call."""
    run = evaluation.run
    mode = cast(AlignmentMode, evaluation.alignment_mode or "both")
    try:
        perspectives = perspectives_for(mode, run.task_text, run.system_text)
    except ScoringInputError:
        perspectives = []
    tokens = 0
    for perspective in perspectives:
        messages = alignment_messages(
            perspective=perspective,
            task=run.task_text,
            system=run.system_text or None,
            output=run.output_text,
        )
        tokens += _chars(messages) // CHARS_PER_TOKEN + ALIGNMENT_ANSWER_TOKENS
    return CallPlan(requests=len(perspectives), tokens=tokens)


def evaluation_plan(
    evaluation: Evaluation,
    judge: JudgeConfig,
    criteria: Sequence[CriterionSpec] | None = None,
    reuse: Mapping[str, Any] | None = None,
) -> CallPlan:
    """The judge calls (and their approximate tokens) an evaluation is about to make."""
    if evaluation.kind != Kind.RUBRIC:
        return alignment_plan(evaluation)
    run = evaluation.run
    return rubric_plan(
        judge,
        criteria or [],
        reuse or {},
        task=run.task_text,
        system=run.system_text,
        output=run.output_text,
        strategy=evaluation.strategy or "batched",
    )
