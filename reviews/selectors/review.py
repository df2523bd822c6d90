"""Reads for reviewing one run: what the judge said, what reviewers said, the history."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from judge_engine import DIMENSIONS
from runs.models import AgentRun, AlignmentBreakdown, CriterionVerdict, Evaluation, Kind

from ..effective import EffectiveVerdict, majority, text_hash
from ..models import (
    AlignmentLabel,
    AlignmentOverride,
    ReviewerLabel,
    RunReview,
    VerdictLabel,
    VerdictOverride,
)


def current_rubric_evaluation(*, run: AgentRun, rubric_id: Any = None) -> Evaluation | None:
    """The run's current rubric result (the run's own rubric preferred), or None."""
    qs = Evaluation.objects.filter(
        run_id=run.pk, kind=Kind.RUBRIC, is_current=True, calibration=False, rubric__isnull=False
    ).select_related("rubric", "rubric_version")
    if rubric_id is not None:
        qs = qs.filter(rubric_id=rubric_id)
    found = list(qs.defer("calls").order_by("-created_at"))
    preferred = [e for e in found if e.rubric_id == run.rubric_id] or found
    return preferred[0] if preferred else None


def current_alignment_evaluation(*, run: AgentRun) -> Evaluation | None:
    return (
        Evaluation.objects.filter(
            run_id=run.pk, kind=Kind.ALIGNMENT, is_current=True, calibration=False
        )
        .defer("calls")
        .order_by("-created_at")
        .first()
    )


@dataclass(frozen=True)
class Vote:
    """One reviewer's latest verdict on a criterion."""

    reviewer_key: str
    reviewer: str
    satisfied: bool
    note: str
    change_id: Any  # the reviewer's change in effect
    updated_at: Any


@dataclass(frozen=True)
class VerdictRow:
    """One criterion as a reviewer sees it: the judge's verdict and reasoning, the label (the
    majority of ``votes``, the reviewers' own verdicts)."""

    verdict: EffectiveVerdict
    reasoning: str
    note: str
    label_source_id: Any  # the change in effect (what "revert" undoes), or None
    evidence: tuple[int, ...] = ()  # the run's steps the judge cited
    votes: tuple[Vote, ...] = ()
    own_change_id: Any = None  # the viewing reviewer's own change in effect, if any

    @property
    def agreeing(self) -> int:
        """How many reviewers gave the label in effect."""
        return sum(1 for v in self.votes if v.satisfied == self.verdict.human)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.verdict, name)


@dataclass(frozen=True)
class DimensionRow:
    perspective: str
    dimension: str
    weight: float
    judge: float
    human: float | None
    note: str
    label_source_id: Any

    @property
    def effective(self) -> float:
        return self.judge if self.human is None else self.human


@dataclass
class RunReviewView:
    run: AgentRun
    evaluation: Evaluation | None
    verdicts: list[VerdictRow]
    alignment_evaluation: Evaluation | None
    dimensions: list[DimensionRow]
    review: RunReview | None
    history: list[Any] = field(default_factory=list)

    @property
    def labelled(self) -> int:
        return sum(1 for v in self.verdicts if v.verdict.human is not None)

    @property
    def disputed(self) -> list[VerdictRow]:
        """Criteria whose reviewers' latest verdicts tie."""
        return [v for v in self.verdicts if v.verdict.disputed]


def _votes(evaluation: Evaluation) -> dict[tuple[str, str], list[Vote]]:
    """The reviewers' verdicts on the evaluation's run and rubric, by wording, oldest first."""
    out: dict[tuple[str, str], list[Vote]] = {}
    rows = (
        ReviewerLabel.objects.filter(run_id=evaluation.run_id, rubric_id=evaluation.rubric_id)  # type: ignore[misc]
        .select_related("source")
        .order_by("updated_at", "id")
    )
    for r in rows:
        vote = Vote(
            r.reviewer_key, r.source.actor_name, r.satisfied, r.note, r.source_id, r.updated_at
        )
        out.setdefault((r.criterion_key, r.text_hash), []).append(vote)
    return out


