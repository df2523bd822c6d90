"""The prompt alignment scorer: four weighted dimensions per perspective (SCORING.md §2)."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

from .errors import ScoringInputError, pick_error
from .judge import complete_json
from .llm import count_tokens
from .prompts import alignment_messages, alignment_schema, one_line
from .render import DEFAULT_TOKEN_BUDGET, RunView, View, run_view
from .rubric import checked_budget, checked_view
from .rules import (
    DIMENSIONS,
    alignment_combine,
    alignment_final,
    band_for,
    display_round,
    perspective_score,
)
from .sync import checked_scale, run_sync
from .types import (
    AlignmentMode,
    AlignmentResult,
    AlignmentWeights,
    AppropriatenessAnalysis,
    CompletenessAnalysis,
    IntentAnalysis,
    JudgeCall,
    JudgeConfig,
    Perspective,
    PerspectiveAnswer,
    PerspectiveResult,
    RequirementsAnalysis,
    Usage,
    Weights,
)

NOT_APPLICABLE = (
    "System perspective not applicable (no system prompt): the score is the user perspective's."
)
USER_NOT_APPLICABLE = (
    "User perspective not applicable (no user message): the score is the system perspective's."
)
NO_OUTPUT = "the agent produced no output"
NO_OUTPUT_NOTE = "The agent produced no output: every dimension scores 0 and no judge was asked."


def _two(value: float) -> str:
    """A score in reason text: rounded half up to 2 decimals (rules.display_round)."""
    return f"{display_round(value):.2f}"


def no_output_answer() -> PerspectiveAnswer:
    """A perspective's answer when the agent produced nothing to judge (SCORING.md "Missing
    prompts"): every dimension 0, each reasoning saying why. Built here, never asked."""
    return PerspectiveAnswer(
        intent=IntentAnalysis(
            score=0.0, primary_intent="", is_addressed=False, reasoning=NO_OUTPUT
        ),
        requirements=RequirementsAnalysis(score=0.0, requirements=[]),
        completeness=CompletenessAnalysis(score=0.0, missing_elements=[], reasoning=NO_OUTPUT),
        appropriateness=AppropriatenessAnalysis(
            score=0.0, format_aligned=False, tone_aligned=False, reasoning=NO_OUTPUT
        ),
        overall_assessment=NO_OUTPUT_NOTE,
    )


def weighted_score(answer: PerspectiveAnswer, weights: Weights) -> float:
    """Σ dimension score × its weight, summed exactly (rules.perspective_score)."""
    return perspective_score(
        {d: getattr(answer, d).score for d in DIMENSIONS}, weights.model_dump()
    )


def _perspective(
    name: Perspective, answer: PerspectiveAnswer, weights: Weights
) -> PerspectiveResult:
    return PerspectiveResult(
        perspective=name,
        intent=answer.intent,
        requirements=answer.requirements,
        completeness=answer.completeness,
        appropriateness=answer.appropriateness,
        overall_assessment=answer.overall_assessment,
        weights=weights,
        weighted_score=weighted_score(answer, weights),
    )


# --- Reason text ---------------------------------------------------------------------------------


def _dimension_lines(p: PerspectiveResult) -> list[str]:
    met = sum(r.fulfilled for r in p.requirements.requirements)
    total = len(p.requirements.requirements)
    fit = p.appropriateness
    reasons = {
        "intent": f"primary intent “{one_line(p.intent.primary_intent)}”, "
        f"{'addressed' if p.intent.is_addressed else 'not addressed'}: {one_line(p.intent.reasoning)}",
        "requirements": f"{met} of {total} requirements fulfilled",
        "completeness": one_line(p.completeness.reasoning),
        "appropriateness": f"format {'fits' if fit.format_aligned else 'does not fit'}, tone "
        f"{'fits' if fit.tone_aligned else 'does not fit'}: {one_line(fit.reasoning)}",
    }
    lines = []
    for d in DIMENSIONS:
        value, weight = getattr(p, d).score, getattr(p.weights, d)
        lines.append(f"- {d.capitalize()} (weight {_two(weight)}): {_two(value)} — {reasons[d]}")
    return lines


