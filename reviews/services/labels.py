"""Reviewers' labels: confirm or override a criterion verdict or an alignment dimension, revert.

Every change appends one history row and rewrites the label in effect — for criterion
verdicts, the acting reviewer's own verdict and then the majority of all reviewers' verdicts
(services/votes.py) — then recomputes the run's result (runs.services.run_state.run_refresh, which asks review_results_refresh for the
human-adjusted values), all in one transaction under the run's row lock — the lock the worker
takes to record a result — so a label and a finishing evaluation never interleave.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from judge_engine import DIMENSIONS
from runs.models import AgentRun, AlignmentBreakdown, CriterionVerdict, Evaluation
from runs.services.run_state import run_refresh

from ..effective import text_hash
from ..models import (
    Action,
    AlignmentLabel,
    AlignmentOverride,
    ReviewerLabel,
    RunReview,
    VerdictOverride,
)
from ..selectors import current_alignment_evaluation, current_rubric_evaluation
from .errors import ReviewConflict, ReviewValidationError
from .votes import majority_settle

NOTE_MAX = 5000


@dataclass(frozen=True)
class Reviewer:
    """Who acts: a signed-in user, or an API key acting for its team."""

    user: Any = None
    api_key: Any = None

    @property
    def name(self) -> str:
        if self.user is not None:
            return self.user.get_username()
        if self.api_key is not None:
            return f"API key {self.api_key.name} ({self.api_key.prefix}…)"
        return "unknown"

    @property
    def key(self) -> str:
        """Whose verdicts these are: each user, and each API key, is one reviewer."""
        if self.user is not None:
            return f"user:{self.user.pk}"
        if self.api_key is not None:
            return f"key:{self.api_key.pk}"
        return "unknown"

    def fields(self) -> dict[str, Any]:
        return {"actor": self.user, "api_key": self.api_key, "actor_name": self.name[:150]}


@dataclass(frozen=True)
class LabelChange:
    row: Any  # VerdictOverride or AlignmentOverride
    created: bool  # False: the label already said this; nothing was written


def _clean_note(note: str | None, *, required: bool) -> str:
    # A browser sends a textarea's line breaks as CRLF: notes keep one kind, "\n".
    text = (note or "").replace("\r\n", "\n").strip()
    if len(text) > NOTE_MAX:
        raise ReviewValidationError({"note": f"at most {NOTE_MAX} characters"})
    if required and not text:
        raise ReviewValidationError(
            {"note": "a note is required when you disagree with the judge: say why"}
        )
    return text


def _lock(run: AgentRun) -> AgentRun:
    return AgentRun.objects.select_for_update().get(pk=run.pk)


# --- Criterion verdicts ---------------------------------------------------------------------


def _verdict_for(evaluation: Evaluation, criterion_key: str) -> CriterionVerdict:
    verdicts = list(CriterionVerdict.objects.filter(evaluation=evaluation).order_by("position"))
    found = next((v for v in verdicts if v.criterion_key == criterion_key), None)
    if found is None:
        keys = ", ".join(v.criterion_key for v in verdicts) or "none"
        raise ReviewValidationError(
            {
                "criterion_id": f"no criterion {criterion_key!r} in the run's current verdicts ({keys})"
            }
        )
    return found


def _reviewable(run: AgentRun, rubric_id: Any) -> Evaluation:
    evaluation = current_rubric_evaluation(run=run, rubric_id=rubric_id)
    if evaluation is None:
        raise ReviewConflict("This run has no judged rubric result to review yet.")
    return evaluation


def override_create(
    *,
    run: AgentRun,
    criterion_key: str,
    satisfied: bool,
    note: str = "",
    reviewer: Reviewer,
    rubric_id: Any = None,
) -> LabelChange:
    """Record a reviewer's verdict on one criterion of the run's current rubric result.

    Agreeing with the judge confirms its verdict (a note is optional); disagreeing overrides it
    and needs a note. Each reviewer has a verdict of their own; the label in effect is the
    majority of the reviewers' latest verdicts (none on a tie). Saying again what the
    reviewer's verdict already says (with no new note) writes nothing. ``rubric_id`` picks the
    rubric when the run was judged by several."""
    with transaction.atomic():
        locked = _lock(run)
        evaluation = _reviewable(locked, rubric_id)
        verdict = _verdict_for(evaluation, criterion_key)
        text = _clean_note(note, required=satisfied != verdict.satisfied)
        key = {
            "run": locked,
            "rubric_id": evaluation.rubric_id,
            "criterion_key": criterion_key,
            "text_hash": text_hash(verdict.description),
        }
        label = ReviewerLabel.objects.filter(**key, reviewer_key=reviewer.key).first()
        if label is not None and label.satisfied == satisfied and text in ("", label.note):
            return LabelChange(label.source, created=False)
        row = VerdictOverride.objects.create(
            team_id=locked.team_id,
            **key,
            reviewer_key=reviewer.key,
            description=verdict.description,
            evaluation=evaluation,
            action=Action.CONFIRM if satisfied == verdict.satisfied else Action.OVERRIDE,
            judge_satisfied=verdict.satisfied,
            from_satisfied=label.satisfied if label else None,
            to_satisfied=satisfied,
            note=text,
            previous=label.source if label else None,
            **reviewer.fields(),
        )
        _label_set(_VERDICT, label, row)
        majority_settle(row=row)
        run_refresh(locked.pk)
    return LabelChange(row, created=True)


def review_confirm(
    *, run: AgentRun, criterion_key: str, reviewer: Reviewer, note: str = "", rubric_id: Any = None
) -> LabelChange:
    """Agree with the judge's verdict on one criterion (the keyboard's ``a``)."""
    evaluation = _reviewable(run, rubric_id)
    verdict = _verdict_for(evaluation, criterion_key)
    return override_create(
        run=run,
        criterion_key=criterion_key,
        satisfied=verdict.satisfied,
        note=note,
        reviewer=reviewer,
        rubric_id=evaluation.rubric_id,
    )


@dataclass(frozen=True)
class _LabelKind:
    """How an override row maps onto its label: the label model, the labelled value
    (``from_<value>``/``to_<value>`` on the row) and the fields that identify the label."""

    model: Any
    value: str
    identity: tuple[str, ...]


_VERDICT = _LabelKind(
    ReviewerLabel,
    "satisfied",
    ("rubric_id", "criterion_key", "text_hash", "description", "reviewer_key"),
)
_ALIGNMENT = _LabelKind(AlignmentLabel, "score", ("perspective", "dimension"))


def _label_set(kind: _LabelKind, label: Any, row: Any) -> None:
    """Make ``row``'s value the label in effect (or remove the label when it has none)."""
    value = getattr(row, f"to_{kind.value}")
    if value is None:
        if label is not None:
            label.delete()
        return
    source = row.reverts.previous if row.action == Action.REVERT else row
    fields = {
        kind.value: value,
        "note": source.note if source else row.note,
        "source": source or row,
        "updated_at": timezone.now(),
    }
    if label is None:
        kind.model.objects.create(
            team_id=row.team_id,
            run_id=row.run_id,
            **{name: getattr(row, name) for name in kind.identity},
            **fields,
        )
        return
    for name, field_value in fields.items():
        setattr(label, name, field_value)
    label.save(update_fields=list(fields))


