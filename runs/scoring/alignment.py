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
from .rules import DIMENSIONS, alignment_combine, band_for, perspective_score
from .sync import checked_scale, run_sync
from .types import (
    AlignmentMode,
    AlignmentResult,
    AlignmentWeights,
    JudgeCall,
    JudgeConfig,
    Perspective,
    PerspectiveAnswer,
    PerspectiveResult,
    Usage,
    Weights,
)

NOT_APPLICABLE = (
    "System perspective not applicable (no system prompt): the score is the user perspective's."
)


def weighted_score(answer: PerspectiveAnswer, weights: Weights) -> float:
    """Σ dimension score × its weight, unrounded."""
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
        lines.append(f"- {d.capitalize()} (weight {weight:.2f}): {value:.2f} — {reasons[d]}")
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
    header = f"{p.perspective.capitalize()} perspective: {p.weighted_score:.2f}"
    overall = (
        [f"- Overall: {one_line(p.overall_assessment)}"] if p.overall_assessment.strip() else []
    )
    return [header, *_dimension_lines(p), *_gap_lines(p), *overall]


def alignment_reason(result: AlignmentResult, weights: AlignmentWeights) -> str:
    """Score, band, every dimension (weight, value, reasoning), unmet requirements, gaps."""
    lines = [
        f"Alignment score {result.display_score:g} out of {result.scale:g} ({result.band}; "
        f"weighted {result.weighted_score:.2f}, mode {result.mode})."
    ]
    if result.mode == "both" and result.system_applicable:
        share = weights.user_share
        lines.append(
            f"Combined as {share:.2f} × user {result.user_score:.2f} + "
            f"{1 - share:.2f} × system {result.system_score:.2f}."
        )
    for p in result.perspectives.values():
        lines += _perspective_lines(p)
    if result.mode == "both" and not result.system_applicable:
        lines.append(NOT_APPLICABLE)
    return "\n".join(lines)


# --- The scorer ----------------------------------------------------------------------------------


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
        result = self._result({p.perspective: p for p, _ in pairs}, calls)
        return result.model_copy(update={"view": shown.view, "rendering": shown.rendering})

    def _perspectives(self, task: str, system: str | None) -> list[Perspective]:
        """Which perspectives to judge; raises ScoringInputError when one cannot be."""
        if self.mode in ("user", "both") and not (task or "").strip():
            raise ScoringInputError(
                f"alignment mode {self.mode!r} judges the output against the user's request, "
                "and this run has no user message: send the run's input messages with a user turn"
            )
        if self.mode == "system" and not (system or "").strip():
            raise ScoringInputError(
                "alignment mode 'system' judges the output against the system prompt, and this "
                "run has none: send its system message, or use mode 'user' or 'both'"
            )
        if self.mode == "both":
            return ["user", "system"] if (system or "").strip() else ["user"]
        return [self.mode]

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
        weights = self.weights.user if perspective == "user" else self.weights.system
        return _perspective(perspective, answer, weights), calls

    def _combined(self, results: dict[str, PerspectiveResult]) -> float:
        user, system = results.get("user"), results.get("system")
        return alignment_combine(
            user.weighted_score if user is not None else None,
            system.weighted_score if system is not None else None,
            self.weights.user_share,
        )

    def _result(
        self, results: dict[str, PerspectiveResult], calls: list[JudgeCall]
    ) -> AlignmentResult:
        weighted = self._combined(results)
        score = weighted * self.scale
        result = AlignmentResult(
            score=score,
            display_score=round(score, 2),
            weighted_score=weighted,
            scale=self.scale,
            user_score=results["user"].weighted_score if "user" in results else None,
            system_score=results["system"].weighted_score if "system" in results else None,
            system_applicable=self.mode != "user" and "system" in results,
            mode=self.mode,
            perspectives=results,
            band=band_for(weighted),
            reason="",
            calls=calls,
            usage=Usage.from_calls(calls),
        )
        return result.model_copy(update={"reason": alignment_reason(result, self.weights)})
