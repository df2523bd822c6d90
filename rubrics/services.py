"""Writes for rubrics. Criteria changes always create a new immutable version."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from django.db import IntegrityError, transaction
from django.utils.text import slugify
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from runs.scoring import AlignmentWeights, coerce_criteria
from runs.scoring import Criterion as CriterionSpec
from teams.models import Team

from .models import AlignmentMode, Criterion, Rubric, RubricVersion, Strategy


class RubricValidationError(ValueError):
    """Invalid rubric input; ``errors`` maps each field name to a message a person can act on."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


class JudgeParams(BaseModel):
    """What a rubric may set about its judge besides the model string."""

    model_config = ConfigDict(extra="forbid")
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, gt=0, le=100_000)
    timeout: float | None = Field(default=None, gt=0, le=600)
    api_base: str | None = None

    @field_validator("api_base")
    @classmethod
    def _http_only(cls, value: str | None) -> str | None:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("api_base must start with http:// or https://")
        return value or None


@dataclass(frozen=True)
class CriterionInput:
    description: str
    required: bool = True
    key: str | None = None


def criteria_from_any(value: Any) -> list[CriterionInput]:
    """Criteria given as text (the shared parser), a list of objects, or CriterionInputs."""
    if value is None:
        return []
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


def _validate_criteria(criteria: Sequence[CriterionInput]) -> None:
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


def _clean_settings(fields: dict[str, Any]) -> dict[str, Any]:
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
            errors["judge_params"] = _pydantic_message(exc)
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
    scale: float = 1.0,
    strategy: str = Strategy.BATCHED,
    alignment_mode: str = AlignmentMode.OFF,
    alignment_weights: dict | None = None,
    user=None,
) -> Rubric:
    """Create a rubric and, when criteria are given, its version 1."""
    cleaned = _clean_settings(
        {
            "name": name,
            "scale": scale,
            "strategy": strategy,
            "alignment_mode": alignment_mode,
            "judge_params": judge_params or {},
            "alignment_weights": alignment_weights,
        }
    )
    if slug and Rubric.objects.filter(team=team, slug=slug).exists():
        raise RubricValidationError({"slug": f"a rubric with slug {slug!r} already exists"})
    parsed = criteria_from_any(criteria)
    _validate_criteria(parsed)
    with transaction.atomic():
        rubric = Rubric.objects.create(
            team=team,
            name=name.strip(),
            slug=_unique_slug(team, name, slug),
            description=description,
            judge_model=judge_model.strip(),
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
    cleaned = _clean_settings(fields)
    for name, value in cleaned.items():
        setattr(rubric, name, value.strip() if name in ("name", "judge_model") else value)
    rubric.save()
    return rubric


def _next_key(used: Iterable[str]) -> str:
    numbers = [int(k[1:]) for k in used if k.startswith("c") and k[1:].isdigit()]
    return f"c{max(numbers, default=0) + 1}"


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
    out = []
    for c in criteria:
        key = c.key or previous.get(c.description.strip())
        if not key or (key in taken and key != c.key):
            key = _next_key(used | taken)
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
    _validate_criteria(parsed)
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
    from django.utils import timezone

    if rubric.archived_at is None:
        rubric.archived_at = timezone.now()
        rubric.save(update_fields=["archived_at", "updated_at"])
    return rubric


@dataclass(frozen=True)
class TryOutcome:
    """The editor's "try it" result: the scorer's result, or the judge's error message."""

    result: Any = None
    error: str = ""

    @property
    def tokens(self) -> int:
        calls = getattr(self.result, "calls", None) or []
        return sum((c.prompt_tokens or 0) + (c.completion_tokens or 0) for c in calls)

    @property
    def cost(self) -> float | None:
        costs = [c.cost for c in getattr(self.result, "calls", None) or [] if c.cost is not None]
        return sum(costs) if costs else None

    @property
    def latency_ms(self) -> float | None:
        calls = getattr(self.result, "calls", None) or []
        return sum(c.latency_ms for c in calls) if calls else None


def rubric_try(*, rubric: Rubric, criteria: Sequence[CriterionInput], run: Any) -> TryOutcome:
    """Score one stored run with draft criteria and the rubric's judge, saving nothing and
    reusing no stored verdict (a try must show what the judge says now)."""
    from runs.judge_runtime import run_judged
    from runs.models import Evaluation
    from runs.scoring import JudgeError, RubricScorer, ScoringInputError
    from runs.services.evaluations import judge_config_for
    from runs.services.execute import judge_for

    _validate_criteria(criteria)
    # judge_for reads only the frozen judge config: the same judge a real evaluation gets.
    judge = judge_for(Evaluation(judge_config=judge_config_for(rubric)))
    specs = [
        CriterionSpec(id=c.key or f"draft{i + 1}", description=c.description, required=c.required)
        for i, c in enumerate(criteria)
    ]
    strategy: Literal["batched", "independent"] = (
        "independent" if rubric.strategy == Strategy.INDEPENDENT else "batched"
    )
    scorer = RubricScorer(judge=judge, criteria=specs, scale=rubric.scale, strategy=strategy)
    coroutine = scorer.ascore(
        task=run.task_text,
        output=run.output_text,
        system=run.system_text or None,
        request_context=run.request_context,
        metadata=run.metadata,
        input=run.input,
        reuse={},
    )
    try:
        return TryOutcome(
            result=run_judged(coroutine, timeout=judge.timeout * (judge.retries + 2) + 5)
        )
    except (JudgeError, ScoringInputError) as exc:
        return TryOutcome(error=str(exc))
    except TimeoutError:
        return TryOutcome(error="the judge did not answer in time")
