"""Reads for rubrics and their versions, always scoped to a team (another team's rubric is
None, which callers turn into a 404).

The API's reads come first; the editor's (current criteria, version diffs) below them. The
rubric pages' run statistics (pass rates, failure rates, ...) read runs' tables, so they live in
runs.selectors.rubric_stats.
"""

from __future__ import annotations

import difflib
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Prefetch, Q, QuerySet

from evalsite.pagination import InvalidCursor, cursor_decode, cursor_encode, page_size
from teams.models import Team

from .models import Criterion, CriterionExample, Rubric, RubricVersion


@dataclass(frozen=True)
class Page:
    items: list[Any]
    next_cursor: str | None


def _ordered_criteria() -> QuerySet[Criterion]:
    return Criterion.objects.order_by("position")


def _ordered_examples() -> QuerySet[CriterionExample]:
    return CriterionExample.objects.order_by("position")


def _with_current_version(qs: QuerySet[Rubric]) -> QuerySet[Rubric]:
    return qs.select_related("current_version", "judge_connection").prefetch_related(
        Prefetch("current_version__criteria", queryset=_ordered_criteria()),
        Prefetch("current_version__examples", queryset=_ordered_examples()),
    )


def rubrics_list(
    *,
    team: Team,
    include_archived: bool = False,
    cursor: str | None = None,
    limit: int | None = None,
) -> Page:
    """A page of the team's rubrics by name, each with its current version and criteria
    (two queries whatever the page size). Keyset pagination on (name, id)."""
    size = page_size(limit)
    qs = Rubric.objects.filter(team=team)
    if not include_archived:
        qs = qs.filter(archived_at__isnull=True)
    if cursor:
        name, rubric_id = cursor_decode(cursor, size=2)
        qs = qs.filter(Q(name__gt=name) | Q(name=name, id__gt=_uuid_or_invalid(rubric_id)))
    rows = list(_with_current_version(qs).order_by("name", "id")[: size + 1])
    items = rows[:size]
    more = len(rows) > size
    return Page(items, cursor_encode(items[-1].name, items[-1].id) if more else None)


def _uuid_or_invalid(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError as exc:
        raise InvalidCursor("not a cursor returned by this list") from exc


def rubric_get(*, team: Team, ref: str, with_criteria: bool = True) -> Rubric | None:
    """The team's rubric named by its id or its slug (None when it names nothing of this
    team), with its current version and, unless told not to, that version's criteria."""
    qs = Rubric.objects.filter(team=team)
    qs = _with_current_version(qs) if with_criteria else qs.select_related("current_version")
    try:
        return qs.filter(id=uuid.UUID(ref)).first()
    except ValueError:
        return qs.filter(slug=ref).first()


def rubric_versions_page(
    *, rubric: Rubric, cursor: str | None = None, limit: int | None = None
) -> Page:
    """A page of the rubric's versions, newest first, each with its criteria."""
    size = page_size(limit)
    qs = rubric.versions.all()
    if cursor:
        (number,) = cursor_decode(cursor, size=1)
        if not number.isdigit():
            raise InvalidCursor("not a cursor returned by this list")
        qs = qs.filter(number__lt=int(number))
    rows = list(
        qs.prefetch_related(
            Prefetch("criteria", queryset=_ordered_criteria()),
            Prefetch("examples", queryset=_ordered_examples()),
        ).order_by("-number")[: size + 1]
    )
    items = rows[:size]
    return Page(items, cursor_encode(items[-1].number) if len(rows) > size else None)


def rubric_version_get(*, rubric: Rubric, number: int) -> RubricVersion | None:
    return (
        rubric.versions.prefetch_related(
            Prefetch("criteria", queryset=_ordered_criteria()),
            Prefetch("examples", queryset=_ordered_examples()),
        )
        .filter(number=number)
        .first()
    )


# --- Editor reads (rubrics/views_*.py) ------------------------------------------------------------


def version_criteria(*, version_id: Any) -> list[Criterion]:
    """A version's criteria rows in order ([] for no version): the one reader of a version's
    criteria (the editor, failure rates, and the judge's cached specs in judging.services.execute)."""
    if not version_id:
        return []
    return list(Criterion.objects.filter(version_id=version_id).order_by("position"))


def version_examples(*, version_id: Any) -> list[CriterionExample]:
    """A version's graded examples in order ([] for no version): what its judge prompts show
    (judging.services.execute caches them per version, as versions never change)."""
    if not version_id:
        return []
    return list(CriterionExample.objects.filter(version_id=version_id).order_by("position"))


def example_runs(*, version_id: Any) -> dict[str, set[Any]]:
    """Criterion key -> the runs its examples in ``version_id`` were taken from (agreement
    figures leave them out: a run is not scored against its own example)."""
    rows = CriterionExample.objects.filter(version_id=version_id, run_id__isnull=False)
    out: dict[str, set[Any]] = {}
    for key, run_id in rows.values_list("criterion_key", "run_id"):
        out.setdefault(key, set()).add(run_id)
    return out


@dataclass
class DiffEntry:
    """One criterion key's change between two versions. ``kind`` is added, removed, reworded,
    required_changed or unchanged; a reworded criterion may also have changed its flag."""

    kind: str
    key: str
    old: Criterion | None = None
    new: Criterion | None = None
    required_changed: bool = False
    words: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class ViewChange:
    """A change of what the judge sees between two versions: ``field`` is judge_view or
    run_token_budget; ``old`` and ``new`` are shown as they are."""

    field: str
    label: str
    old: Any
    new: Any


def version_view_diff(*, old: RubricVersion | None, new: RubricVersion | None) -> list[ViewChange]:
    """The judge view and token budget changes from ``old`` to ``new`` (read from rows the
    caller already has: no query). Missing versions give []."""
    if old is None or new is None:
        return []
    fields = (
        ("judge_view", "Judge view"),
        ("run_token_budget", "Token budget"),
        ("instructions", "Instructions"),
    )
    return [
        ViewChange(name, label, getattr(old, name), getattr(new, name))
        for name, label in fields
        if getattr(old, name) != getattr(new, name)
    ]


def version_examples_diff(
    *, old: RubricVersion | None, new: RubricVersion | None
) -> list[ViewChange]:
    """Per criterion key whose graded examples differ between the versions: the counts (one
    query)."""
    if old is None or new is None:
        return []
    rows = CriterionExample.objects.filter(version_id__in=[old.pk, new.pk]).order_by("position")
    sides: dict[Any, dict[str, list[tuple[str, bool, str]]]] = {old.pk: {}, new.pk: {}}
    for e in rows:
        sides[e.version_id].setdefault(e.criterion_key, []).append(
            (e.excerpt, e.satisfied, e.reason)
        )
    before, after = sides[old.pk], sides[new.pk]
    changes = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key, []), after.get(key, [])
        if a != b:
            changes.append(
                ViewChange(
                    "examples",
                    f"Examples of {key}",
                    _count(len(a)),
                    _count(len(b), len(a) == len(b)),
                )
            )
    return changes