def override_revert(*, row: VerdictOverride, reviewer: Reviewer, note: str = "") -> LabelChange:
    """Undo a reviewer's change in effect for one criterion wording: that reviewer's verdict goes
    back to what it was before the change (possibly none), and the majority is taken again.
    Only a change still in effect can be reverted."""
    with transaction.atomic():
        locked = _lock(row.run)
        label = ReviewerLabel.objects.filter(
            run=locked,
            rubric_id=row.rubric_id,
            criterion_key=row.criterion_key,
            text_hash=row.text_hash,
            reviewer_key=row.reviewer_key,
        ).first()
        return _revert(_VERDICT, row, label, reviewer, note, judge="judge_satisfied")


def _revert(
    kind: _LabelKind, row: Any, label: Any, reviewer: Reviewer, note: str, *, judge: str
) -> LabelChange:
    """Record the revert of ``row`` (a VerdictOverride or an AlignmentOverride, whose
    ``from_<value>``/``to_<value>`` swap) and put its label back. The caller holds the run's
    lock and read the label under it."""
    if row.action == Action.REVERT or label is None or label.source_id != row.pk:
        raise ReviewConflict(
            "Only the change in effect can be reverted: a newer change replaced this one."
        )
    revert = type(row).objects.create(
        team_id=row.team_id,
        run_id=row.run_id,
        evaluation_id=row.evaluation_id,
        action=Action.REVERT,
        note=_clean_note(note, required=False),
        reverts=row,
        **{name: getattr(row, name) for name in (*kind.identity, judge)},
        **{
            f"from_{kind.value}": getattr(row, f"to_{kind.value}"),
            f"to_{kind.value}": getattr(row, f"from_{kind.value}"),
        },
        **reviewer.fields(),
    )
    _label_set(kind, label, revert)
    if kind is _VERDICT:
        majority_settle(row=revert)
    run_refresh(row.run_id)
    return LabelChange(revert, created=True)


