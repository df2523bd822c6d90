"""The rules a rubric's settings obey (name, scale, strategy, judge, weights, the judge view,
instructions, sampling), declared one small rule per field in tables and applied in the order
their errors are reported. rubrics.services applies them on every write (API and pages alike)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import TextChoices
from pydantic import ValidationError

from evalsite.errors import FieldErrors
from judge_engine import AlignmentWeights
from teams.models import Team

from .judging import JudgeParams, judge_choice_errors
from .models import DEFAULT_RUN_TOKEN_BUDGET, AlignmentMode, JudgeView, Rubric, Strategy
from .sampling import sampling_errors


class RubricValidationError(FieldErrors):
    """Invalid rubric input; ``errors`` maps each field name to a message a person can act on."""


# The bounds of a version's run_token_budget (the API schema shows the same ones).
MIN_RUN_TOKEN_BUDGET = 1_000
MAX_RUN_TOKEN_BUDGET = 1_000_000
MAX_INSTRUCTIONS_CHARS = 4_000
VERSION_FIELDS = ("judge_view", "run_token_budget", "instructions")
NO_VERSION = "a rubric without criteria has no version to carry it: send it with the criteria"


# A setting as cleaned, and its errors by field (none when it is valid).
Cleaned = tuple[Any, dict[str, str]]


def settings_clean(
    fields: dict[str, Any], *, team: Team, rubric: Rubric | None = None
) -> dict[str, Any]:
    """Validate the non-criteria settings, returning cleaned values; errors name the field."""
    out = dict(fields)
    errors = _apply_rules(SETTING_RULES, fields, out)
    if "judge_connection" in fields or "judge_model" in fields:
        errors.update(judge_choice_errors(team=team, rubric=rubric, fields=fields, out=out))
    errors.update(_apply_rules(WEIGHT_RULES, fields, out))
    errors.update(view_errors(fields))
    errors.update(sampling_errors(fields, out))
    if errors:
        raise RubricValidationError(errors)
    return out


def _apply_rules(
    rules: dict[str, Callable[[str, Any], Cleaned]], fields: dict[str, Any], out: dict[str, Any]
) -> dict[str, str]:
    """Clean each given field by its rule into ``out``; the errors of all of them."""
    errors: dict[str, str] = {}
    for name, clean in rules.items():
        if name in fields:
            out[name], problems = clean(name, fields[name])
            errors.update(problems)
    return errors


def _not_blank(name: str, value: Any) -> Cleaned:
    return value, ({} if str(value or "").strip() else {name: "must not be blank"})


def _scale(name: str, value: Any) -> Cleaned:
    try:
        scale = float(value)
    except (TypeError, ValueError):
        return value, {name: "must be a number"}
    return scale, ({name: "must be zero or more"} if scale < 0 else {})


def _one_of(choices: type[TextChoices]) -> Callable[[str, Any], Cleaned]:
    def clean(name: str, value: Any) -> Cleaned:
        if value in choices.values:
            return value, {}
        return value, {name: f"must be one of {', '.join(choices.values)}"}

    return clean


def _judge_params(name: str, value: Any) -> Cleaned:
    if value is None:
        return value, {}
    try:
        return JudgeParams.model_validate(value).model_dump(exclude_none=True), {}
    except ValidationError as exc:
        return value, _nested_errors(name, exc)


def _alignment_weights(name: str, value: Any) -> Cleaned:
    if value is None:
        return value, {}
    try:
        return AlignmentWeights.model_validate(value).model_dump(), {}
    except ValidationError as exc:
        return value, {name: _pydantic_message(exc)}


# The rule for each setting a write may give, in the order its errors are reported; the
# judge's connection and model (checked together, against the team's) come between them.
SETTING_RULES: dict[str, Callable[[str, Any], Cleaned]] = {
    "name": _not_blank,
    "scale": _scale,
    "strategy": _one_of(Strategy),
    "alignment_mode": _one_of(AlignmentMode),
    "judge_params": _judge_params,
}
WEIGHT_RULES: dict[str, Callable[[str, Any], Cleaned]] = {
    "alignment_weights": _alignment_weights,
}


def view_errors(fields: dict[str, Any]) -> dict[str, str]:
    """The judge view and token budget, when given (None means "keep the current one")."""
    errors = instructions_errors(fields.get("instructions"))
    view, budget = fields.get("judge_view"), fields.get("run_token_budget")
    if view is not None and view not in JudgeView.values:
        errors["judge_view"] = f"must be one of {', '.join(JudgeView.values)}"
    if budget is not None and type(budget) is not int:  # bool is an int: refused too
        errors["run_token_budget"] = "must be a whole number of tokens"
    elif budget is not None and not MIN_RUN_TOKEN_BUDGET <= budget <= MAX_RUN_TOKEN_BUDGET:
        errors["run_token_budget"] = (
            f"must be between {MIN_RUN_TOKEN_BUDGET:,} and {MAX_RUN_TOKEN_BUDGET:,} tokens "
            f"(got {budget:,})"
        )
    return errors


def instructions_errors(text: Any) -> dict[str, str]:
    """Judge instructions, when given: text of at most MAX_INSTRUCTIONS_CHARS characters."""
    if text is None:
        return {}
    if not isinstance(text, str):
        return {"instructions": "must be text"}
    if len(text.strip()) > MAX_INSTRUCTIONS_CHARS:
        return {
            "instructions": f"at most {MAX_INSTRUCTIONS_CHARS:,} characters "
            f"(got {len(text.strip()):,})"
        }
    return {}


def judge_view_validate(*, judge_view: str, run_token_budget: int) -> None:
    """A judge view and token budget a version could hold (for drafts that are not saved,
    like the editor's "try it"); RubricValidationError names the field."""
    errors = view_errors({"judge_view": judge_view, "run_token_budget": run_token_budget})
    if errors:
        raise RubricValidationError(errors)


def unversioned_view_errors(fields: dict[str, Any]) -> dict[str, str]:
    """A rubric without criteria has no version to carry a judge view or token budget, so it
    can only have the defaults its first version gets: other values must come with criteria."""
    defaults = {
        "judge_view": JudgeView.FINAL,
        "run_token_budget": DEFAULT_RUN_TOKEN_BUDGET,
        "instructions": "",
    }
    return {
        name: NO_VERSION
        for name, default in defaults.items()
        if fields.get(name) not in (None, default)
        and not (name == "instructions" and not str(fields[name]).strip())
    }


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


# Tries at a slug when creates racing for it keep taking the one found free.
