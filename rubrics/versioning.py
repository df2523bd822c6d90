"""How rubric versions are made (rubrics.services calls these; nothing else should): stable
criterion keys, the comparison that decides whether a write is a new version, and the version
row itself. A version freezes the criteria, what the judge sees of a run (judge view and
token budget), the judge instructions and the criteria's graded examples (copied into each
version; the rubric's draft examples are rows without a version, see ``examples_next``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from evalsite.errors import Conflict

from .models import (
    DEFAULT_RUN_TOKEN_BUDGET,
    Criterion,
    CriterionExample,
    JudgeView,
    Rubric,
    RubricVersion,
)


class GateRequired(Conflict):
    """A change to a rubric with a publishing gate: it goes live only through the gate."""

    def __init__(self) -> None:
        super().__init__(
            "this rubric has a publishing gate: save the change as a draft version "
            "(POST /api/rubrics/{rubric}/drafts, or Save in the editor) and publish it through "
            "the gate (POST /api/rubrics/{rubric}/versions/{number}/publish)"
        )


@dataclass(frozen=True)
class CriterionInput:
    description: str
    required: bool = True
    key: str | None = None


@dataclass(frozen=True)
class ExampleInput:
    criterion_key: str
    excerpt: str
    satisfied: bool
    reason: str
    run_id: Any = None
    created_by_id: Any = None

    @classmethod
    def of(cls, row: CriterionExample) -> ExampleInput:
        return cls(
            row.criterion_key,
            row.excerpt,
            row.satisfied,
            row.reason,
            row.run_id,
            row.created_by_id,
        )

    def taught(self) -> tuple[str, str, bool, str]:
        """What the judge is shown (who added it, and from which run, is not)."""
        return (self.criterion_key, self.excerpt, self.satisfied, self.reason)


def examples_of(version_id: Any) -> list[ExampleInput]:
    if version_id is None:
        return []
    rows = CriterionExample.objects.filter(version_id=version_id).order_by("position")
    return [ExampleInput.of(row) for row in rows]


def examples_next(rubric: Rubric) -> list[ExampleInput]:
    """The examples the rubric's next version takes: its draft's when it has one (examples
    added from reviews or edited in the editor, not yet published), else the current
    version's."""
    if not rubric.examples_draft:
        return examples_of(rubric.current_version_id)
    rows = CriterionExample.objects.filter(rubric=rubric, version__isnull=True)
    return [ExampleInput.of(row) for row in rows.order_by("position")]


def _copy_examples(version: RubricVersion, examples: Sequence[ExampleInput]) -> None:
    """The examples of criteria the version has, as its own rows (in order)."""
    keys = set(version.criteria.values_list("key", flat=True))
    CriterionExample.objects.bulk_create(
        CriterionExample(
            rubric_id=version.rubric_id,
            version=version,
            position=i,
            criterion_key=e.criterion_key,
            excerpt=e.excerpt,
            satisfied=e.satisfied,
            reason=e.reason,
            run_id=e.run_id,
            created_by_id=e.created_by_id,
        )
        for i, e in enumerate(e for e in examples if e.criterion_key in keys)
    )


def _key_number(key: str) -> int:
    """n for a key "c<n>", else 0: fresh keys continue after the highest such number."""
    return int(key[1:]) if key.startswith("c") and key[1:].isdigit() else 0


def _assign_keys(rubric: Rubric, criteria: Sequence[CriterionInput]) -> list[CriterionInput]:
    """Give every criterion a key: an explicit one, else the key of an identical description
    in the current version, else a fresh key never used by this rubric."""
    previous = {}
    if rubric.current_version_id:
        previous = {
            c.description.strip(): c.key
            for c in Criterion.objects.filter(version_id=rubric.current_version_id)
        }
    used = set(Criterion.objects.filter(version__rubric=rubric).values_list("key", flat=True))
    taken = {c.key for c in criteria if c.key}
    # The running maximum over every key used by any version or given here: linear time, and
    # a fresh key is still never one this rubric used before.
    top = max((_key_number(k) for k in used | taken), default=0)
    out = []
    for c in criteria:
        key = c.key or previous.get(c.description.strip())
        if not key or (key in taken and key != c.key):
            top += 1
            key = f"c{top}"
        taken.add(key)
        out.append(CriterionInput(description=c.description.strip(), required=c.required, key=key))
    return out


