"""Which runs a rubric judges: a sampling rate and filters, decided per run without a database.

The decision is deterministic: a run's bucket is a hash of the team, the rubric and the run's
own key (its external id, else its content hash), so the same run sent twice, or ingested on
another worker, is decided the same way. A run is judged when it matches every filter and its
bucket (0 <= bucket < 100) is below the rate.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

FULL_RATE = 100.0
# Keys of one filter; values are short: a filter is read on every ingested run.
MAX_FILTER_ITEMS = 50
MAX_FILTER_TEXT = 200

Text = StrictStr
Scalar = StrictStr | StrictBool | StrictInt | StrictFloat


class SampleFilters(BaseModel):
    """What a run must match to be judged (all given conditions, AND); empty: every run.

    ``agents``: the run's agent is one of these. ``metadata_equals``: each key's metadata
    value equals the given one. ``metadata_contains``: each key's metadata value contains the
    text (a string) or the item (a list). ``context_has``: each key is in the request context.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    agents: list[Text] = Field(default_factory=list, max_length=MAX_FILTER_ITEMS)
    metadata_equals: dict[Text, Scalar] = Field(default_factory=dict, max_length=MAX_FILTER_ITEMS)
    metadata_contains: dict[Text, Text] = Field(default_factory=dict, max_length=MAX_FILTER_ITEMS)
    context_has: list[Text] = Field(default_factory=list, max_length=MAX_FILTER_ITEMS)

    def is_empty(self) -> bool:
        return not (
            self.agents or self.metadata_equals or self.metadata_contains or self.context_has
        )

    def texts(self) -> list[str]:
        """Every key and text value, for length checks."""
        values = [v for v in self.metadata_equals.values() if isinstance(v, str)]
        return [
            *self.agents,
            *self.metadata_equals,
            *values,
            *self.metadata_contains,
            *self.metadata_contains.values(),
            *self.context_has,
        ]


@dataclass(frozen=True)
class SampleDecision:
    sampled: bool
    rate: float
    bucket: float
    # "sampled", "rate" (bucket at or above the rate) or "filter: <which>" (a filter missed).
    reason: str

    def as_json(self) -> dict[str, Any]:
        return {
            "sampled": self.sampled,
            "rate": self.rate,
            "bucket": round(self.bucket, 4),
            "reason": self.reason,
        }


def sample_bucket(team_id: Any, rubric_id: Any, run_key: str) -> float:
    """A point in [0, 100), uniform over runs, fixed for (team, rubric, run key)."""
    digest = hashlib.sha256(f"{team_id}:{rubric_id}:{run_key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 * 100


def _equals(value: Any, wanted: Any) -> bool:
    # JSON's true is not 1: a boolean equals only a boolean.
    if isinstance(value, bool) or isinstance(wanted, bool):
        return value is wanted
    return bool(value == wanted)


def _contains(value: Any, wanted: str) -> bool:
    if isinstance(value, str):
        return wanted in value
    if isinstance(value, list):
        return wanted in value
    return False


def filter_missed(
    filters: SampleFilters, *, agent: str, metadata: Any, request_context: Any
) -> str | None:
    """The first filter the run does not match (its name), or None when it matches all."""
    metadata = metadata if isinstance(metadata, dict) else {}
    context = request_context if isinstance(request_context, dict) else {}
    if filters.agents and agent not in filters.agents:
        return "agents"
    for key, value in filters.metadata_equals.items():
        if key not in metadata or not _equals(metadata[key], value):
            return f"metadata_equals.{key}"
    for key, text in filters.metadata_contains.items():
        if not _contains(metadata.get(key), text):
            return f"metadata_contains.{key}"
    for key in filters.context_has:
        if key not in context:
            return f"context_has.{key}"
    return None


def sample_decide(
    *,
    rate: float,
    filters: SampleFilters,
    bucket: float,
    agent: str,
    metadata: Any,
    request_context: Any,
) -> SampleDecision:
    """Whether a run with this bucket is judged at ``rate`` percent under ``filters``."""
    missed = filter_missed(filters, agent=agent, metadata=metadata, request_context=request_context)
    if missed is not None:
        return SampleDecision(False, rate, bucket, f"filter: {missed}")
    if bucket >= rate:
        return SampleDecision(False, rate, bucket, "rate")
    return SampleDecision(True, rate, bucket, "sampled")
