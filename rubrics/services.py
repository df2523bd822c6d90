"""Writes for rubrics. Criteria changes, changes of what the judge sees of a run (the judge
view and the run's token budget) and of the judge instructions always create a new immutable
version (graded examples: rubrics.examples)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from judge_engine import Criterion as CriterionSpec
from judge_engine.text import (
    coerce_criteria,
    count_criteria,
    criteria_text_too_long,
    criterion_too_long,
)
from teams.models import Team

from .judging import JudgeParams
from .models import (
    DEFAULT_RUN_TOKEN_BUDGET,
    AlignmentMode,
    JudgeView,
    Rubric,
    RubricVersion,
    Strategy,
)
from .sampling import SAMPLING_FIELDS
from .settings_rules import (
    MAX_INSTRUCTIONS_CHARS,
    MAX_RUN_TOKEN_BUDGET,
    MIN_RUN_TOKEN_BUDGET,
    NO_VERSION,
    VERSION_FIELDS,
    RubricValidationError,
    judge_view_validate,
    settings_clean,
    unversioned_view_errors,
    view_errors,
)
from .versioning import CriterionInput, version_create, version_if_changed

# Re-exported: the API's and pages' input types; the length rule for rubrics.working_copy.
__all__ = [
    "MAX_INSTRUCTIONS_CHARS",
    "MAX_RUN_TOKEN_BUDGET",
    "MIN_RUN_TOKEN_BUDGET",
    "CriterionInput",
    "JudgeParams",
    "RubricValidationError",
    "criterion_too_long",
    "judge_view_validate",
]


def criteria_count_check(count: int) -> None:
    """At most EVALSITE_MAX_CRITERIA criteria per rubric version (and per inline rubric): the
    bound on one request's work. Raises RubricValidationError on ``criteria``."""
    limit = settings.EVALSITE_MAX_CRITERIA
    if count > limit:
        raise RubricValidationError({"criteria": f"at most {limit:,} criteria (got {count:,})"})