def _verdict_rows(evaluation: Evaluation, reviewer_key: str | None = None) -> list[VerdictRow]:
    labels = {
        (lb.criterion_key, lb.text_hash): lb
        for lb in VerdictLabel.objects.filter(
            run_id=evaluation.run_id,
            rubric_id=evaluation.rubric_id,  # type: ignore[misc]  # a rubric evaluation has one
        )
    }
    votes = _votes(evaluation)
    rows = []
    for v in CriterionVerdict.objects.filter(evaluation=evaluation).order_by("position"):
        wording = (v.criterion_key, text_hash(v.description))
        label, ballots = labels.get(wording), tuple(votes.get(wording, []))
        effective = EffectiveVerdict(
            key=v.criterion_key,
            description=v.description,
            required=v.required,
            judge=v.satisfied,
            human=label.satisfied if label else None,
            disputed=bool(ballots) and majority(b.satisfied for b in ballots) is None,
        )
        own = next((b.change_id for b in ballots if b.reviewer_key == reviewer_key), None)
        rows.append(
            VerdictRow(
                effective,
                v.reasoning,
                label.note if label else "",
                label.source_id if label else None,
                tuple(i for i in v.evidence or [] if isinstance(i, int)),
                ballots,
                own,
            )
        )
    return rows


def _dimension_rows(evaluation: Evaluation) -> list[DimensionRow]:
    labels = {
        (lb.perspective, lb.dimension): lb
        for lb in AlignmentLabel.objects.filter(run_id=evaluation.run_id)
    }
    rows = []
    for b in AlignmentBreakdown.objects.filter(evaluation=evaluation).order_by("-perspective"):
        for d in DIMENSIONS:
            label = labels.get((b.perspective, d))
            rows.append(
                DimensionRow(
                    perspective=b.perspective,
                    dimension=d,
                    weight=float(b.weights.get(d, 0)),
                    judge=getattr(b, f"{d}_score"),
                    human=label.score if label else None,
                    note=label.note if label else "",
                    label_source_id=label.source_id if label else None,
                )
            )
    return rows


def run_history(*, run: AgentRun) -> list[Any]:
    """Every review change of the run, criterion and alignment alike, newest first; each row
    carries ``reverted`` (a later revert undid it)."""
    verdicts = list(VerdictOverride.objects.filter(run=run).select_related("rubric"))
    dimensions = list(AlignmentOverride.objects.filter(run=run))
    reverted = {r.reverts_id for r in verdicts + dimensions if r.reverts_id}  # type: ignore[operator]
    rows = sorted(verdicts + dimensions, key=lambda r: r.created_at, reverse=True)  # type: ignore[operator]
    for row in rows:
        # Template/serialiser conveniences, set on the fetched rows (not model fields).
        setattr(row, "reverted", row.pk in reverted)  # noqa: B010
        setattr(row, "is_alignment", isinstance(row, AlignmentOverride))  # noqa: B010
    return rows


def run_review_get(
    *, run: AgentRun, rubric_id: Any = None, history: bool = True, reviewer_key: str | None = None
) -> RunReviewView:
    """Everything the review page and GET /api/runs/{id}/overrides show for one run;
    ``reviewer_key`` picks the viewing reviewer's own changes (what their Revert undoes)."""
    evaluation = current_rubric_evaluation(run=run, rubric_id=rubric_id)
    alignment = current_alignment_evaluation(run=run)
    review = None
    if evaluation is not None:
        review = (
            RunReview.objects.filter(run=run, rubric_id=evaluation.rubric_id)  # type: ignore[misc]
            .select_related("claimed_by")
            .first()
        )
    return RunReviewView(
        run=run,
        evaluation=evaluation,
        verdicts=_verdict_rows(evaluation, reviewer_key) if evaluation else [],
        alignment_evaluation=alignment,
        dimensions=_dimension_rows(alignment) if alignment else [],
        review=review,
        history=run_history(run=run) if history else [],
    )


def verdict_override_get(*, team: Any, override_id: Any) -> VerdictOverride | None:
    return VerdictOverride.objects.filter(team=team, pk=override_id).select_related("run").first()


def alignment_override_get(*, team: Any, override_id: Any) -> AlignmentOverride | None:
    return AlignmentOverride.objects.filter(team=team, pk=override_id).select_related("run").first()


def team_run_get(*, team: Any, run_id: Any) -> AgentRun | None:
    return AgentRun.objects.select_related("rubric").filter(team=team, pk=run_id).first()


def runs_reviewed_by(*, rubric: Any, user: Any) -> QuerySet[VerdictOverride]:
    """The user's changes in a rubric, newest first (the review page's "previous")."""
    return VerdictOverride.objects.filter(rubric=rubric, actor=user).order_by("-created_at")