def version_create(
    *,
    rubric: Rubric,
    criteria: Sequence[CriterionInput],
    judge_view: str,
    run_token_budget: int,
    instructions: str = "",
    examples: Sequence[ExampleInput] | None = None,
    user=None,
    note: str = "",
) -> RubricVersion:
    """The next version of ``rubric`` (validated input), made its current one. ``examples``
    (None: ``examples_next``) are copied for the criteria the version has."""
    if examples is None:
        examples = examples_next(rubric)
    keyed = _assign_keys(rubric, criteria)
    last = rubric.versions.order_by("-number").values_list("number", flat=True).first() or 0
    version = RubricVersion.objects.create(
        rubric=rubric,
        number=last + 1,
        judge_view=judge_view,
        run_token_budget=run_token_budget,
        instructions=instructions,
        created_by=user,
        note=note[:300],
    )
    Criterion.objects.bulk_create(
        Criterion(
            version=version,
            key=c.key or "",
            position=i,
            description=c.description,
            required=c.required,
        )
        for i, c in enumerate(keyed)
    )
    _copy_examples(version, examples)
    rubric.current_version = version
    rubric.save(update_fields=["current_version", "updated_at"])
    return version


def _same_criteria(version: RubricVersion | None, criteria: Sequence[CriterionInput]) -> bool:
    if version is None:
        return not criteria
    current: list[tuple[str | None, str, bool]] = [
        (c.key, c.description, c.required) for c in version.criteria.order_by("position")
    ]
    wanted: list[tuple[str | None, str, bool]] = [
        (c.key, c.description.strip(), c.required) for c in criteria
    ]
    if any(k is None for k, _, _ in wanted):
        current = [(None, d, r) for _, d, r in current]
        wanted = [(None, d, r) for _, d, r in wanted]
    return current == wanted


def _criteria_of(version: RubricVersion | None) -> list[CriterionInput]:
    if version is None:
        return []
    return [
        CriterionInput(description=c.description, required=c.required, key=c.key)
        for c in version.criteria.order_by("position")
    ]


def view_of(version: RubricVersion | None) -> dict[str, Any]:
    """What the judge sees under ``version`` and the instructions it is given; a first version
    starts from the defaults."""
    if version is None:
        return {
            "judge_view": JudgeView.FINAL.value,
            "run_token_budget": DEFAULT_RUN_TOKEN_BUDGET,
            "instructions": "",
        }
    return {
        "judge_view": version.judge_view,
        "run_token_budget": version.run_token_budget,
        "instructions": version.instructions,
    }


def _view_note(old: dict[str, Any], new: dict[str, Any]) -> str:
    """What changed, e.g. "Judge view: final → trajectory; Token budget: 24,000 → 8,000"."""
    parts = []
    if old["judge_view"] != new["judge_view"]:
        parts.append(f"Judge view: {old['judge_view']} → {new['judge_view']}")
    if old["run_token_budget"] != new["run_token_budget"]:
        parts.append(f"Token budget: {old['run_token_budget']:,} → {new['run_token_budget']:,}")
    if old.get("instructions", "") != new.get("instructions", ""):
        parts.append("Instructions changed" if new.get("instructions") else "Instructions removed")
    return "; ".join(parts)


def _examples_note(old: list[ExampleInput], new: list[ExampleInput]) -> str:
    if [e.taught() for e in old] == [e.taught() for e in new]:
        return ""
    return f"Examples: {len(old)} → {len(new)}" if len(old) != len(new) else "Examples edited"


def matching_draft(
    rubric: Rubric,
    criteria: Sequence[CriterionInput],
    view: dict[str, Any],
    examples: Sequence[ExampleInput],
) -> RubricVersion | None:
    """The draft version (unpublished, newer than the current version) that holds exactly
    ``criteria``, ``view`` (judge view, token budget, instructions) and, of ``examples``, those
    of its criteria: saving these makes that draft the version instead of another one (so a
    comparison's draft is the version its edits are saved as, under its number). Newest of
    the five newest drafts; None when none matches."""
    drafts = RubricVersion.objects.filter(rubric=rubric, published=False)
    if rubric.current_version_id:
        current = rubric.versions.filter(pk=rubric.current_version_id).values("number")
        drafts = drafts.filter(number__gt=current[:1])
    for draft in drafts.order_by("-number")[:5]:
        if view_of(draft) != view or not _same_criteria(draft, criteria):
            continue
        keys = set(draft.criteria.values_list("key", flat=True))
        wanted = [e.taught() for e in examples if e.criterion_key in keys]
        if [e.taught() for e in examples_of(draft.pk)] == wanted:
            return draft
    return None


