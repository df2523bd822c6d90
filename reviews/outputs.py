"""Fill the review API's output schemas (reviews/schemas.py) from rows and the selectors'
reports (the operations in reviews.api call these builders)."""

from __future__ import annotations

from typing import Any

from . import selectors

# --- Output builders --------------------------------------------------------------------------


def override_out(row: Any) -> dict[str, Any]:
    alignment = getattr(row, "is_alignment", hasattr(row, "dimension"))
    return {
        "id": row.pk,
        "kind": "alignment" if alignment else "criterion",
        "action": row.action,
        "criterion_id": None if alignment else row.criterion_key,
        "description": None if alignment else row.description,
        "perspective": row.perspective if alignment else None,
        "dimension": row.dimension if alignment else None,
        "judge_satisfied": None if alignment else row.judge_satisfied,
        "from_satisfied": None if alignment else row.from_satisfied,
        "to_satisfied": None if alignment else row.to_satisfied,
        "judge_score": row.judge_score if alignment else None,
        "from_score": row.from_score if alignment else None,
        "to_score": row.to_score if alignment else None,
        "note": row.note,
        "reviewer": row.actor_name,
        "reverts": row.reverts_id,
        "reverted": getattr(row, "reverted", False),
        "created_at": row.created_at,
    }


def run_review_out(view: selectors.RunReviewView) -> dict[str, Any]:
    e, a, run = view.evaluation, view.alignment_evaluation, view.run
    result = run.result  # the run's result as every surface shows it
    return {
        "run_id": run.pk,
        "rubric_id": e.rubric_id if e else None,
        "rubric_version": e.rubric_version.number if e and e.rubric_version else None,
        "judge": {
            "passed": e.passed if e else None,
            "score": e.score if e else None,
            "alignment_score": a.score if a else None,
        },
        "effective": {
            "passed": result.passed,
            "score": result.score,
            "alignment_score": result.alignment_score,
        },
        "reviewed": bool(view.review and view.review.reviewed_at),
        "golden": bool(view.review and view.review.golden),
        "verdicts": [verdict_out(v) for v in view.verdicts],
        "alignment": [
            {
                "perspective": d.perspective,
                "dimension": d.dimension,
                "weight": d.weight,
                "judge_score": d.judge,
                "human_score": d.human,
                "score": d.effective,
                "note": d.note,
                "change_id": d.label_source_id,
            }
            for d in view.dimensions
        ],
        "history": [override_out(row) for row in view.history],
    }


def verdict_out(v: Any) -> dict[str, Any]:
    """One criterion of a run as reviewers left it (a selectors.VerdictRow)."""
    return {
        "criterion_id": v.verdict.key,
        "description": v.verdict.description,
        "required": v.verdict.required,
        "judge_satisfied": v.verdict.judge,
        "human_satisfied": v.verdict.human,
        "disputed": v.verdict.disputed,
        "satisfied": v.verdict.satisfied,
        "overridden": v.verdict.overridden,
        "note": v.note,
        "reasoning": v.reasoning,
        "change_id": v.label_source_id,
        "reviews": [
            {
                "reviewer": b.reviewer,
                "satisfied": b.satisfied,
                "note": b.note,
                "change_id": b.change_id,
                "updated_at": b.updated_at,
            }
            for b in v.votes
        ],
    }


def reviewer_agreement_out(r: Any) -> dict[str, Any] | None:
    if r is None:
        return None
    return {"items": r.items, "reviewers": r.reviewers, "method": r.method, "kappa": r.kappa}


def disputed_out(d: Any) -> dict[str, Any]:
    return {
        "run_id": d.run_id,
        "external_id": d.external_id,
        "criterion_id": d.criterion_id,
        "satisfied": d.satisfied,
        "not_satisfied": d.not_satisfied,
    }


def agreement_item_out(c: Any) -> dict[str, Any]:
    s = c.stats
    return {
        "criterion_id": c.criterion_id,
        "description": c.description,
        "labelled": s.labelled,
        "agreement": s.agreement,
        "kappa": s.kappa,
        "tpr": s.tpr,
        "tnr": s.tnr,
        "confusion": s.confusion.as_dict(),
        "flagged": c.flagged,
    }


def calibration_out(report: Any) -> dict[str, Any]:
    cal = report.calibration
    golden = isinstance(report, selectors.GoldenReport)
    criteria = []
    for c in report.criteria:
        if golden:
            item = agreement_item_out(c) | {
                "reworded": c.reworded,
                "compared": c.compared,
                "flipped": len(c.flips),
                "flip_rate": len(c.flips) / c.compared if c.compared else None,
            }
        else:
            item = {
                "criterion_id": c.criterion_id,
                "description": c.description,
                "compared": c.compared,
                "flipped": c.flipped,
                "flip_rate": c.flip_rate,
                "flagged": c.flaky,
            }
        criteria.append(item)
    return {
        "id": cal.pk,
        "kind": cal.kind,
        "rubric_id": cal.rubric_id,
        "version": cal.version.number if cal.version else None,
        "baseline_version": cal.baseline_version.number if cal.baseline_version else None,
        "judge_model": cal.judge_model,
        "repeats": cal.repeats,
        "runs": report.runs,
        "created_at": cal.created_at,
        "progress": {
            "total": report.progress.total,
            "finished": report.progress.finished,
            "failed": report.progress.failed,
            "done": report.progress.done,
        },
        "criteria": criteria,
    }
