"""Validating the judge's rubric answer (fail-closed, SCORING.md "Judge output is untrusted")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .prompts import one_line


@dataclass(frozen=True)
class Answer:
    """One criterion's verdict as the judge gave it (evidence validated)."""

    satisfied: bool
    reasoning: str
    evidence: tuple[int, ...] = ()
    evidence_note: str | None = None


def _evidence(label: str, item: dict, steps: frozenset[int]) -> tuple[tuple[int, ...], str | None]:
    """The cited step numbers that are steps the judge was shown, and a note on the others.
    Citations never make a verdict invalid."""
    raw = item.get("evidence")
    if raw is None:
        return (), None
    if not isinstance(raw, list):
        return (), f"the judge's evidence for {label} was not a list of step numbers; ignored"
    kept: list[int] = []
    dropped: list[str] = []
    for value in raw[:50]:
        if type(value) is int and value in steps:
            if value not in kept:
                kept.append(value)
        else:
            dropped.append(repr(value)[:12])
    if len(raw) > 50:
        dropped.append(f"and {len(raw) - 50} more")
    note = None
    if dropped:
        note = (
            f"dropped citation{'s' if len(dropped) > 1 else ''} {', '.join(dropped)}: "
            "not a step the judge was shown"
        )
    return tuple(sorted(kept)), note


def _verdict_fields(index: int, item: Any) -> tuple[str, bool, str]:
    if not isinstance(item, dict):
        raise ValueError(f"verdict {index} is not an object")
    label, satisfied, reasoning = (item.get(k) for k in ("criterion_id", "satisfied", "reasoning"))
    if not isinstance(label, str):
        raise ValueError(f"verdict {index} has no criterion_id string")
    if type(satisfied) is not bool:
        raise ValueError(
            f"verdict for criterion {label}: satisfied must be true or false, not {satisfied!r}"
        )
    if not isinstance(reasoning, str):
        raise ValueError(f"verdict for criterion {label}: reasoning must be a string")
    return label, satisfied, reasoning


def validate_verdicts(
    data: Any, *, asked: Mapping[str, str], steps: frozenset[int] | None = None
) -> tuple[dict[str, Answer], str | None]:
    """Exactly one well-formed verdict per asked label (label -> description), nothing else.
    With ``steps`` (the step numbers of the transcript shown), each verdict's evidence is kept
    when it cites those steps; other citations are dropped and noted."""
    if not isinstance(data, dict) or not isinstance(data.get("verdicts"), list):
        raise ValueError('the answer must be a JSON object with a "verdicts" list')
    found: dict[str, Answer] = {}
    for index, item in enumerate(data["verdicts"]):
        label, satisfied, reasoning = _verdict_fields(index, item)
        if label not in asked:
            raise ValueError(f"judge answered for criterion {label!r}, which was not asked")
        if label in found:
            raise ValueError(f"judge answered twice for criterion {label}")
        evidence, note = _evidence(label, item, steps) if steps is not None else ((), None)
        found[label] = Answer(satisfied, reasoning, evidence, note)
    missing = [label for label in asked if label not in found]
    if missing:
        noun = "criterion" if len(missing) == 1 else "criteria"
        named = ", ".join(f"{label} ({one_line(asked[label])[:60]})" for label in missing)
        raise ValueError(f"judge answered no verdict for {noun} {named}")
    overall = data.get("overall_assessment")
    if overall is not None and not isinstance(overall, str):
        raise ValueError("overall_assessment must be a string")
    return found, overall or None
