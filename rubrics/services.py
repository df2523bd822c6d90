"""Writes for rubrics. Criteria changes always create a new immutable version."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify
from pydantic import ValidationError

from evalsite.errors import FieldErrors
from runs.scoring import AlignmentWeights
from runs.scoring import Criterion as CriterionSpec
from runs.scoring.text import coerce_criteria, count_criteria
from teams.models import Team

from .judging import JudgeParams, judge_choice_errors
from .models import AlignmentMode, Criterion, Rubric, RubricVersion, Strategy

__all__ = ["JudgeParams"]  # re-exported: the API's input schema


class RubricValidationError(FieldErrors):
    """Invalid rubric input; ``errors`` maps each field name to a message a person can act on."""


@dataclass(frozen=True)
class CriterionInput:
    description: str
    required: bool = True
    key: str | None = None


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
        if len(c.description) > 5000:
            raise RubricValidationError({f"criteria[{i}].description": "at most 5,000 characters"})
        if c.key and c.key in seen:
            raise RubricValidationError({f"criteria[{i}].key": f"duplicate key {c.key!r}"})
        if c.key:
            seen.add(c.key)


def _clean_settings(
    fields: dict[str, Any], *, team: Team, rubric: Rubric | None = None
) -> dict[str, Any]:
    """Validate the non-criteria settings, returning cleaned values; errors name the field."""
    errors: dict[str, str] = {}
    out = dict(fields)
    if "name" in fields and not str(fields["name"] or "").strip():
        errors["name"] = "must not be blank"
    if "scale" in fields:
        try:
            out["scale"] = float(fields["scale"])
            if out["scale"] < 0:
                errors["scale"] = "must be zero or more"
        except (TypeError, ValueError):
            errors["scale"] = "must be a number"
    if "strategy" in fields and fields["strategy"] not in Strategy.values:
        errors["strategy"] = f"must be one of {', '.join(Strategy.values)}"
    if "alignment_mode" in fields and fields["alignment_mode"] not in AlignmentMode.values:
        errors["alignment_mode"] = f"must be one of {', '.join(AlignmentMode.values)}"
    if fields.get("judge_params") is not None:
        try:
            out["judge_params"] = JudgeParams.model_validate(fields["judge_params"]).model_dump(
                exclude_none=True
            )
        except ValidationError as exc:
            errors.update(_nested_errors("judge_params", exc))
    if "judge_connection" in fields or "judge_model" in fields:
        errors.update(judge_choice_errors(team=team, rubric=rubric, fields=fields, out=out))
    if fields.get("alignment_weights") is not None:
        try:
            out["alignment_weights"] = AlignmentWeights.model_validate(
                fields["alignment_weights"]
            ).model_dump()
        except ValidationError as exc:
            errors["alignment_weights"] = _pydantic_message(exc)
    if errors:
        raise RubricValidationError(errors)
    return out


def _nested_errors(field: str, exc: ValidationError) -> dict[str, str]:
    """``{"judge_params.timeout": "..."}``: each error under its own name."""
    out = {}
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        out[f"{field}.{loc}" if loc else field] = err["msg"]
    return out


def _pydantic_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        parts.append(f"{loc}: {err['msg']}" if loc else err["msg"])
    return "; ".join(parts)


def _unique_slug(team: Team, name: str, wanted: str | None) -> str:
    base = slugify(wanted or name)[:90] or "rubric"
    slug, n = base, 2
    while Rubric.objects.filter(team=team, slug=slug).exists():
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
    user=None,
) -> Rubric:
    """Create a rubric and, when criteria are given, its version 1. ``judge_connection``: a
    connection of the team (instance, id or name), or None for the deployment's judge."""
    cleaned = _clean_settings(
        {
            "name": name,
            "scale": scale,
            "strategy": strategy,
            "alignment_mode": alignment_mode,
            "judge_model": judge_model,
            "judge_connection": judge_connection,
            "judge_params": judge_params or {},
            "alignment_weights": alignment_weights,
        },
        team=team,
    )
    if slug and Rubric.objects.filter(team=team, slug=slug).exists():
        raise RubricValidationError({"slug": f"a rubric with slug {slug!r} already exists"})
    parsed = criteria_from_any(criteria)
    criteria_validate(parsed)
    with transaction.atomic():
        rubric = Rubric.objects.create(
            team=team,
            name=name.strip(),
            slug=_unique_slug(team, name, slug),
            description=description,
            judge_model=judge_model.strip(),
            judge_connection=cleaned["judge_connection"],
            judge_params=cleaned["judge_params"],
            scale=cleaned["scale"],
            strategy=strategy,
            alignment_mode=alignment_mode,
            alignment_weights=cleaned["alignment_weights"],
        )
        if parsed:
            _version_create(rubric=rubric, criteria=parsed, user=user, note="Created")
    return rubric


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
)


def rubric_update(*, rubric: Rubric, user=None, **fields: Any) -> Rubric:
    """Change a rubric's settings (not its criteria: see rubric_set_criteria)."""
    unknown = set(fields) - set(SETTINGS_FIELDS)
    if unknown:
        raise RubricValidationError({f: "unknown field" for f in sorted(unknown)})
    cleaned = _clean_settings(fields, team=rubric.team, rubric=rubric)
    for name, value in cleaned.items():
        setattr(rubric, name, value.strip() if name in ("name", "judge_model") else value)
    rubric.save()
    return rubric


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


def _version_create(
    *, rubric: Rubric, criteria: Sequence[CriterionInput], user=None, note: str = ""
) -> RubricVersion:
    keyed = _assign_keys(rubric, criteria)
    last = rubric.versions.order_by("-number").values_list("number", flat=True).first() or 0
    version = RubricVersion.objects.create(
        rubric=rubric, number=last + 1, created_by=user, note=note[:300]
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


def rubric_set_criteria(
    *, rubric: Rubric, criteria: Any, user=None, note: str = ""
) -> tuple[RubricVersion, bool]:
    """Replace the criteria. Returns (version, created): an unchanged list creates nothing."""
    parsed = criteria_from_any(criteria)
    if not parsed:
        raise RubricValidationError({"criteria": "a rubric version needs at least one criterion"})
    criteria_validate(parsed)
    for attempt in range(3):
        try:
            with transaction.atomic():
                locked = Rubric.objects.select_for_update().get(pk=rubric.pk)
                if _same_criteria(locked.current_version, parsed):
                    return locked.current_version, False  # type: ignore[return-value]
                version = _version_create(rubric=locked, criteria=parsed, user=user, note=note)
                rubric.current_version = version
                return version, True
        except IntegrityError:
            # Two editors saved at once on SQLite (no row locks): take the next number.
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def rubric_archive(*, rubric: Rubric) -> Rubric:
    if rubric.archived_at is None:
        rubric.archived_at = timezone.now()
        rubric.save(update_fields=["archived_at", "updated_at"])
    return rubric
