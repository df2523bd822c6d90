"""A rubric's sampling settings (rate and filters) as written: validation, errors by field.

The decision they drive is the engine's (judge_engine.sampling), made at ingest.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import ValidationError

from judge_engine.sampling import MAX_FILTER_TEXT, SampleFilters

SAMPLING_FIELDS = ("sample_rate", "sample_filters")


def sampling_errors(fields: dict[str, Any], out: dict[str, Any]) -> dict[str, str]:
    """Check ``sample_rate`` and ``sample_filters`` when given, writing cleaned values to
    ``out``; the errors name the field (``sample_filters.agents.0``...)."""
    errors: dict[str, str] = {}
    if "sample_rate" in fields:
        rate, problem = _rate(fields["sample_rate"])
        if problem:
            errors["sample_rate"] = problem
        else:
            out["sample_rate"] = rate
    if "sample_filters" in fields:
        filters, found = _filters(fields["sample_filters"])
        errors.update(found)
        if not found:
            out["sample_filters"] = filters
    return errors


def _rate(value: Any) -> tuple[float, str]:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return 0.0, "must be a number from 0 to 100 (percent of runs judged)"
    try:
        rate = float(value)
    except ValueError:
        return 0.0, "must be a number from 0 to 100 (percent of runs judged)"
    if not math.isfinite(rate) or not 0 <= rate <= 100:
        return 0.0, f"must be between 0 and 100 percent (got {value})"
    return rate, ""


def _filters(value: Any) -> tuple[dict[str, Any], dict[str, str]]:
    if value is None:
        return {}, {}
    try:
        parsed = SampleFilters.model_validate(value)
    except ValidationError as exc:
        return {}, {
            ".".join(["sample_filters", *(str(p) for p in e["loc"])]): e["msg"]
            for e in exc.errors()
        }
    if any(not text.strip() or len(text) > MAX_FILTER_TEXT for text in parsed.texts()):
        return {}, {
            "sample_filters": f"keys and values must be non-blank, at most {MAX_FILTER_TEXT} "
            "characters"
        }
    return parsed.model_dump(exclude_defaults=True), {}
