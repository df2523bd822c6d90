"""The sampling part of the rubric settings form: a rate and the four filters as plain lines
(no JSON to write), turned into the ``sample_filters`` object ``rubric_update`` checks
(rubrics.sampling; the decision itself is judge_engine.sampling)."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.validators import MaxValueValidator, MinValueValidator

from evalsite.schemas import FLOAT_MAX
from judge_engine.sampling import MAX_FILTER_ITEMS

# Form field -> the filter it writes, and whether its lines are "key=value" pairs.
FILTER_FIELDS = {
    "sample_agents": ("agents", False),
    "sample_metadata_equals": ("metadata_equals", True),
    "sample_metadata_contains": ("metadata_contains", True),
    "sample_context_has": ("context_has", False),
}


def _lines(label: str, help_text: str) -> forms.CharField:
    return forms.CharField(
        required=False,
        max_length=20_000,
        label=label,
        help_text=help_text,
        widget=forms.Textarea(attrs={"rows": 2, "class": "mono"}),
    )


class SamplingForm(forms.Form):
    sample_rate = forms.FloatField(
        required=False,
        label="Sampling rate (%)",
        # Only finite and storable here (validators, so the widget keeps 0..100): the service
        # says what a rate may be.
        validators=[MinValueValidator(-FLOAT_MAX), MaxValueValidator(FLOAT_MAX)],
        help_text="Share of matching runs judged at ingest; the rest are stored as not sampled.",
        widget=forms.NumberInput(attrs={"step": "any", "min": 0, "max": 100}),
    )
    sample_agents = _lines("Agents", "One agent name per line: only their runs are judged.")
    sample_metadata_equals = _lines(
        "Metadata equals",
        "One key=value per line, e.g. env=prod. A number, true or false matches that value; "
        'quote it ("3") to match the text.',
    )
    sample_metadata_contains = _lines(
        "Metadata contains",
        "One key=text per line: the value contains the text (or, for a list, the item).",
    )
    sample_context_has = _lines(
        "Request context has", "One key per line: the run's request context has it."
    )

    @staticmethod
    def sampling_initial(filters: dict[str, Any]) -> dict[str, str]:
        """The stored filters as the fields show them."""
        initial = {}
        for name, (key, pairs) in FILTER_FIELDS.items():
            value: Any = filters.get(key) or ({} if pairs else [])
            if pairs:
                initial[name] = "\n".join(f"{k}={_shown(v)}" for k, v in value.items())
            else:
                initial[name] = "\n".join(value)
        return initial

    def sampling_filters(self) -> dict[str, Any]:
        """The filters the fields describe (call after cleaning)."""
        out: dict[str, Any] = {}
        for name, (key, _) in FILTER_FIELDS.items():
            parsed = self.cleaned_data.get(name)
            if parsed:
                out[key] = parsed
        return out

    def _clean_lines(self, name: str) -> Any:
        _, pairs = FILTER_FIELDS[name]
        rows = [line.strip() for line in self.cleaned_data.get(name, "").splitlines()]
        rows = [r for r in rows if r]
        if len(rows) > MAX_FILTER_ITEMS:
            raise forms.ValidationError(f"at most {MAX_FILTER_ITEMS} lines (got {len(rows)})")
        if not pairs:
            return rows
        found: dict[str, Any] = {}
        for number, row in enumerate(rows, start=1):
            key, sep, value = row.partition("=")
            if not sep or not key.strip():
                raise forms.ValidationError(f"line {number} is not key=value: {row[:60]!r}")
            found[key.strip()] = _value(value.strip(), typed=name == "sample_metadata_equals")
        return found

    def clean_sample_agents(self) -> Any:
        return self._clean_lines("sample_agents")

    def clean_sample_metadata_equals(self) -> Any:
        return self._clean_lines("sample_metadata_equals")

    def clean_sample_metadata_contains(self) -> Any:
        return self._clean_lines("sample_metadata_contains")

    def clean_sample_context_has(self) -> Any:
        return self._clean_lines("sample_context_has")

    def sampling_error_field(self, name: str) -> str:
        """The form field a service error on ``sample_filters.<key>...`` belongs to."""
        parts = name.split(".")
        key = parts[1] if len(parts) > 1 else ""
        for field, (filter_key, _) in FILTER_FIELDS.items():
            if filter_key == key:
                return field
        return "sample_agents"


def _value(text: str, *, typed: bool) -> Any:
    """A metadata value as written: for "equals", a JSON number, true/false or a quoted
    string is that value; anything else is the text itself."""
    if typed:
        try:
            value = json.loads(text)
        except ValueError:
            return text
        if isinstance(value, str | bool | int | float):
            return value
    return text


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value) if _value(value, typed=True) != value else value
    return json.dumps(value)