def _count(n: int, edited: bool = False) -> str:
    return f"{n} example{'s' if n != 1 else ''}{' (edited)' if edited else ''}"


def examples_draft_rows(*, rubric: Rubric) -> list[CriterionExample]:
    """The examples the rubric's draft holds (its own rows, else the current version's), in
    order: what the editor lists and edits."""
    if rubric.examples_draft:
        rows = CriterionExample.objects.filter(rubric=rubric, version__isnull=True)
    else:
        rows = CriterionExample.objects.filter(version_id=rubric.current_version_id)
    return list(rows.order_by("position"))


def rubric_version_diff(*, rubric: Rubric, old_number: int, new_number: int) -> list[DiffEntry]:
    """Compare two versions by stable criterion key (one query). Unknown numbers give []."""
    rows = Criterion.objects.filter(
        version__rubric=rubric, version__number__in=[old_number, new_number]
    ).select_related("version")
    old = {c.key: c for c in rows if c.version.number == old_number}
    new = {c.key: c for c in rows if c.version.number == new_number}
    entries = [_diff_entry(key, old.get(key), new.get(key)) for key in _diff_order(old, new)]
    return entries


def _diff_order(old: dict[str, Criterion], new: dict[str, Criterion]) -> list[str]:
    # New version's order first, then what was removed in the old version's order.
    keys = [c.key for c in sorted(new.values(), key=lambda c: c.position)]
    keys += [c.key for c in sorted(old.values(), key=lambda c: c.position) if c.key not in new]
    return keys


def _diff_entry(key: str, old: Criterion | None, new: Criterion | None) -> DiffEntry:
    if old is None:
        return DiffEntry("added", key, new=new)
    if new is None:
        return DiffEntry("removed", key, old=old)
    flag = old.required != new.required
    if old.description != new.description:
        return DiffEntry(
            "reworded", key, old, new, flag, _word_diff(old.description, new.description)
        )
    return DiffEntry("required_changed" if flag else "unchanged", key, old, new, flag)


def _word_diff(a: str, b: str) -> list[tuple[str, str]]:
    """Word-level changes as (op, text) with op in "=", "-", "+"."""
    old, new = a.split(" "), b.split(" ")
    out: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append(("=", " ".join(old[i1:i2])))
            continue
        if i2 > i1:
            out.append(("-", " ".join(old[i1:i2])))
        if j2 > j1:
            out.append(("+", " ".join(new[j1:j2])))
    return out
