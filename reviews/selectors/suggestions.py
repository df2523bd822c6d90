"""Reads for suggested criterion edits: where reviewers disagree with the judge, what the judge
is shown about it, and the suggestions of a rubric."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Count, F, Q

from judge_engine.suggest import Disagreement
from rubrics.models import Criterion, Rubric, RubricVersion
from runs.models import AgentRun, CriterionVerdict

from ..effective import text_hash
from ..models import ReviewerLabel, Suggestion, SuggestionStatus, SuggestionThreshold, VerdictLabel

MAX_LISTED = 200


@dataclass(frozen=True)
class CriterionDisagreements:
    """One criterion of the current version: its disagreeing labels and whether that is enough
    to ask for an edit."""

    key: str
    description: str
    disagreeing: int
    needed: int

    @property
    def enough(self) -> bool:
        return self.disagreeing >= self.needed


def min_labels_for(*, rubric: Rubric) -> int:
    """The rubric's own threshold, else EVALSITE_SUGGEST_MIN_LABELS (at least 1)."""
    own = SuggestionThreshold.objects.filter(rubric=rubric).values_list("min_labels", flat=True)
    found = own.first()
    return max(1, found if found is not None else int(settings.EVALSITE_SUGGEST_MIN_LABELS))


def _wordings(criteria: Sequence[Criterion]) -> Q:
    wanted = Q(pk__in=[])
    for c in criteria:
        wanted |= Q(criterion_key=c.key, text_hash=text_hash(c.description))
    return wanted


def _disagreeing(rubric: Rubric, criteria: Sequence[Criterion]) -> Any:
    """The labels in effect on these criteria's exact wordings that differ from the judge's
    verdict the reviewer saw."""
    return (
        VerdictLabel.objects.filter(team_id=rubric.team_id, rubric=rubric)
        .filter(_wordings(criteria))
        .exclude(satisfied=F("source__judge_satisfied"))
    )


def _criteria(version: RubricVersion | None) -> list[Criterion]:
    if version is None:
        return []
    return list(Criterion.objects.filter(version=version).order_by("position"))


def disagreements_by_criterion(*, rubric: Rubric) -> list[CriterionDisagreements]:
    """Per criterion of the rubric's current version, its disagreeing labels (two queries)."""
    criteria = _criteria(rubric.current_version)
    if not criteria:
        return []
    counts = dict(
        _disagreeing(rubric, criteria)
        .values("criterion_key")
        .annotate(n=Count("id"))
        .values_list("criterion_key", "n")
    )
    needed = min_labels_for(rubric=rubric)
    return [
        CriterionDisagreements(c.key, c.description, counts.get(c.key, 0), needed) for c in criteria
    ]


def disagreement_run_ids(*, rubric: Rubric, criterion: Criterion) -> list[Any]:
    """The runs of the newest disagreeing labels on the criterion (EVALSITE_SUGGEST_MAX_RUNS)."""
    limit = max(1, settings.EVALSITE_SUGGEST_MAX_RUNS)
    rows = _disagreeing(rubric, [criterion]).order_by("-updated_at", "-id")
    return [str(r) for r in rows.values_list("run_id", flat=True)[:limit]]


def disagreements_for_prompt(*, suggestion: Suggestion) -> list[Disagreement]:
    """What the judge is shown of each evidence run: its task and output, the judge's verdict
    and reasoning the reviewer saw, the label in effect and every reviewer's note. Evidence
    whose label changed meanwhile (no longer a disagreement) is left out."""
    labels = {
        str(lb.run_id): lb
        for lb in VerdictLabel.objects.filter(
            rubric_id=suggestion.rubric_id,
            criterion_key=suggestion.criterion_key,
            text_hash=text_hash(suggestion.criterion_text),
            run_id__in=suggestion.evidence,
        ).select_related("source")
    }
    runs = AgentRun.objects.filter(pk__in=list(labels)).only("id", "task_text", "output_text")
    texts = {str(r.pk): r for r in runs}
    reasoning = _reasonings(suggestion, [lb.source.evaluation_id for lb in labels.values()])
    notes = _notes(suggestion)
    out = []
    for run_id in suggestion.evidence:
        label, run = labels.get(run_id), texts.get(run_id)
        if label is None or run is None or label.satisfied == label.source.judge_satisfied:
            continue
        out.append(
            Disagreement(
                run_id=run_id, task=run.task_text, output=run.output_text,
                judge_satisfied=label.source.judge_satisfied,
                judge_reasoning=reasoning.get(label.source.evaluation_id, ""),
                human_satisfied=label.satisfied, notes=tuple(notes.get(run_id, ())),
            )
        )  # fmt: skip
    return out


def _reasonings(suggestion: Suggestion, evaluation_ids: list[Any]) -> dict[Any, str]:
    rows = CriterionVerdict.objects.filter(
        evaluation_id__in=[e for e in evaluation_ids if e is not None],
        criterion_key=suggestion.criterion_key,
    ).values_list("evaluation_id", "reasoning")
    return dict(rows)


def _notes(suggestion: Suggestion) -> dict[str, list[str]]:
    rows = ReviewerLabel.objects.filter(
        rubric_id=suggestion.rubric_id,
        criterion_key=suggestion.criterion_key,
        text_hash=text_hash(suggestion.criterion_text),
        run_id__in=suggestion.evidence,
    ).exclude(note="")
    notes: dict[str, list[str]] = {}
    for run_id, note in rows.order_by("updated_at").values_list("run_id", "note"):
        notes.setdefault(str(run_id), []).append(note)
    return notes


def suggestions_list(
    *, rubric: Rubric, statuses: Sequence[str] = (), limit: int = MAX_LISTED
) -> list[Suggestion]:
    """The rubric's suggestions, newest first (at most ``limit``, itself at most 200)."""
    found = Suggestion.objects.filter(team_id=rubric.team_id, rubric=rubric)
    if statuses:
        found = found.filter(status__in=statuses)
    return list(found.select_related("draft", "version")[: min(limit, MAX_LISTED)])


def suggestion_get(*, rubric: Rubric, suggestion_id: Any) -> Suggestion | None:
    return (
        Suggestion.objects.filter(team_id=rubric.team_id, rubric=rubric, pk=suggestion_id)
        .select_related("draft", "version")
        .first()
    )


def open_suggestions(*, rubric: Rubric) -> dict[str, list[Suggestion]]:
    """Pending, ready and failed suggestions by criterion key, for the pages."""
    shown = (SuggestionStatus.PENDING, SuggestionStatus.READY, SuggestionStatus.FAILED)
    out: dict[str, list[Suggestion]] = {}
    for s in suggestions_list(rubric=rubric, statuses=shown, limit=50):
        out.setdefault(s.criterion_key, []).append(s)
    return out
