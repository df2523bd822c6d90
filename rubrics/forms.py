"""Forms for the rubric pages. They parse and display input; the rules live in services."""

from __future__ import annotations

import re
from typing import Any, get_args

from django import forms
from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator

from evalsite.schemas import FLOAT_MAX, INT_MAX
from judge_engine import DIMENSIONS, AlignmentWeights
from judge_engine.types import Perspective

from .forms_sampling import SamplingForm
from .models import AlignmentMode, Criterion, JudgeView, Rubric, RubricVersion, Strategy
from .services import (
    MAX_INSTRUCTIONS_CHARS,
    MAX_RUN_TOKEN_BUDGET,
    MIN_RUN_TOKEN_BUDGET,
    VERSION_FIELDS,
    CriterionInput,
    RubricValidationError,
)
from .versioning import view_of
from .working_copy import MAX_PASTE_CHARS, rows_differ

PERSPECTIVES: tuple[str, ...] = get_args(Perspective)
JUDGE_PARAMS = ("temperature", "max_tokens", "timeout")


# --- The criteria draft ------------------------------------------------------------------------


class CriterionDraftForm(forms.Form):
    """One row of the draft. ``key`` is the stable criterion key; blank for a new row."""

    key = forms.CharField(required=False, max_length=32, widget=forms.HiddenInput)
    # Over CRITERION_MAX_CHARS is refused on save by the service, with the message every
    # surface gives (judge_engine.text.criterion_too_long); this cap only bounds the post.
    description = forms.CharField(
        required=False, max_length=100_000, widget=forms.Textarea(attrs={"rows": 2})
    )
    required = forms.BooleanField(required=False)


