"""Judge instructions and graded examples: what a team teaches the judge beyond its criteria.

Instructions are free text the rubric prompt shows in their own block after the fixed rules;
examples are excerpts of other runs with the correct verdict on one criterion and the reason,
shown in an examples block, one JSON line each, under the criterion they teach. Both are part
of the verdict key only when present, so keys of rubrics without them never change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# At most this many examples of one criterion reach the judge (the server's setting,
# EVALSITE_MAX_EXAMPLES_PER_CRITERION, has the same default).
DEFAULT_MAX_EXAMPLES = 3


@dataclass(frozen=True)
class Example:
    """A graded example of one criterion: an excerpt of a run, the correct verdict, why."""

    criterion_id: str
    excerpt: str
    satisfied: bool
    reason: str


def coerce_examples(value: Any) -> list[Example]:
    """Examples given as Example objects or dicts with the same fields (ValueError naming the
    bad one otherwise)."""
    if value is None:
        return []
    if isinstance(value, Example | Mapping) or not isinstance(value, Iterable):
        raise ValueError("examples must be a list of Example objects or dicts")
    out = []
    for i, item in enumerate(value):
        if isinstance(item, Mapping):
            try:
                item = Example(
                    criterion_id=str(item["criterion_id"]),
                    excerpt=item["excerpt"],
                    satisfied=item["satisfied"],
                    reason=item.get("reason") or "",
                )
            except KeyError as exc:
                raise ValueError(f"examples[{i}] has no {exc.args[0]!r}") from exc
        if not isinstance(item, Example):
            raise ValueError(f"examples[{i}] is not an Example or a dict")
        if not isinstance(item.excerpt, str) or not isinstance(item.reason, str):
            raise ValueError(f"examples[{i}]: excerpt and reason must be strings")
        if type(item.satisfied) is not bool:
            raise ValueError(f"examples[{i}]: satisfied must be true or false")
        out.append(item)
    return out


def examples_by_criterion(examples: Iterable[Example], limit: int) -> dict[str, list[Example]]:
    """criterion id -> its first ``limit`` examples, in the order given."""
    grouped: dict[str, list[Example]] = {}
    for example in examples:
        shown = grouped.setdefault(str(example.criterion_id), [])
        if len(shown) < limit:
            shown.append(example)
    return grouped


def checked_limit(value: Any) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(f"max_examples_per_criterion must be a whole number >= 0, got {value!r}")
    return value


def key_part(examples: Iterable[Example]) -> list[list[Any]]:
    """What a verdict key holds of one criterion's examples (the criterion is keyed apart)."""
    return [[e.excerpt, e.satisfied, e.reason] for e in examples]