# --- Alignment dimensions -------------------------------------------------------------------


def _breakdown(evaluation: Evaluation, perspective: str) -> AlignmentBreakdown:
    found = AlignmentBreakdown.objects.filter(
        evaluation=evaluation, perspective=perspective
    ).first()
    if found is None:
        raise ReviewValidationError(
            {"perspective": f"the run's alignment result has no {perspective} perspective"}
        )
    return found


def alignment_override_create(
    *, run: AgentRun, perspective: str, dimension: str, score: float, note: str, reviewer: Reviewer
) -> LabelChange:
    """Replace the judge's score of one alignment dimension (0–1). A score equal to the judge's
    confirms it; any other needs a note."""
    if dimension not in DIMENSIONS:
        raise ReviewValidationError({"dimension": f"one of {', '.join(DIMENSIONS)}"})
    if not 0 <= score <= 1:
        raise ReviewValidationError({"score": "a dimension score lies between 0 and 1"})
    with transaction.atomic():
        locked = _lock(run)
        evaluation = current_alignment_evaluation(run=locked)
        if evaluation is None:
            raise ReviewConflict("This run has no judged alignment result to review yet.")
        judge = getattr(_breakdown(evaluation, perspective), f"{dimension}_score")
        text = _clean_note(note, required=score != judge)
        key = {"run": locked, "perspective": perspective, "dimension": dimension}
        label = AlignmentLabel.objects.filter(**key).first()
        if label is not None and label.score == score and text in ("", label.note):
            return LabelChange(label.source, created=False)
        row = AlignmentOverride.objects.create(
            team_id=locked.team_id,
            **key,
            evaluation=evaluation,
            action=Action.CONFIRM if score == judge else Action.OVERRIDE,
            judge_score=judge,
            from_score=label.score if label else None,
            to_score=score,
            note=text,
            previous=label.source if label else None,
            **reviewer.fields(),
        )
        _label_set(_ALIGNMENT, label, row)
        run_refresh(locked.pk)
    return LabelChange(row, created=True)


def alignment_override_revert(
    *, row: AlignmentOverride, reviewer: Reviewer, note: str = ""
) -> LabelChange:
    """Undo the change in effect for one alignment dimension (see override_revert)."""
    with transaction.atomic():
        locked = _lock(row.run)
        label = AlignmentLabel.objects.filter(
            run=locked, perspective=row.perspective, dimension=row.dimension
        ).first()
        return _revert(_ALIGNMENT, row, label, reviewer, note, judge="judge_score")


# --- Golden set -----------------------------------------------------------------------------


def golden_set_mark(*, run: AgentRun, rubric_id: Any, golden: bool) -> RunReview:
    """Add a reviewed run to the rubric's golden set, or take it out."""
    with transaction.atomic():
        review = RunReview.objects.select_for_update().filter(run=run, rubric_id=rubric_id).first()
        if golden and (review is None or review.reviewed_at is None):
            raise ReviewConflict(
                "Only reviewed runs join the golden set: label every criterion of this run first."
            )
        if review is None:
            return RunReview(team_id=run.team_id, run=run, rubric_id=rubric_id)
        review.golden = golden
        review.golden_at = timezone.now() if golden else None
        review.save(update_fields=["golden", "golden_at"])
    return review