def criteria_from_any(value: Any) -> list[CriterionInput]:
    """Criteria given as text (the shared parser), a list of objects, or CriterionInputs.
    Held to the cap before anything is built: a list by its length, text by counting lines."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        criteria_count_check(len(value))
    elif isinstance(value, str):
        criteria_count_check(count_criteria(value))
        if problem := criteria_text_too_long(value):
            raise RubricValidationError({"criteria": problem})
    if isinstance(value, list) and all(isinstance(v, CriterionInput) for v in value):
        return list(value)
    keys = (
        [v.get("key") or v.get("id") if isinstance(v, dict) else None for v in value]
        if isinstance(value, list)
        else []
    )
    try:
        specs: list[CriterionSpec] = coerce_criteria(value)
    except (TypeError, ValueError) as exc:
        raise RubricValidationError({"criteria": str(exc)}) from exc
    out = []
    for i, spec in enumerate(specs):
        key = keys[i] if i < len(keys) else None
        out.append(CriterionInput(description=spec.description, required=spec.required, key=key))
    return out


def criteria_validate(criteria: Sequence[CriterionInput]) -> None:
    """The rules every criteria write obeys (count first, then each criterion); the error
    names the field, e.g. ``criteria`` or ``criteria[3].description``."""
    criteria_count_check(len(criteria))
    seen: set[str] = set()
    for i, c in enumerate(criteria):
        if not c.description.strip():
            raise RubricValidationError({f"criteria[{i}].description": "must not be blank"})
        if problem := criterion_too_long(c.description, position=i + 1):
            raise RubricValidationError({f"criteria[{i}].description": problem})
        if c.key and c.key in seen:
            raise RubricValidationError({f"criteria[{i}].key": f"duplicate key {c.key!r}"})
        if c.key:
            seen.add(c.key)


SLUG_ATTEMPTS = 5


# Words of API routes beside /api/rubrics/{rubric} (rubrics.api.RubricRefSegment): no rubric
# gets one as its slug, so a slug always names the rubric.
RESERVED_SLUGS = ("draft-from-prompt",)


def _slug_taken(team: Team, slug: str) -> bool:
    return slug in RESERVED_SLUGS or Rubric.objects.filter(team=team, slug=slug).exists()


def _rubric_slug(team: Team, name: str, wanted: str | None) -> str:
    """The slug a new rubric gets: the one asked for (refused on ``slug`` when taken), else
    the first free one made from it or the name (``support``, ``support-2``, ...)."""
    if wanted in RESERVED_SLUGS:
        raise RubricValidationError({"slug": f"{wanted!r} is reserved: choose another slug"})
    if wanted and _slug_taken(team, wanted):
        raise RubricValidationError({"slug": f"a rubric with slug {wanted!r} already exists"})
    base = slugify(wanted or name)[:90] or "rubric"
    if base == wanted:
        return base  # just found free
    slug, n = base, 2
    while _slug_taken(team, slug):
        slug, n = f"{base}-{n}", n + 1
    return slug


def rubric_create(
    *,
    team: Team,
    name: str,
    criteria: Any = None,
    slug: str | None = None,
    description: str = "",
    judge_model: str = "",
    judge_params: dict | None = None,
    judge_connection: Any = None,
    scale: float = 1.0,
    strategy: str = Strategy.BATCHED,
    alignment_mode: str = AlignmentMode.OFF,
    alignment_weights: dict | None = None,
    judge_view: str = JudgeView.FINAL,
    run_token_budget: int = DEFAULT_RUN_TOKEN_BUDGET,
    instructions: str = "",
    sample_rate: float = 100.0,
    sample_filters: dict | None = None,
    user=None,
) -> Rubric:
    """Create a rubric and, when criteria are given, its version 1 with ``judge_view`` and
    ``run_token_budget``. Without criteria those must be the defaults (there is no version to
    hold them yet: the first criteria write sets them). ``judge_connection``: a connection of
    the team (instance, id or name), or None for the deployment's judge."""
    view: dict[str, Any] = {
        "judge_view": judge_view,
        "run_token_budget": run_token_budget,
        "instructions": instructions,
    }
    cleaned = settings_clean(
        {
            "name": name,
            "scale": scale,
            "strategy": strategy,
            "alignment_mode": alignment_mode,
            "judge_model": judge_model,
            "judge_connection": judge_connection,
            "judge_params": judge_params or {},
            "alignment_weights": alignment_weights,
            "sample_rate": sample_rate,
            "sample_filters": sample_filters,
            **view,
        },
        team=team,
    )
    rubric_slug = _rubric_slug(team, name, slug)
    parsed = criteria_from_any(criteria)
    criteria_validate(parsed)
    if not parsed and unversioned_view_errors(view):
        raise RubricValidationError(unversioned_view_errors(view))
    view["instructions"] = (instructions or "").strip()
    rubric = Rubric(
        team=team,
        name=name.strip(),
        description=description,
        judge_model=judge_model.strip(),
        judge_connection=cleaned["judge_connection"],
        judge_params=cleaned["judge_params"],
        scale=cleaned["scale"],
        strategy=strategy,
        alignment_mode=alignment_mode,
        alignment_weights=cleaned["alignment_weights"],
        sample_rate=cleaned["sample_rate"],
        sample_filters=cleaned["sample_filters"],
    )
    for _ in range(SLUG_ATTEMPTS):
        if _rubric_insert(rubric, rubric_slug, criteria=parsed, view=view, user=user):
            return rubric
        # Another create took the slug since it was found free: answer as if it had come
        # first (the slug asked for is refused; a made-up one moves on to the next free one).
        rubric_slug = _rubric_slug(team, name, slug)
    raise RubricValidationError(
        {"slug": "rubrics created at the same moment took every slug tried: try again"}
    )


