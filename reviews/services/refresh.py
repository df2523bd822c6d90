"""The human-adjusted result of a run, computed whenever its result is (run_refresh).

runs.services.run_state.run_refresh calls review_results_refresh (registered as a hook in
ReviewsConfig.ready()) inside its transaction with the evaluations it picked as current. The
evaluations keep the judge's values; what comes back replaces the run's denormalised
passed/score/alignment_score, so lists and filters read the result as reviewers corrected it.
It also keeps each RunReview's progress in step with the run's current verdicts (a re-score
with reworded criteria makes a reviewed run unreviewed), including how many reviewers gave
verdicts and how many criteria they dispute (the second-opinion queue).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Q
from django.utils import timezone

from evalsite import rawsql
from judge_engine import (
    DIMENSIONS,
    alignment_combine,
    alignment_final,
    perspective_score,
    rubric_passed,
    rubric_score,
)
from runs.models import AgentRun, AlignmentBreakdown, CriterionVerdict, Evaluation, Kind

from ..effective import EffectiveVerdict, text_hash, tied
from ..models import AlignmentLabel, ReviewerLabel, RunReview, VerdictLabel


def review_result_refresh(
    *, run_id: Any, rubric_evaluation_id: Any, alignment_evaluation_id: Any
) -> dict[str, Any]:
    """Fields of the run to replace with their human-adjusted values (empty: no labels).
    Three cheap queries when the run has no labels; a few more when it has."""
    fields: dict[str, Any] = {}
    labels: list[Any] = list(
        VerdictLabel.objects.filter(run_id=run_id).values(
            "rubric_id", "criterion_key", "text_hash", "satisfied"
        )
    )
    votes: list[Any] = list(
        ReviewerLabel.objects.filter(run_id=run_id).values(
            "rubric_id", "criterion_key", "text_hash", "reviewer_key", "satisfied"
        )
    )
    verdicts = _review_progress(run_id, labels, votes)
    if labels and rubric_evaluation_id is not None:
        fields.update(_rubric_fields(rubric_evaluation_id, verdicts))
    if alignment_evaluation_id is not None:
        fields.update(_alignment_fields(run_id, alignment_evaluation_id))
    return fields


def review_results_refresh(picked: dict[Any, tuple[Any, Any]]) -> dict[Any, dict[str, Any]]:
    """review_result_refresh for several runs (run id -> its current rubric and alignment
    evaluation ids): the runs' changed fields, by run id. Runs without labels cost nothing
    per run, whatever their number."""
    # Every label in effect comes from reviewers' verdicts; a disputed criterion has only those.
    # One statement finds the labelled runs and the unlabelled ones whose review still counts
    # labels (their labels were removed): the common case, no labels anywhere, costs just it.
    rows = _labelled_or_counted(
        list(picked), [run_id for run_id, (_, alignment) in picked.items() if alignment is not None]
    )
    labelled = {run_id for run_id, is_label in rows if is_label}
    stale = [run_id for run_id, is_label in rows if not is_label and run_id not in labelled]
    if stale:
        RunReview.objects.filter(run_id__in=stale).update(
            labelled=0, overridden=0, reviewers=0, disputed=0, reviewed_at=None
        )
    return {
        run_id: review_result_refresh(
            run_id=run_id,
            rubric_evaluation_id=picked[run_id][0],
            alignment_evaluation_id=picked[run_id][1],
        )
        for run_id in picked
        if run_id in labelled
    }


def _labelled_or_counted(ids: list[Any], aligned: list[Any]) -> set[tuple[Any, bool]]:
    """(run id, True) for the runs with reviewer or alignment labels (``aligned``: the runs
    judged for alignment), (run id, False) for those whose review still counts labels. One
    fixed-shape read through raw() (every write of a result runs it; evalsite.rawsql)."""
    found = rawsql.keys_from(
        AgentRun,
        [
            rawsql.KeysFrom(ReviewerLabel, "run", ids, 1),
            rawsql.KeysFrom(AlignmentLabel, "run", aligned, 1),
            rawsql.KeysFrom(RunReview, "run", ids, 0, any_positive=("labelled", "reviewers")),
        ],
    )
    return {(run_id, bool(mark)) for run_id, mark in found}


def effective_verdicts(
    verdict_rows: list[dict[str, Any]],
    labels: list[dict[str, Any]],
    votes: list[dict[str, Any]] | None = None,
) -> list[EffectiveVerdict]:
    """Judge verdict rows of one evaluation with the labels (of its rubric) that answer them;
    ``votes``, the reviewers' own verdicts, mark the disputed ones."""
    human = {(lb["criterion_key"], lb["text_hash"]): lb["satisfied"] for lb in labels}
    ballots: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for vote in votes or []:
        ballots[(vote["criterion_key"], vote["text_hash"])].append(vote["satisfied"])
    out = []
    for v in verdict_rows:
        wording = (v["criterion_key"], text_hash(v["description"]))
        out.append(
            EffectiveVerdict(
                key=v["criterion_key"],
                description=v["description"],
                required=v["required"],
                judge=v["satisfied"],
                human=human.get(wording),
                disputed=tied(ballots.get(wording, [])),
            )
        )
    return out