def _gap_lines(p: PerspectiveResult) -> list[str]:
    lines = [
        f"- Unmet requirement: {one_line(r.requirement)} — {one_line(r.reasoning)}"
        for r in p.requirements.requirements
        if not r.fulfilled
    ]
    lines += [f"- Missing: {one_line(m)}" for m in p.completeness.missing_elements]
    return lines


def _perspective_lines(p: PerspectiveResult) -> list[str]:
    header = f"{p.perspective.capitalize()} perspective: {_two(p.weighted_score)}"
    overall = (
        [f"- Overall: {one_line(p.overall_assessment)}"] if p.overall_assessment.strip() else []
    )
    return [header, *_dimension_lines(p), *_gap_lines(p), *overall]


def alignment_reason(result: AlignmentResult, weights: AlignmentWeights) -> str:
    """Score, band, every dimension (weight, value, reasoning), unmet requirements, gaps."""
    lines = [
        f"Alignment score {result.display_score:g} out of {result.scale:g} ({result.band}; "
        f"weighted {_two(result.weighted_score)}, mode {result.mode})."
    ]
    if result.no_output:
        lines.append(NO_OUTPUT_NOTE)
    if result.mode == "both" and result.system_applicable and result.user_applicable:
        share = weights.user_share
        lines.append(
            f"Combined as {_two(share)} × user {_two(result.user_score or 0.0)} + "
            f"{_two(1 - share)} × system {_two(result.system_score or 0.0)}."
        )
    for p in result.perspectives.values():
        lines += _perspective_lines(p)
    if result.mode == "both" and not result.system_applicable:
        lines.append(NOT_APPLICABLE)
    if result.mode == "both" and not result.user_applicable:
        lines.append(USER_NOT_APPLICABLE)
    return "\n".join(lines)


# --- The scorer ----------------------------------------------------------------------------------


def perspectives_for(mode: AlignmentMode, task: str, system: str | None) -> list[Perspective]:
    """Which perspectives a run is judged from (SCORING.md "Missing prompts"); raises
    ScoringInputError when the mode's reference is missing. `both` judges the perspectives
    whose reference the run has, and needs at least one of them."""
    has_user, has_system = bool((task or "").strip()), bool((system or "").strip())
    if mode == "user" and not has_user:
        raise ScoringInputError(
            "alignment mode 'user' judges the output against the user's request, and this "
            "run has no user message: send the run's input messages with a user turn, or "
            "use mode 'system' or 'both'"
        )
    if mode == "system" and not has_system:
        raise ScoringInputError(
            "alignment mode 'system' judges the output against the system prompt, and this "
            "run has none: send its system message, or use mode 'user' or 'both'"
        )
    if mode == "both" and not (has_user or has_system):
        raise ScoringInputError(
            "alignment mode 'both' judges the output against the user's request and the "
            "system prompt, and this run has no user message and no system prompt: send "
            "the run's input messages"
        )
    if mode == "both":
        both: list[tuple[Perspective, bool]] = [("user", has_user), ("system", has_system)]
        return [p for p, present in both if present]
    return [mode]


