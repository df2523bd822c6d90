"""Writing an evaluation's outcome: one short transaction, guarded by the lease token."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.utils import timezone

from runs.scoring import JudgeCall, Usage

from ..models import (
    AgentRun,
    AlignmentBreakdown,
    CriterionVerdict,
    Evaluation,
    Kind,
    Status,
)


def _calls_json(calls: list[Any]) -> list[dict[str, Any]]:
    return [c.model_dump(mode="json") if hasattr(c, "model_dump") else dict(c) for c in calls]


def _usage_fields(calls: list[JudgeCall]) -> dict[str, Any]:
    usage = Usage.from_calls(calls)
    return {
        "calls": _calls_json(calls),
        "judge_calls": usage.calls,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "cost": usage.cost if calls else None,
        "latency_ms": usage.latency_ms if calls else None,
    }


def _guarded(evaluation: Evaluation, token: uuid.UUID):
    return Evaluation.objects.filter(id=evaluation.id, status=Status.RUNNING, lease_token=token)


def record_failure(
    evaluation: Evaluation, token: uuid.UUID, message: str, calls: list[Any]
) -> bool:
    with transaction.atomic():
        AgentRun.objects.select_for_update().filter(pk=evaluation.run_id).first()
        done = _guarded(evaluation, token).update(
            status=Status.FAILED,
            error=message[:5000],
            lease_token=None,
            lease_expires_at=None,
            finished_at=timezone.now(),
            **_usage_fields(calls),
        )
        if done:
            run_refresh(evaluation.run_id)
            _batch_hook(evaluation)
    return bool(done)


def _batch_hook(evaluation: Evaluation) -> None:
    """A re-score batch's evaluation ended: once this commits, end the batch if it was the
    last one or release the next of its held evaluations (runs.services.rescore)."""
    batch_id = evaluation.batch_id
    if batch_id is None:
        return
    from .rescore_dispatch import batch_evaluation_finished

    transaction.on_commit(lambda: batch_evaluation_finished(batch_id=batch_id), robust=True)


def record_success(
    evaluation: Evaluation, token: uuid.UUID, result: Any, criteria_ids: dict[str, Any]
) -> bool:
    """Store the result; False (and nothing written) when the lease was lost."""
    fields = _usage_fields(result.calls) | _result_fields(evaluation, result)
    with transaction.atomic():
        run = (
            AgentRun.objects.select_for_update()
            .only("id", "rubric_id", "created_at")
            .get(pk=evaluation.run_id)
        )
        done = _guarded(evaluation, token).update(
            status=Status.SUCCEEDED,
            error="",
            lease_token=None,
            lease_expires_at=None,
            finished_at=timezone.now(),
            **fields,
        )
        if not done:
            return False
        if evaluation.kind == Kind.RUBRIC:
            _store_verdicts(evaluation, run, result, criteria_ids)
        else:
            _store_alignment(evaluation, result)
        _make_current(evaluation)
        run_refresh(run.pk)
        _batch_hook(evaluation)
    return True


def _result_fields(evaluation: Evaluation, result: Any) -> dict[str, Any]:
    if evaluation.kind == Kind.RUBRIC:
        reused = sum(1 for v in result.verdicts if v.reused)
        return {
            "score": result.score,
            "passed": result.passed,
            "reason": result.reason,
            "overall": result.overall or "",
            "criteria_source": result.criteria_source,
            "criteria_reused": reused,
            "criteria_judged": len(result.verdicts) - reused,
        }
    return {
        "score": result.score,
        "passed": None,
        "reason": result.reason,
        "band": result.band,
        "user_score": result.user_score,
        "system_score": result.system_score,
        "system_applicable": result.system_applicable,
    }


def _store_verdicts(evaluation: Evaluation, run: AgentRun, result: Any, criteria_ids: dict) -> None:
    CriterionVerdict.objects.bulk_create(
        CriterionVerdict(
            evaluation_id=evaluation.id,
            team_id=evaluation.team_id,
            run_id=run.pk,
            rubric_id=evaluation.rubric_id,
            run_created_at=run.created_at,
            criterion_id=criteria_ids.get(v.criterion_id),
            criterion_key=v.criterion_id,
            position=i,
            description=v.description,
            required=v.required,
            satisfied=v.satisfied,
            reasoning=v.reasoning,
            verdict_key=v.key,
            reused_from_id=v.reused_from,
        )
        for i, v in enumerate(result.verdicts)
    )


def _store_alignment(evaluation: Evaluation, result: Any) -> None:
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
    AlignmentBreakdown.objects.bulk_create(rows)


def _make_current(evaluation: Evaluation) -> None:
    """The newest succeeded evaluation per (run, kind, rubric) is current (caller holds the
    run's row lock, so two finishing evaluations of one run cannot both win)."""
    if evaluation.calibration:
        return  # a golden-set or consistency judgement never replaces the run's result
    siblings = Evaluation.objects.filter(
        run_id=evaluation.run_id, kind=evaluation.kind, rubric=evaluation.rubric_id
    )
    current = siblings.filter(is_current=True).exclude(id=evaluation.id).first()
    if current is not None and current.created_at > evaluation.created_at:
        return
    if current is not None:
        siblings.filter(id=current.id).update(is_current=False)
        CriterionVerdict.objects.filter(evaluation_id=current.id).update(is_current=False)
    siblings.filter(id=evaluation.id).update(is_current=True)
    CriterionVerdict.objects.filter(evaluation_id=evaluation.id).update(is_current=True)


def run_refresh(run_id: Any) -> None:
    """Recompute the run's denormalised status and current result from its evaluations."""
    run = AgentRun.objects.only("id", "rubric_id").get(pk=run_id)
    evaluations = [
        dict(row)
        for row in Evaluation.objects.filter(run_id=run_id, calibration=False)
        .order_by("-created_at")
        .values(
            "id",
            "kind",
            "rubric_id",
            "rubric_version_id",
            "status",
            "is_current",
            "score",
            "passed",
        )
    ]
    fields: dict[str, Any] = {"status": _run_status(evaluations)}
    rubric_current = [e for e in evaluations if e["kind"] == Kind.RUBRIC and e["is_current"]]
    preferred = [e for e in rubric_current if e["rubric_id"] == run.rubric_id] or rubric_current
    if preferred:
        fields.update(
            passed=preferred[0]["passed"],
            score=preferred[0]["score"],
            current_version_id=preferred[0]["rubric_version_id"],
        )
    alignment = [e for e in evaluations if e["kind"] == Kind.ALIGNMENT and e["is_current"]]
    if alignment:
        fields["alignment_score"] = alignment[0]["score"]
    # Human review labels adjust passed/score/alignment_score; the evaluations keep the judge's.
    from reviews.services import review_result_refresh

    fields.update(
        review_result_refresh(
            run_id=run_id,
            rubric_evaluation_id=preferred[0]["id"] if preferred else None,
            alignment_evaluation_id=alignment[0]["id"] if alignment else None,
        )
    )
    AgentRun.objects.filter(pk=run_id).update(**fields)


def _run_status(evaluations: list[dict[str, Any]]) -> str:
    statuses = {e["status"] for e in evaluations}
    if Status.RUNNING in statuses:
        return Status.RUNNING
    if Status.QUEUED in statuses:
        return Status.QUEUED
    newest: dict[tuple, str] = {}
    for e in evaluations:  # newest first
        if e["status"] != Status.CANCELLED:
            newest.setdefault((e["kind"], e["rubric_id"]), e["status"])
    return Status.FAILED if Status.FAILED in newest.values() else Status.SUCCEEDED