def _review_progress(
    run_id: Any, labels: list[dict[str, Any]], votes: list[dict[str, Any]]
) -> dict[Any, list[EffectiveVerdict]]:
    """Update the progress of the run's reviews (labelled, overridden, reviewers, disputed,
    reviewed); the effective verdicts of each current evaluation, by evaluation id."""
    if not votes:
        RunReview.objects.filter(run_id=run_id).filter(
            Q(labelled__gt=0) | Q(reviewers__gt=0)
        ).update(labelled=0, overridden=0, reviewers=0, disputed=0, reviewed_at=None)
        return {}
    by_rubric: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for label in labels:
        by_rubric[label["rubric_id"]].append(label)
    votes_by_rubric: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for vote in votes:
        votes_by_rubric[vote["rubric_id"]].append(vote)
    current = dict(
        Evaluation.objects.filter(
            run_id=run_id,
            kind=Kind.RUBRIC,
            is_current=True,
            calibration=False,
            rubric_id__in=list(votes_by_rubric),
        ).values_list("id", "rubric_id")
    )
    rows: dict[Any, list[Any]] = defaultdict(list)
    for row in (
        CriterionVerdict.objects.filter(evaluation_id__in=list(current))
        .order_by("position")
        .values("evaluation_id", "criterion_key", "description", "required", "satisfied")
    ):
        rows[row["evaluation_id"]].append(row)
    out = {}
    for evaluation_id, rubric_id in current.items():
        ballots = votes_by_rubric[rubric_id]
        out[evaluation_id] = effective_verdicts(rows[evaluation_id], by_rubric[rubric_id], ballots)
        wordings = {(v.key, text_hash(v.description)) for v in out[evaluation_id]}
        reviewers = {
            b["reviewer_key"] for b in ballots if (b["criterion_key"], b["text_hash"]) in wordings
        }
        _progress_save(run_id, rubric_id, out[evaluation_id], len(reviewers))
    return out


def _progress_save(
    run_id: Any, rubric_id: Any, verdicts: list[EffectiveVerdict], reviewers: int
) -> None:
    labelled = sum(1 for v in verdicts if v.human is not None)
    done = bool(verdicts) and labelled == len(verdicts)
    review, _ = RunReview.objects.get_or_create(
        run_id=run_id,
        rubric_id=rubric_id,
        defaults={"team_id": _team_of(run_id)},
    )
    reviewed_at = (review.reviewed_at or timezone.now()) if done else None
    RunReview.objects.filter(pk=review.pk).update(
        labelled=labelled,
        overridden=sum(1 for v in verdicts if v.overridden),
        reviewers=reviewers,
        disputed=sum(1 for v in verdicts if v.disputed),
        reviewed_at=reviewed_at,
    )


def _team_of(run_id: Any) -> Any:
    return AgentRun.objects.filter(pk=run_id).values_list("team_id", flat=True).get()


def _rubric_fields(
    evaluation_id: Any, verdicts: dict[Any, list[EffectiveVerdict]]
) -> dict[str, Any]:
    effective = verdicts.get(evaluation_id)
    if not effective or not any(v.human is not None for v in effective):
        return {}
    scale = Evaluation.objects.filter(pk=evaluation_id).values_list("scale", flat=True).get()
    passed = rubric_passed(effective)
    return {"passed": passed, "score": rubric_score(passed, scale)}


def _alignment_fields(run_id: Any, evaluation_id: Any) -> dict[str, Any]:
    labels: dict[str, dict[str, float]] = defaultdict(dict)
    for row in AlignmentLabel.objects.filter(run_id=run_id).values(
        "perspective", "dimension", "score"
    ):
        labels[row["perspective"]][row["dimension"]] = row["score"]
    if not labels:
        return {}
    evaluation = Evaluation.objects.only("scale", "alignment_weights").get(pk=evaluation_id)
    scores = {
        b.perspective: perspective_score(_dimension_scores(b, labels), b.weights)
        for b in AlignmentBreakdown.objects.filter(Q(evaluation_id=evaluation_id))
    }
    share = (evaluation.alignment_weights or {}).get("user_share")
    weighted = alignment_combine(scores.get("user"), scores.get("system"), share)
    # score = weighted × scale, exactly as AlignmentScorer computes it.
    return {"alignment_score": alignment_final(weighted, evaluation.scale)}


def _dimension_scores(
    breakdown: AlignmentBreakdown, labels: dict[str, dict[str, float]]
) -> dict[str, float]:
    """A perspective's four dimension scores, a reviewer's score replacing the judge's."""
    human = labels.get(breakdown.perspective, {})
    return {d: human.get(d, getattr(breakdown, f"{d}_score")) for d in DIMENSIONS}