def _rubric_insert(
    rubric: Rubric, slug: str, *, criteria: list[CriterionInput], view: dict[str, Any], user: Any
) -> bool:
    """Insert ``rubric`` under ``slug`` with its version 1 (when it has criteria); False when
    the team's unique slug constraint refused it, i.e. a concurrent create took the slug."""
    rubric.slug = slug
    try:
        with transaction.atomic():
            rubric.save(force_insert=True)
            if criteria:
                version_create(rubric=rubric, criteria=criteria, user=user, note="Created", **view)
    except IntegrityError:
        if not _slug_taken(rubric.team, slug):
            raise
        return False
    return True


SETTINGS_FIELDS = (
    "name",
    "description",
    "judge_model",
    "judge_connection",
    "judge_params",
    "scale",
    "strategy",
    "alignment_mode",
    "alignment_weights",
    *SAMPLING_FIELDS,
)


def rubric_update(*, rubric: Rubric, user=None, **fields: Any) -> Rubric:
    """Change a rubric's settings. ``judge_view`` and ``run_token_budget`` belong to versions:
    changing either makes a new version with the current criteria (rubric_set_judge_view);
    criteria themselves change through rubric_set_criteria."""
    unknown = set(fields) - set(SETTINGS_FIELDS) - set(VERSION_FIELDS)
    if unknown:
        raise RubricValidationError({f: "unknown field" for f in sorted(unknown)})
    cleaned = settings_clean(fields, team=rubric.team, rubric=rubric)
    view = {name: cleaned.pop(name) for name in VERSION_FIELDS if name in cleaned}
    if not rubric.current_version_id and unversioned_view_errors(view):
        raise RubricValidationError(unversioned_view_errors(view))
    with transaction.atomic():
        for name, value in cleaned.items():
            setattr(rubric, name, value.strip() if name in ("name", "judge_model") else value)
        rubric.save()
        if rubric.current_version_id and view:
            rubric_set_judge_view(rubric=rubric, user=user, **view)
    return rubric


def rubric_set_criteria(
    *,
    rubric: Rubric,
    criteria: Any,
    user=None,
    note: str = "",
    judge_view: str | None = None,
    run_token_budget: int | None = None,
    instructions: str | None = None,
) -> tuple[RubricVersion, bool]:
    """Replace the criteria. The judge view, token budget and instructions are the current
    version's unless given. Returns (version, created): unchanged criteria, view, budget,
    instructions and examples create nothing; a new version takes the draft's examples."""
    parsed = criteria_from_any(criteria)
    if not parsed:
        raise RubricValidationError({"criteria": "a rubric version needs at least one criterion"})
    criteria_validate(parsed)
    view: dict[str, Any] = {
        "judge_view": judge_view,
        "run_token_budget": run_token_budget,
        "instructions": _stripped(instructions),
    }
    if view_errors(view):
        raise RubricValidationError(view_errors(view))
    return version_if_changed(rubric=rubric, criteria=parsed, user=user, note=note, **view)


def _stripped(text: Any) -> Any:
    return text.strip() if isinstance(text, str) else text


def rubric_set_judge_view(
    *,
    rubric: Rubric,
    judge_view: str | None = None,
    run_token_budget: int | None = None,
    instructions: str | None = None,
    user=None,
    note: str = "",
) -> tuple[RubricVersion, bool]:
    """Change what the judge sees of a run or the instructions it is given: a new version
    with the current criteria (keys kept) and a note naming the change, e.g. "Judge view:
    final → trajectory". None keeps a value; the same values create nothing. Returns
    (version, created)."""
    view: dict[str, Any] = {
        "judge_view": judge_view,
        "run_token_budget": run_token_budget,
        "instructions": _stripped(instructions),
    }
    errors = view_errors(view)
    if not rubric.current_version_id:
        errors |= {k: NO_VERSION for k, v in view.items() if v is not None} or {
            "judge_view": NO_VERSION
        }
    if errors:
        raise RubricValidationError(errors)
    return version_if_changed(rubric=rubric, criteria=None, user=user, note=note, **view)


def rubric_archive(*, rubric: Rubric) -> Rubric:
    if rubric.archived_at is None:
        rubric.archived_at = timezone.now()
        rubric.save(update_fields=["archived_at", "updated_at"])
    return rubric
