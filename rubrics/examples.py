"""Writes for graded examples ("teach the judge"): add one from a review, edit or delete one in
the rubric editor. They change the rubric's draft (examples without a version, see
rubrics.versioning.examples_next), never a version: the next version made takes them.

The first change after a version starts the draft as a copy of the current version's
examples (same order and positions), so the editor can name an example of the current
version and the change lands on its draft copy.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max

from .models import Criterion, CriterionExample, Rubric
from .services import RubricValidationError
from .versioning import examples_next, examples_of

MAX_EXCERPT_CHARS = 2_000
MAX_REASON_CHARS = 1_000


def examples_limit() -> int:
    """At most this many examples of one criterion (EVALSITE_MAX_EXAMPLES_PER_CRITERION)."""
    return int(settings.EVALSITE_MAX_EXAMPLES_PER_CRITERION)


def _text_errors(excerpt: Any, reason: Any) -> dict[str, str]:
    errors = {}
    for name, value, limit in (
        ("excerpt", excerpt, MAX_EXCERPT_CHARS),
        ("reason", reason, MAX_REASON_CHARS),
    ):
        text = value.strip() if isinstance(value, str) else ""
        if not text:
            errors[name] = "must not be blank"
        elif len(text) > limit:
            errors[name] = f"at most {limit:,} characters (got {len(text):,})"
    return errors


def _draft_start(rubric: Rubric) -> None:
    """Make the draft's example rows (a copy of the current version's) unless there are."""
    if rubric.examples_draft:
        return
    CriterionExample.objects.bulk_create(
        CriterionExample(
            rubric=rubric,
            version=None,
            position=i,
            criterion_key=e.criterion_key,
            excerpt=e.excerpt,
            satisfied=e.satisfied,
            reason=e.reason,
            run_id=e.run_id,
            created_by_id=e.created_by_id,
        )
        for i, e in enumerate(examples_of(rubric.current_version_id))
    )
    Rubric.objects.filter(pk=rubric.pk).update(examples_draft=True)
    rubric.examples_draft = True


def _locked(rubric: Rubric) -> Rubric:
    return Rubric.objects.select_for_update().get(pk=rubric.pk)


def example_add(
    *,
    rubric: Rubric,
    criterion_key: str,
    excerpt: Any,
    satisfied: bool,
    reason: Any,
    run_id: Any = None,
    user: Any = None,
) -> CriterionExample:
    """Add an example of a criterion of the current version to the rubric's draft. Errors
    name the field: ``criterion`` (unknown, or at the per-criterion limit), ``excerpt``,
    ``reason``."""
    errors = _text_errors(excerpt, reason)
    known = Criterion.objects.filter(
        version_id=rubric.current_version_id, key=criterion_key
    ).exists()
    if not known:
        errors["criterion"] = f"no criterion {criterion_key!r} in the current version"
    if errors:
        raise RubricValidationError(errors)
    with transaction.atomic():
        locked = _locked(rubric)
        _draft_start(locked)
        draft = CriterionExample.objects.filter(rubric=locked, version__isnull=True)
        limit = examples_limit()
        if run_id is not None and draft.filter(criterion_key=criterion_key, run_id=run_id).exists():
            raise RubricValidationError(
                {"criterion": "this run is already an example of this criterion"}
            )
        if draft.filter(criterion_key=criterion_key).count() >= limit:
            raise RubricValidationError(
                {
                    "criterion": f"at most {limit} examples per criterion "
                    "(EVALSITE_MAX_EXAMPLES_PER_CRITERION): delete one in the rubric editor first"
                }
            )
        top = draft.aggregate(top=Max("position"))["top"]
        example = CriterionExample.objects.create(
            rubric=locked,
            version=None,
            position=0 if top is None else top + 1,
            criterion_key=criterion_key,
            excerpt=excerpt.strip(),
            satisfied=satisfied,
            reason=reason.strip(),
            run_id=run_id,
            created_by=user,
        )
    rubric.examples_draft = True
    return example


def _draft_row(rubric: Rubric, example_id: Any) -> CriterionExample | None:
    """The draft's row for ``example_id``: the row itself when it is the draft's, else the
    draft copy of that current-version example (the draft is started first)."""
    row = CriterionExample.objects.filter(rubric=rubric, id=example_id).first()
    if row is None or row.version_id is None:
        return row
    if row.version_id != rubric.current_version_id or rubric.examples_draft:
        return None  # an older version's, or the draft has moved on: nothing to change
    _draft_start(rubric)
    return CriterionExample.objects.filter(
        rubric=rubric, version__isnull=True, position=row.position
    ).first()


def example_update(
    *, rubric: Rubric, example_id: Any, excerpt: Any, reason: Any, satisfied: Any = None
) -> CriterionExample | None:
    """Edit a draft example's excerpt, reason and (when given) verdict; None when there is no
    such example in the draft or the current version."""
    errors = _text_errors(excerpt, reason)
    if satisfied is not None and type(satisfied) is not bool:
        errors["satisfied"] = "must be true or false"
    if errors:
        raise RubricValidationError(errors)
    with transaction.atomic():
        row = _draft_row(_locked(rubric), example_id)
        if row is None:
            return None
        row.excerpt, row.reason = excerpt.strip(), reason.strip()
        row.satisfied = row.satisfied if satisfied is None else satisfied
        row.save(update_fields=["excerpt", "reason", "satisfied"])
    rubric.examples_draft = True
    return row


def example_delete(*, rubric: Rubric, example_id: Any) -> bool:
    """Take an example out of the draft; False when there is no such example."""
    with transaction.atomic():
        row = _draft_row(_locked(rubric), example_id)
        if row is None:
            return False
        row.delete()
    rubric.examples_draft = True
    return True


def examples_pending(*, rubric: Rubric) -> bool:
    """Whether the draft's examples differ from the current version's (saving the draft, or
    any change that makes a version, publishes them)."""
    if not rubric.examples_draft:
        return False
    draft = [e.taught() for e in examples_next(rubric)]
    return draft != [e.taught() for e in examples_of(rubric.current_version_id)]