class AlignmentScorer:
    """Scores how well an output aligns with the user's request and/or the system prompt."""

    def __init__(
        self,
        judge: JudgeConfig,
        mode: AlignmentMode = "both",
        scale: float = 1,
        weights: AlignmentWeights | None = None,
        view: View = "final",
        token_budget: int = DEFAULT_TOKEN_BUDGET,
    ) -> None:
        if mode not in ("user", "system", "both"):
            raise ValueError(f"mode must be 'user', 'system' or 'both', got {mode!r}")
        self.judge = judge
        self.mode: AlignmentMode = mode
        self.scale = checked_scale(scale)
        self.weights = weights or AlignmentWeights()
        self.view = checked_view(view)
        self.token_budget = checked_budget(token_budget)

    def score(self, **kwargs: Any) -> AlignmentResult:
        """`ascore` for synchronous callers (not inside a running event loop)."""
        return run_sync(lambda: self.ascore(**kwargs), "AlignmentScorer")

    async def ascore(
        self,
        *,
        task: str | None = None,
        output: Any = "",
        system: str | None = None,
        messages: Any = None,
        expected_output: str | None = None,
        rendered: RunView | None = None,
    ) -> AlignmentResult:
        """One judge call per perspective judged; both perspectives run concurrently.

        The run is given as for `RubricScorer.ascore`. In the conversation and trajectory
        views the user perspective's reference is every user turn, not only the first."""
        shown = rendered or run_view(
            view=self.view,
            budget=self.token_budget,
            count=partial(count_tokens, self.judge.model),
            task=task,
            output=output,
            system=system,
            messages=messages,
            expected_output=expected_output,
        )
        perspectives = self._perspectives(shown.user_turns, shown.system)
        if not shown.has_output:
            result = self._no_output(perspectives)
        else:
            result = await self._judged(perspectives, shown)
        return result.model_copy(update={"view": shown.view, "rendering": shown.rendering})

    async def _judged(self, perspectives: list[Perspective], shown: RunView) -> AlignmentResult:
        outcomes = await asyncio.gather(
            *(self._judge(p, shown) for p in perspectives), return_exceptions=True
        )
        calls = [
            c for o in outcomes for c in (o[1] if isinstance(o, tuple) else getattr(o, "calls", []))
        ]
        errors = [o for o in outcomes if isinstance(o, BaseException)]
        if errors:
            raise pick_error(errors, calls)
        pairs = [o for o in outcomes if isinstance(o, tuple)]
        return self._result({p.perspective: p for p, _ in pairs}, calls)

    def _no_output(self, perspectives: list[Perspective]) -> AlignmentResult:
        """No output at all: every dimension of every perspective 0, and no judge call."""
        answer = no_output_answer()
        results: dict[str, PerspectiveResult] = {
            p: _perspective(p, answer, self._weights(p)) for p in perspectives
        }
        return self._result(results, [], no_output=True)

    def _perspectives(self, task: str, system: str | None) -> list[Perspective]:
        return perspectives_for(self.mode, task, system)

    def _weights(self, perspective: Perspective) -> Weights:
        return self.weights.user if perspective == "user" else self.weights.system

    async def _judge(
        self, perspective: Perspective, shown: RunView
    ) -> tuple[PerspectiveResult, list[JudgeCall]]:
        messages = alignment_messages(
            perspective=perspective,
            task=shown.user_turns,
            system=shown.system or None,
            output=shown.output,
            transcript=shown.transcript,
            reference=shown.reference,
        )
        answer, calls = await complete_json(
            self.judge,
            messages,
            schema_name=f"alignment_{perspective}",
            schema=alignment_schema(),
            validate=PerspectiveAnswer.model_validate,
        )
        return _perspective(perspective, answer, self._weights(perspective)), calls

    def _combined(self, results: dict[str, PerspectiveResult]) -> float:
        user, system = results.get("user"), results.get("system")
        return alignment_combine(
            user.weighted_score if user is not None else None,
            system.weighted_score if system is not None else None,
            self.weights.user_share,
        )

    def _result(
        self,
        results: dict[str, PerspectiveResult],
        calls: list[JudgeCall],
        no_output: bool = False,
    ) -> AlignmentResult:
        weighted = self._combined(results)
        score = alignment_final(weighted, self.scale)
        result = AlignmentResult(
            score=score,
            display_score=display_round(score),
            weighted_score=weighted,
            scale=self.scale,
            user_score=results["user"].weighted_score if "user" in results else None,
            system_score=results["system"].weighted_score if "system" in results else None,
            system_applicable=self.mode != "user" and "system" in results,
            user_applicable=self.mode != "system" and "user" in results,
            no_output=no_output,
            mode=self.mode,
            perspectives=results,
            band=band_for(weighted),
            reason="",
            calls=calls,
            usage=Usage.from_calls(calls),
        )
        return result.model_copy(update={"reason": alignment_reason(result, self.weights)})
