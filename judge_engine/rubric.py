"""The rubric scorer: binary verdicts per criterion, gated into pass / fail (SCORING.md §1)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from .errors import JudgeError, ScoringInputError, pick_error
from .examples import (
    DEFAULT_MAX_EXAMPLES,
    Example,
    checked_limit,
    coerce_examples,
    examples_by_criterion,
)
from .judge import complete_json
from .keys import criterion_keys, key_for  # noqa: F401 - key_for: re-exported
from .llm import count_tokens
from .prompts import one_line, rubric_messages, rubric_schema
from .render import DEFAULT_TOKEN_BUDGET, VIEWS, RunView, View, run_view
from .rules import gating_verdicts, rubric_passed, rubric_score
from .sync import checked_scale, run_sync
from .text import coerce_criteria, resolve_criteria
from .types import (
    CriteriaSource,
    Criterion,
    JudgeCall,
    JudgeConfig,
    PriorVerdict,
    RubricResult,
    Usage,
    Verdict,
)
from .verdicts import Answer, validate_verdicts  # noqa: F401 - validate_verdicts: re-exported

Strategy = Literal["batched", "independent"]
# Ids the judge sees verbatim; any other id (spaces, brackets...) is replaced by a positional
# label in the prompt so it cannot break the one-criterion-per-line protocol.
_SAFE_LABEL = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")

NO_RUBRIC_REASON = (
    "No rubric applied: no criteria were configured, and the run's request context, metadata "
    "and input carry no rubric, so nothing was judged."
)
# Every criterion's reasoning when the agent produced nothing to judge (SCORING.md "No output
# at all"): no judge is asked, and the run fails.
NO_OUTPUT_REASONING = "the agent produced no output"


@dataclass(frozen=True)
class _Judged:
    verdicts: dict[str, Answer]  # criterion id -> answer
    overall: str | None
    calls: list[JudgeCall]


def _labels(batch: list[Criterion]) -> dict[str, Criterion]:
    ids = [str(c.id) for c in batch]
    if all(_SAFE_LABEL.match(i) for i in ids):
        return dict(zip(ids, batch, strict=True))
    return {f"k{n}": c for n, c in enumerate(batch, start=1)}


# --- Reason text ---------------------------------------------------------------------------------


def _count(n: int, total: int, all_optional: bool) -> str:
    noun = "criterion" if total == 1 else "criteria"
    kind = "" if all_optional else "required "
    return f"{n} of {total} {kind}{noun}"


def rubric_reason(verdicts: list[Verdict], passed: bool, overall: str | None) -> str:
    """The feedback an agent loop shows the agent: header from `passed`, one line per criterion."""
    gating = gating_verdicts(verdicts)
    all_optional = not any(v.required for v in verdicts)
    unmet = sum(not v.satisfied for v in gating)
    gates_note = " (none is marked required, so every criterion counts)" if all_optional else ""
    if passed:
        lines = [
            f"Rubric satisfied: {_count(len(gating), len(gating), all_optional)} met{gates_note}."
        ]
    else:
        lines = ["Rubric not satisfied."]
    for v in verdicts:
        mark = "✓" if v.satisfied else "✗"
        kind = "required" if v.required else "optional"
        lines.append(f"{mark} ({kind}) {one_line(v.description)} — {one_line(v.reasoning)}")
    if overall:
        lines.append(f"Overall assessment: {overall.strip()}")
    if not passed:
        lines.append(f"{_count(unmet, len(gating), all_optional)} not met{gates_note}.")
    return "\n".join(lines)


# --- The scorer ----------------------------------------------------------------------------------


class RubricScorer:
    """Scores a run against binary criteria with an LLM judge.

    `criteria` (text or a list) is the configured rubric; when it has none, the run's own
    `rubric` value is used (see `resolve_criteria`). `scale` multiplies the 0/1 score.
    `instructions` (text) and `examples` (`Example`s or dicts naming a criterion id; at most
    `max_examples_per_criterion` of each criterion are shown) teach the judge: both are in
    the prompt after the fixed rules and in the verdict keys when present.
    """

    def __init__(
        self,
        judge: JudgeConfig,
        criteria: Any = None,
        scale: float = 1,
        strategy: Strategy = "batched",
        view: View = "final",
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        instructions: str | None = None,
        examples: Any = None,
        max_examples_per_criterion: int = DEFAULT_MAX_EXAMPLES,
    ) -> None:
        if instructions is not None and not isinstance(instructions, str):
            raise ValueError("instructions must be text")
        if strategy not in ("batched", "independent"):
            raise ValueError(f"strategy must be 'batched' or 'independent', got {strategy!r}")
        self.judge = judge
        self.criteria = coerce_criteria(criteria)
        self.scale = checked_scale(scale)
        self.strategy = strategy
        self.view = checked_view(view)
        self.token_budget = checked_budget(token_budget)
        self.instructions = (instructions or "").strip()
        self.examples = coerce_examples(examples)
        self.max_examples = checked_limit(max_examples_per_criterion)

    def render(
        self,
        *,
        task: str | None = None,
        output: Any = "",
        system: str | None = None,
        messages: Any = None,
        expected_output: str | None = None,
    ) -> RunView:
        """What the judge will see of this run (the scorer's view, within its token budget)."""
        return run_view(
            view=self.view,
            budget=self.token_budget,
            count=partial(count_tokens, self.judge.model),
            task=task,
            output=output,
            system=system,
            messages=messages,
            expected_output=expected_output,
        )

    def score(self, **kwargs: Any) -> RubricResult:
        """`ascore` for synchronous callers (not inside a running event loop)."""
        return run_sync(lambda: self.ascore(**kwargs), "RubricScorer")

    async def ascore(
        self,
        *,
        task: str | None = None,
        output: Any = "",
        system: str | None = None,
        messages: Any = None,
        expected_output: str | None = None,
        request_context: Any = None,
        metadata: Any = None,
        input: Any = None,  # noqa: A002 - the run's field is called input
        reuse: Mapping[str, PriorVerdict] | None = None,
        rendered: RunView | None = None,
    ) -> RubricResult:
        """Judge the run; verdicts whose key is in `reuse` are taken from there, not asked.

        The run is `messages` (its input messages, any accepted shape) and `output` (a string
        or output messages, any shape), or the texts `task`, `system` and `output`; `rendered`
        is a view the caller already rendered (the server does, from stored steps)."""
        criteria, source = self._resolve(request_context, metadata, input)
        if not criteria:
            return self._no_rubric()
        shown = rendered or self.render(
            task=task,
            output=output,
            system=system,
            messages=messages,
            expected_output=expected_output,
        )
        taught = self._taught(criteria)
        keys = self.verdict_keys(criteria, shown)
        if not shown.has_output:
            return self._no_output(criteria, keys, source, shown)
        reuse = reuse or {}
        pending = [c for c in criteria if keys[str(c.id)] not in reuse]
        judged = await self._judge(pending, shown, taught) if pending else _Judged({}, None, [])
        verdicts = [self._verdict(c, keys[str(c.id)], judged, reuse) for c in criteria]
        return self._result(verdicts, judged, source, shown)

    def _resolve(
        self, request_context: Any, metadata: Any, input: Any
    ) -> tuple[list[Criterion], CriteriaSource]:  # noqa: A002
        try:
            return resolve_criteria(self.criteria, request_context, metadata, input)
        except ValueError as exc:
            raise ScoringInputError(str(exc)) from exc

    def verdict_keys(self, criteria: list[Criterion], shown: RunView) -> dict[str, str]:
        """Criterion id -> verdict key on a rendered run (what the server looks up)."""
        taught = self._taught(criteria)
        return criterion_keys(self.judge, criteria, shown, self.instructions, taught)

    def _taught(self, criteria: list[Criterion]) -> dict[str, list[Example]]:
        """Each criterion's examples as shown (at most the limit); an example naming no
        criterion of this rubric is an input error, not silently dropped."""
        ids = {str(c.id) for c in criteria}
        unknown = sorted({e.criterion_id for e in self.examples} - ids)
        if unknown:
            raise ScoringInputError(f"examples name unknown criterion ids: {', '.join(unknown)}")
        return examples_by_criterion(self.examples, self.max_examples)

    def _no_rubric(self) -> RubricResult:
        # SCORING.md says "score 1, passed: true". We return scale × 1, so that for every
        # result score == scale exactly when passed (with scale 1, that is the spec's 1).
        return RubricResult(
            passed=True,
            score=self.scale,
            reason=NO_RUBRIC_REASON,
            verdicts=[],
            criteria_source="none",
        )

    def _no_output(
        self,
        criteria: list[Criterion],
        keys: dict[str, str],
        source: CriteriaSource,
        shown: RunView,
    ) -> RubricResult:
        """Nothing to judge: every criterion unsatisfied for that reason, without a judge call
        and without reusing a verdict a judge once gave on an empty output."""
        verdicts = [
            Verdict(
                criterion_id=str(c.id),
                description=c.description,
                required=c.required,
                satisfied=False,
                reasoning=NO_OUTPUT_REASONING,
                key=keys[str(c.id)],
            )
            for c in criteria
        ]
        result = self._result(verdicts, _Judged({}, None, []), source, shown)
        return result.model_copy(update={"no_output": True})

    async def _judge(
        self, pending: list[Criterion], shown: RunView, taught: dict[str, list[Example]]
    ) -> _Judged:
        if self.strategy == "batched":
            return await self._judge_batch(pending, shown, taught)
        outcomes = await asyncio.gather(
            *(self._judge_batch([c], shown, taught) for c in pending), return_exceptions=True
        )
        calls = [
            call
            for o in outcomes
            for call in (o.calls if isinstance(o, _Judged | JudgeError) else [])
        ]
        errors = [o for o in outcomes if isinstance(o, BaseException)]
        if errors:
            raise pick_error(errors, calls)
        judged = [o for o in outcomes if isinstance(o, _Judged)]
        merged = {cid: v for j in judged for cid, v in j.verdicts.items()}
        # One overall assessment per criterion says nothing the reasonings do not.
        overall = judged[0].overall if len(judged) == 1 else None
        return _Judged(merged, overall, calls)

    async def _judge_batch(
        self, batch: list[Criterion], shown: RunView, taught: dict[str, list[Example]]
    ) -> _Judged:
        labelled = _labels(batch)
        asked = {label: c.description for label, c in labelled.items()}
        messages = rubric_messages(
            task=shown.task,
            system=shown.system or None,
            output=shown.output,
            transcript=shown.transcript,
            reference=shown.reference,
            criteria=list(asked.items()),
            instructions=self.instructions,
            examples={label: taught.get(str(c.id), []) for label, c in labelled.items()},
        )
        steps = shown.shown_steps if shown.has_transcript else None
        (found, overall), calls = await complete_json(
            self.judge,
            messages,
            schema_name="rubric_verdicts",
            schema=rubric_schema(list(asked), evidence=shown.has_transcript),
            validate=partial(validate_verdicts, asked=asked, steps=steps),
        )
        return _Judged({str(labelled[label].id): v for label, v in found.items()}, overall, calls)

    @staticmethod
    def _verdict(
        c: Criterion, key: str, judged: _Judged, reuse: Mapping[str, PriorVerdict]
    ) -> Verdict:
        prior = reuse.get(key)
        reused = prior is not None and str(c.id) not in judged.verdicts
        if prior is not None and reused:
            answer = Answer(prior.satisfied, prior.reasoning, tuple(prior.evidence))
        else:
            answer = judged.verdicts[str(c.id)]
        return Verdict(
            criterion_id=str(c.id),
            description=c.description,
            required=c.required,
            satisfied=answer.satisfied,
            reasoning=answer.reasoning,
            key=key,
            reused=reused,
            reused_from=prior.source_id if prior is not None and reused else None,
            evidence=list(answer.evidence),
            evidence_note=answer.evidence_note,
        )

    def _result(
        self, verdicts: list[Verdict], judged: _Judged, source: CriteriaSource, shown: RunView
    ) -> RubricResult:
        passed = rubric_passed(verdicts)
        return RubricResult(
            passed=passed,
            score=rubric_score(passed, self.scale),
            reason=rubric_reason(verdicts, passed, judged.overall),
            verdicts=verdicts,
            overall=judged.overall,
            criteria_source=source,
            calls=judged.calls,
            usage=Usage.from_calls(judged.calls),
            view=shown.view,
            rendering=shown.rendering,
        )


def checked_view(view: Any) -> View:
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)}, got {view!r}")
    return view  # type: ignore[no-any-return]


def checked_budget(budget: Any) -> int:
    if type(budget) is not int or budget < 1000:
        raise ValueError(f"token_budget must be a whole number of at least 1000, got {budget!r}")
    return budget