def save_number(*, rubric: Rubric, criteria: Sequence[CriterionInput], view: dict[str, Any]) -> int:
    """The version number saving ``criteria`` and ``view`` (None values: the current
    version's) as a new version of ``rubric`` gives: a matching draft's (``matching_draft``),
    else the number after every version's, drafts included."""
    full = view_of(rubric.current_version) | {k: v for k, v in view.items() if v is not None}
    found = matching_draft(rubric, criteria, full, examples_next(rubric))
    if found is not None:
        return found.number
    last = rubric.versions.order_by("-number").values_list("number", flat=True).first()
    return (last or 0) + 1


def _draft_clear(rubric: Rubric) -> None:
    """The draft's examples are now a version's: the draft follows the current version."""
    if rubric.examples_draft:
        CriterionExample.objects.filter(rubric=rubric, version__isnull=True).delete()
        Rubric.objects.filter(pk=rubric.pk).update(examples_draft=False)
        rubric.examples_draft = False


def _draft_made_current(locked: Rubric, draft: RubricVersion, note: str) -> RubricVersion:
    """Publish ``draft`` as the rubric's current version (``locked``: its row, locked); the
    save's note replaces the draft's when one is given."""
    draft.published = True
    draft.note = (note or draft.note)[:300]
    draft.save(update_fields=["published", "note"])
    locked.current_version = draft
    locked.save(update_fields=["current_version", "updated_at"])
    return draft


def version_if_changed(
    *,
    rubric: Rubric,
    criteria: Sequence[CriterionInput] | None,
    judge_view: str | None,
    run_token_budget: int | None,
    instructions: str | None = None,
    user=None,
    note: str = "",
) -> tuple[RubricVersion, bool]:
    """A new version unless ``criteria`` (None: the current ones, keys kept), ``judge_view``
    ``run_token_budget`` and ``instructions`` (None: the current ones) are the current
    version's and the draft's examples (``examples_next``) are its examples; returns
    (version, created). A new version takes the draft's examples, and the draft is cleared.
    Without a note, a change of view, budget, instructions or examples is its note.
    Serialised on the rubric's row."""
    given = {
        "judge_view": judge_view,
        "run_token_budget": run_token_budget,
        "instructions": instructions,
    }
    for attempt in range(3):
        try:
            with transaction.atomic():
                locked = Rubric.objects.select_for_update().get(pk=rubric.pk)
                current = locked.current_version
                wanted = criteria if criteria is not None else _criteria_of(current)
                old = view_of(current)
                new = old | {k: v for k, v in given.items() if v is not None}
                examples = examples_next(locked)
                had = examples_of(locked.current_version_id)
                taught_note = _examples_note(had, examples)
                if _same_criteria(current, wanted) and old == new and not taught_note:
                    return current, False  # type: ignore[return-value]
                if locked.gate and current is not None:
                    raise GateRequired()
                if current is not None:
                    note = note or "; ".join(p for p in (_view_note(old, new), taught_note) if p)
                draft = matching_draft(locked, wanted, new, examples)
                if draft is not None:  # compared as a draft version: saving makes it the version
                    version = _draft_made_current(locked, draft, note)
                    _draft_clear(locked)
                    rubric.current_version = version
                    rubric.examples_draft = False
                    return version, True
                version = version_create(
                    rubric=locked, criteria=wanted, user=user, note=note, examples=examples, **new
                )
                _draft_clear(locked)
                rubric.current_version = version
                rubric.examples_draft = False
                return version, True
        except IntegrityError:
            # Two editors saved at once on SQLite (no row locks): take the next number.
            if attempt == 2:
                raise
    raise AssertionError("unreachable")
