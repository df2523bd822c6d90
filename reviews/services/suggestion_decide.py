"""What a person does with a suggested edit: accept it (a draft version and a comparison),
dismiss it; a rubric's threshold for asking; and the judge usage suggestions took (a usage
source of the team's budget)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from judge_engine.suggest import SuggestedEdit
from rubrics.drafts import draft_create
from rubrics.models import Criterion, Rubric
from rubrics.services import RubricValidationError
from teams.models import Team

from ..models import Suggestion, SuggestionKind, SuggestionStatus, SuggestionThreshold
from ..selectors.suggestions import min_labels_for
from .compare import SampleIn, SideIn, comparison_start
from .suggestions import SuggestionConflict, SuggestionValidationError

DISMISSABLE = (SuggestionStatus.READY, SuggestionStatus.FAILED)


def _edited(rubric: Rubric, suggestion: Suggestion) -> tuple[list[dict[str, Any]], str | None]:
    """The current version's criteria (and instructions) with the edit applied; a criterion
    reworded or removed since the suggestion was made is a conflict, never a guess."""
    current = rubric.current_version
    rows = list(Criterion.objects.filter(version=current).order_by("position"))
    target = next((c for c in rows if c.key == suggestion.criterion_key), None)
    if current is None or target is None or target.description != suggestion.criterion_text:
        raise SuggestionConflict(
            f"criterion {suggestion.criterion_key} changed since this edit was suggested: "
            "ask for a new suggestion"
        )
    criteria: list[dict[str, Any]] = []
    for c in rows:
        row = {"key": c.key, "description": c.description, "required": c.required}
        if c.pk != target.pk or suggestion.kind == SuggestionKind.INSTRUCTION:
            criteria.append(row)
        elif suggestion.kind == SuggestionKind.REWORD:
            criteria.append(row | {"description": suggestion.text.strip()})
        else:  # split: the first part keeps the key (its labels' history), the second is new
            first, second = _lines(suggestion.text)
            criteria.append(row | {"description": first})
            criteria.append({"description": second, "required": c.required})
    if suggestion.kind != SuggestionKind.INSTRUCTION:
        return criteria, None
    return criteria, f"{current.instructions.rstrip()}\n\n{suggestion.text.strip()}".strip()


def _lines(text: str) -> tuple[str, str]:
    edit = SuggestedEdit(kind="split", text=text, rationale="-")
    first, second = edit.lines
    return first, second


def suggestion_accept(*, team: Team, rubric: Rubric, suggestion: Suggestion, user: Any = None):
    """Put a ready edit into a draft version and compare it with the current version on the
    labelled runs; both or neither (one transaction). Accepting it again answers the same."""
    if suggestion.status == SuggestionStatus.ACCEPTED:
        return suggestion
    if suggestion.status != SuggestionStatus.READY:
        raise SuggestionConflict(
            f"only a ready suggestion can be accepted; this one is {suggestion.status}"
        )
    criteria, instructions = _edited(rubric, suggestion)
    note = f"Suggested edit ({suggestion.kind}) of {suggestion.criterion_key}"
    with transaction.atomic():
        locked = Suggestion.objects.select_for_update().get(pk=suggestion.pk)
        if locked.status != SuggestionStatus.READY:
            raise SuggestionConflict(f"this suggestion is {locked.status} already")
        try:
            draft, _ = draft_create(
                rubric=rubric, criteria=criteria, instructions=instructions, note=note, user=user
            )
        except RubricValidationError as exc:
            raise SuggestionValidationError(
                {"text": "; ".join(f"{k}: {v}" for k, v in exc.errors.items())}
            ) from exc
        comparison, _, _ = comparison_start(
            team=team, rubric=rubric, a=SideIn(), b=SideIn(version=draft.number),
            sample=SampleIn(kind="labelled"), idempotency_key=f"suggestion-{suggestion.pk}",
            user=user,
        )  # fmt: skip
        Suggestion.objects.filter(pk=suggestion.pk).update(
            status=SuggestionStatus.ACCEPTED, draft=draft, comparison=comparison,
            decided_by=user, decided_at=timezone.now(),
        )  # fmt: skip
    suggestion.refresh_from_db()
    return suggestion


def suggestion_dismiss(*, suggestion: Suggestion, user: Any = None) -> Suggestion:
    """Set a ready or failed suggestion aside (compare-and-set; dismissing twice is fine)."""
    if suggestion.status == SuggestionStatus.DISMISSED:
        return suggestion
    changed = Suggestion.objects.filter(pk=suggestion.pk, status__in=DISMISSABLE).update(
        status=SuggestionStatus.DISMISSED, decided_by=user, decided_at=timezone.now()
    )
    suggestion.refresh_from_db()
    if not changed and suggestion.status != SuggestionStatus.DISMISSED:
        raise SuggestionConflict(
            f"a {suggestion.status} suggestion cannot be dismissed"
            + (": the judge is still being asked" if suggestion.status == "pending" else "")
        )
    return suggestion


def suggestion_threshold_set(*, rubric: Rubric, min_labels: int | None) -> int:
    """The rubric's own minimum of disagreeing labels (None: the deployment's default); the
    threshold in force afterwards."""
    if min_labels is None:
        SuggestionThreshold.objects.filter(rubric=rubric).delete()
    elif not 1 <= min_labels <= 10_000:
        raise SuggestionValidationError({"min_labels": "between 1 and 10,000 (null: the default)"})
    else:
        SuggestionThreshold.objects.update_or_create(
            rubric=rubric, defaults={"min_labels": min_labels}
        )
    return min_labels_for(rubric=rubric)


def suggestions_usage(team_id: Any, start: datetime, end: datetime) -> tuple[int, float]:
    """(tokens, USD) the team's suggestions took that finished in [start, end): a usage source
    of the judge budget (registered in ReviewsConfig.ready)."""
    row = Suggestion.objects.filter(
        team_id=team_id, finished_at__gte=start, finished_at__lt=end
    ).aggregate(prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens"), usd=Sum("cost"))
    return (row["prompt"] or 0) + (row["completion"] or 0), row["usd"] or 0.0