class CriteriaBaseFormSet(forms.BaseFormSet):
    """At most EVALSITE_MAX_CRITERIA rows are read from a post, however many it claims. One
    row more than the cap is read so the service can say "at most N criteria (got N+1)"."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_num = settings.EVALSITE_MAX_CRITERIA
        self.absolute_max = self.max_num + 1


CriteriaFormSet = forms.formset_factory(CriterionDraftForm, formset=CriteriaBaseFormSet, extra=0)


class DraftMetaForm(forms.Form):
    """What travels with the draft besides its rows: the paste box and the version note."""

    import_text = forms.CharField(required=False, max_length=MAX_PASTE_CHARS, widget=forms.Textarea)
    note = forms.CharField(required=False, max_length=300)


# One line per judge view: what of a run the judge reads under it.
VIEW_HELP = {
    JudgeView.FINAL: "The task, the system prompt and the last answer.",
    JudgeView.CONVERSATION: "Every user and assistant turn, in order.",
    JudgeView.TRAJECTORY: "Every turn plus every tool call and its result.",
}


class DraftViewForm(forms.Form):
    """What the judge sees of a run under the draft: saved with it as a new version."""

    judge_view = forms.ChoiceField(choices=JudgeView.choices, label="Judge view")
    run_token_budget = forms.IntegerField(
        label="Token budget",
        # The column's range, as validators: the widget keeps its own min and max, and the
        # service names the budget's limits.
        validators=[MinValueValidator(0), MaxValueValidator(INT_MAX)],
        help_text="The most tokens of a run the judge reads; over it, middle steps are "
        "replaced by a marker saying what was cut.",
        widget=forms.NumberInput(
            attrs={"min": MIN_RUN_TOKEN_BUDGET, "max": MAX_RUN_TOKEN_BUDGET, "step": 1000}
        ),
    )
    instructions = forms.CharField(
        required=False,
        label="Judge instructions",
        max_length=MAX_INSTRUCTIONS_CHARS,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text=f"Markdown, at most {MAX_INSTRUCTIONS_CHARS:,} characters. Shown to the judge "
        "after evalsite's fixed rules, which it cannot change.",
    )

    @classmethod
    def posted(cls, data: Any, version: RubricVersion | None) -> DraftViewForm:
        """The draft's view as posted; a field the post lacks keeps ``version``'s value."""
        values = {k: str(v) for k, v in view_of(version).items()}
        values.update({k: data[k] for k in VERSION_FIELDS if k in data})
        return cls(values)

    def choices_with_help(self) -> list[tuple[str, str, str]]:
        return [
            (value, JudgeView(value).name.capitalize(), VIEW_HELP[value]) for value in JudgeView
        ]

    def differs(self, version: RubricVersion | None) -> bool:
        if not self.is_valid():
            return True
        return {k: self.cleaned_data[k] for k in VERSION_FIELDS} != view_of(version)

    def take_service_errors(self, error: RubricValidationError) -> RubricValidationError | None:
        """Put this form's fields' errors on it; the rest (criteria) as an error, or None."""
        for name in VERSION_FIELDS:
            if name in error.errors:
                self.add_error(name, error.errors[name])
        rest = {k: v for k, v in error.errors.items() if k not in VERSION_FIELDS}
        return RubricValidationError(rest) if rest else None


def draft_rows_from_version(criteria: list[Criterion]) -> list[dict[str, Any]]:
    return [{"key": c.key, "description": c.description, "required": c.required} for c in criteria]


def draft_rows_from_formset(formset: Any) -> list[dict[str, Any]]:
    """The rows as posted (the formset must have been validated)."""
    rows = []
    for form in formset.forms:
        data = form.cleaned_data if hasattr(form, "cleaned_data") else {}
        rows.append(
            {
                "key": (data.get("key") or "").strip(),
                "description": data.get("description") or "",
                "required": bool(data.get("required")),
            }
        )
    return rows


def draft_formset(rows: list[dict[str, Any]]) -> Any:
    """An unbound formset showing ``rows``: what the editor renders after every draft change."""
    return CriteriaFormSet(initial=rows, prefix="c")


def draft_apply(rows: list[dict[str, Any]], op: str, parsed: list[Any] | None = None) -> list:
    """Apply one editing operation to the draft (never touches the database).

    ``op`` is ``add``, ``delete-N``, ``up-N``, ``down-N``, ``import-append`` or
    ``import-replace`` (the last two take the criteria parsed from the paste box).
    """
    rows = [dict(r) for r in rows]
    if op == "add" and len(rows) < settings.EVALSITE_MAX_CRITERIA:
        rows.append({"key": "", "description": "", "required": True})
    elif op in ("import-append", "import-replace"):
        imported = [
            {"key": "", "description": c.description, "required": c.required} for c in parsed or []
        ]
        rows = (
            imported
            if op == "import-replace"
            else [r for r in rows if r["description"].strip()] + imported
        )
    else:
        match = re.fullmatch(r"(delete|up|down)-(\d+)", op)
        if match and int(match.group(2)) < len(rows):
            rows = _move_or_delete(rows, match.group(1), int(match.group(2)))
    return rows


def _move_or_delete(rows: list[dict[str, Any]], action: str, i: int) -> list[dict[str, Any]]:
    if action == "delete":
        del rows[i]
    elif action == "up" and i > 0:
        rows[i - 1], rows[i] = rows[i], rows[i - 1]
    elif action == "down" and i < len(rows) - 1:
        rows[i + 1], rows[i] = rows[i], rows[i + 1]
    return rows


def draft_criteria(rows: list[dict[str, Any]]) -> tuple[list[CriterionInput], list[int]]:
    """The criteria to save and, for each, its row index. Fully blank rows are dropped: an
    added-but-never-filled row is not a criterion."""
    kept = [(i, r) for i, r in enumerate(rows) if r["description"].strip()]
    criteria = [
        CriterionInput(description=r["description"], required=r["required"], key=r["key"] or None)
        for _, r in kept
    ]
    return criteria, [i for i, _ in kept]


def draft_differs(rows: list[dict[str, Any]], criteria: list[Criterion]) -> bool:
    return rows_differ(rows, criteria)


def criteria_errors_onto_formset(
    formset: Any, error: RubricValidationError, row_indexes: list[int]
) -> str:
    """Put each ``criteria[i].field`` message next to its row; return what fits no row."""
    leftovers = []
    for name, message in error.errors.items():
        match = re.fullmatch(r"criteria\[(\d+)\]\.(\w+)", name)
        if match and int(match.group(1)) < len(row_indexes):
            form = formset.forms[row_indexes[int(match.group(1))]]
            field = match.group(2) if match.group(2) in form.fields else "description"
            form.add_error(field, message)
        else:
            leftovers.append(message)
    return "; ".join(leftovers)


# --- Creating a rubric -------------------------------------------------------------------------


class RubricCreateForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(
        required=False, max_length=20_000, widget=forms.Textarea(attrs={"rows": 2})
    )
    criteria_text = forms.CharField(
        label="Criteria",
        required=False,
        max_length=100_000,
        widget=forms.Textarea(attrs={"rows": 8}),
        help_text="One criterion per line. List markers are removed; an [optional] or "
        "(optional) tag at the start or the end of a line makes it optional.",
    )

    def apply_service_errors(self, error: RubricValidationError) -> None:
        for name, message in error.errors.items():
            field = "criteria_text" if name.startswith("criteria") else name
            self.add_error(field if field in self.fields else None, message)


# --- Judge and scoring settings ----------------------------------------------------------------


def _weight_field(label: str) -> forms.FloatField:
    return forms.FloatField(
        label=label,
        required=False,
        min_value=0,
        max_value=1,
        widget=forms.NumberInput(attrs={"step": "0.05"}),
    )


class RubricSettingsForm(SamplingForm):
    """Name, judge and scoring settings. Semantic validation is the service's; its errors
    are mapped back onto these fields by ``apply_service_errors``."""

    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    judge_connection = forms.ChoiceField(
        required=False,
        label="Judge connection",
        help_text="Where judge calls go. Owners add connections (endpoint and key) in team "
        "settings.",
    )
    judge_model = forms.CharField(
        required=False,
        max_length=200,
        help_text="A litellm model string; blank uses the connection's model (or the "
        "deployment default).",
        widget=forms.TextInput(attrs={"placeholder": "default model", "class": "mono"}),
    )
    # Their limits are the service's (JudgeParams, the scale's); these only keep them finite.
    temperature = forms.FloatField(
        required=False,
        min_value=0,
        max_value=FLOAT_MAX,
        widget=forms.NumberInput(attrs={"step": "0.1"}),
    )
    max_tokens = forms.IntegerField(required=False, min_value=0, max_value=INT_MAX)
    timeout = forms.FloatField(
        required=False, label="Timeout (s)", min_value=0, max_value=FLOAT_MAX
    )
    scale = forms.FloatField(
        min_value=0, max_value=FLOAT_MAX, widget=forms.NumberInput(attrs={"step": "any"})
    )
    strategy = forms.ChoiceField(choices=Strategy.choices)
    alignment_mode = forms.ChoiceField(choices=AlignmentMode.choices, label="Prompt alignment")
    custom_weights = forms.BooleanField(required=False, label="Override the default weights")
    user_share = _weight_field("User share (both)")

    def __init__(self, *args: Any, connections: Any = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.group_errors: dict[str, list[str]] = {}
        choices = [("", "Deployment default")]
        choices += [(str(c.pk), f"{c.name} ({c.model})") for c in connections]
        self.fields["judge_connection"].choices = choices  # type: ignore[attr-defined]
        for perspective in PERSPECTIVES:
            for dim in DIMENSIONS:
                self.fields[f"w_{perspective}_{dim}"] = _weight_field(dim.capitalize())

    @classmethod
    def for_rubric(cls, rubric: Rubric, connections: Any = ()) -> RubricSettingsForm:
        initial: dict[str, Any] = {
            "name": rubric.name,
            "description": rubric.description,
            "judge_connection": str(rubric.judge_connection_id or ""),
            "judge_model": rubric.judge_model,
            "scale": rubric.scale,
            "strategy": rubric.strategy,
            "alignment_mode": rubric.alignment_mode,
            "sample_rate": rubric.sample_rate,
            **SamplingForm.sampling_initial(rubric.sample_filters or {}),
            **{p: rubric.judge_params.get(p) for p in JUDGE_PARAMS},
        }
        initial.update(_weights_initial(rubric.alignment_weights))
        return cls(initial=initial, connections=connections)

    def weight_rows(self) -> list[tuple[str, list[Any]]]:
        return [(p, [self[f"w_{p}_{dim}"] for dim in DIMENSIONS]) for p in PERSPECTIVES]

    def service_fields(self) -> dict[str, Any]:
        """The cleaned values in the shape ``rubric_update`` takes."""
        data = self.cleaned_data
        params = {p: data.get(p) for p in JUDGE_PARAMS if data.get(p) not in (None, "")}
        return {
            "name": data["name"],
            "description": data.get("description", ""),
            "judge_model": data.get("judge_model", ""),
            "judge_connection": data.get("judge_connection") or None,
            "judge_params": params,
            "scale": data["scale"],
            "strategy": data["strategy"],
            "alignment_mode": data["alignment_mode"],
            "alignment_weights": self._weights() if data.get("custom_weights") else None,
            "sample_filters": self.sampling_filters(),
        } | ({} if data.get("sample_rate") is None else {"sample_rate": data["sample_rate"]})

    def _weights(self) -> dict[str, Any]:
        data = self.cleaned_data
        weights: dict[str, Any] = {
            p: {dim: data.get(f"w_{p}_{dim}") for dim in DIMENSIONS} for p in PERSPECTIVES
        }
        if data.get("user_share") is not None:
            weights["user_share"] = data["user_share"]
        return weights

    def apply_service_errors(self, error: RubricValidationError) -> None:
        """Map ``RubricValidationError.errors`` (service field → message) onto form fields."""
        for name, message in error.errors.items():
            if name.startswith("judge_params."):
                field = name.partition(".")[2]
                self.add_error(field if field in JUDGE_PARAMS else None, message)
            elif name == "judge_params":
                self._apply_nested(message, lambda loc: loc if loc in JUDGE_PARAMS else None)
            elif name == "alignment_weights":
                self._apply_nested(message, self._weight_field_for)
            elif name.startswith("sample_filters"):
                self.add_error(self.sampling_error_field(name), f"{name}: {message}")
            else:
                self.add_error(name if name in self.fields else None, message)

    def _apply_nested(self, message: str, field_for: Any) -> None:
        for part in message.split("; "):
            loc, _, text = part.partition(": ")
            field = field_for(loc) if text else None
            if field:
                self.add_error(field, text)
            elif loc.split(".")[0] in PERSPECTIVES and text:
                self.group_errors.setdefault(loc.split(".")[0], []).append(text)
            else:
                self.group_errors.setdefault("weights", []).append(part)

    def _weight_field_for(self, loc: str) -> str | None:
        parts = loc.split(".")
        if parts == ["user_share"]:
            return "user_share"
        if len(parts) == 2 and parts[0] in PERSPECTIVES and parts[1] in DIMENSIONS:
            return f"w_{parts[0]}_{parts[1]}"
        return None


# The engine's defaults (SCORING.md): shown (and edited from) until a rubric overrides them.
DEFAULT_WEIGHTS: dict[str, Any] = AlignmentWeights().model_dump()


def _weights_initial(weights: dict[str, Any] | None) -> dict[str, Any]:
    custom = bool(weights)
    weights = weights or DEFAULT_WEIGHTS
    share = weights.get("user_share", DEFAULT_WEIGHTS["user_share"])
    out: dict[str, Any] = {"custom_weights": custom, "user_share": share}
    for p in PERSPECTIVES:
        for dim in DIMENSIONS:
            out[f"w_{p}_{dim}"] = (weights.get(p) or {}).get(dim)
    return out
