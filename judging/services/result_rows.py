"""The rows a judged evaluation's result becomes: its verdicts or its alignment breakdown."""

from __future__ import annotations

from typing import Any

from runs.models import AgentRun, AlignmentBreakdown, CriterionVerdict, Evaluation


def verdict_rows(
    evaluation: Evaluation, result: Any, criteria_ids: dict[str, Any], run: AgentRun, current: bool
) -> list[CriterionVerdict]:
    """The verdict rows of a rubric evaluation's result, unsaved, by position."""
    return [
        CriterionVerdict(
            evaluation_id=evaluation.id,
            team_id=evaluation.team_id,
            run_id=run.pk,
            rubric_id=evaluation.rubric_id,
            run_created_at=run.created_at,
            is_current=current,
            criterion_id=criteria_ids.get(v.criterion_id),
            criterion_key=v.criterion_id,
            position=i,
            description=v.description,
            required=v.required,
            satisfied=v.satisfied,
            reasoning=v.reasoning,
            verdict_key=v.key,
            evidence=list(v.evidence),
            evidence_note=(v.evidence_note or "")[:300],
            reused_from_id=v.reused_from,
        )
        for i, v in enumerate(result.verdicts)
    ]


def alignment_rows(evaluation: Evaluation, result: Any) -> list[AlignmentBreakdown]:
    """The breakdown rows of an alignment evaluation's result, unsaved, one per perspective."""
    rows = []
    for name, p in result.perspectives.items():
        rows.append(
            AlignmentBreakdown(
                evaluation_id=evaluation.id,
                perspective=name,
                weighted_score=p.weighted_score,
                weights=p.weights.model_dump()
                if hasattr(p.weights, "model_dump")
                else dict(p.weights),
                intent_score=p.intent.score,
                primary_intent=p.intent.primary_intent,
                intent_addressed=p.intent.is_addressed,
                intent_reasoning=p.intent.reasoning,
                requirements_score=p.requirements.score,
                requirements=[r.model_dump() for r in p.requirements.requirements],
                completeness_score=p.completeness.score,
                missing_elements=list(p.completeness.missing_elements),
                completeness_reasoning=p.completeness.reasoning,
                appropriateness_score=p.appropriateness.score,
                format_aligned=p.appropriateness.format_aligned,
                tone_aligned=p.appropriateness.tone_aligned,
                appropriateness_reasoning=p.appropriateness.reasoning,
                overall_assessment=p.overall_assessment,
            )
        )
    return rows
