"""Starting comparisons: the sides (a version, a draft, a judge model) and the sample of runs
(the newest runs of the rubric, the runs list's filters, listed runs, the golden set or the
labelled runs), resolved here because golden and labelled sets live in reviews; the batches
themselves are made by reviews.services.comparisons."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from judging.services.rescore_scope import RescoreScope, RescoreValidationError, scope_run_ids
from rubrics.drafts import draft_create
from rubrics.models import Rubric, RubricVersion
from rubrics.services import RubricValidationError
from runs.models import AgentRun
from teams.models import Team

from ..models import Comparison, ComparisonPurpose, RunReview, VerdictLabel
from .comparisons import (
    ComparisonValidationError,
    Side,
    comparison_create,
    comparison_estimate,
)

SAMPLE_KINDS = ("latest", "filter", "runs", "golden", "labelled")
MAX_LATEST = 5_000


@dataclass(frozen=True)
class SideIn:
    """A side as asked: a version number (None: the current version), or a draft's criteria
    (text or a list, with an optional judge view and token budget), and a judge model."""

    version: int | None = None
    judge: str = ""
    draft: dict[str, Any] | None = None


@dataclass(frozen=True)
class SampleIn:
    kind: str = "latest"
    n: int = 50
    runs: tuple[Any, ...] = ()
    filters: RescoreScope = field(default_factory=RescoreScope)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind == "latest":
            out["n"] = self.n
        elif self.kind == "runs":
            out["runs"] = len(self.runs)
        elif self.kind == "filter":
            out["filters"] = self.filters.as_json()
        return out


def _version(rubric: Rubric, side: SideIn, name: str, user: Any) -> RubricVersion:
    if side.draft is not None and side.version is not None:
        raise ComparisonValidationError({f"{name}.draft": "give a version or a draft, not both"})
    if side.draft is not None:
        try:
            draft, _ = draft_create(rubric=rubric, user=user, **side.draft)
        except RubricValidationError as exc:
            raise ComparisonValidationError(
                {f"{name}.draft.{k}": v for k, v in exc.errors.items()}
            ) from exc
        return draft
    if side.version is None:
        if rubric.current_version is None:
            raise ComparisonValidationError({name: "this rubric has no criteria yet"})
        return rubric.current_version
    found = RubricVersion.objects.filter(rubric=rubric, number=side.version).first()
    if found is None:
        raise ComparisonValidationError(
            {f"{name}.version": f"rubric has no version {side.version}"}
        )
    return found


def golden_run_ids(*, rubric: Rubric) -> list[Any]:
    return list(
        RunReview.objects.filter(rubric=rubric, golden=True)
        .order_by("run__created_at")
        .values_list("run_id", flat=True)
    )


def labelled_run_ids(*, rubric: Rubric) -> list[Any]:
    return list(
        AgentRun.objects.filter(pk__in=VerdictLabel.objects.filter(rubric=rubric).values("run_id"))
        .order_by("created_at", "id")
        .values_list("id", flat=True)
    )


def sample_run_ids(*, team: Team, rubric: Rubric, sample: SampleIn) -> list[Any]:
    """The sample's run ids, oldest first; errors name the ``sample`` field at fault."""
    if sample.kind not in SAMPLE_KINDS:
        raise ComparisonValidationError({"sample.kind": f"one of {', '.join(SAMPLE_KINDS)}"})
    if sample.kind == "latest":
        if not 1 <= sample.n <= MAX_LATEST:
            raise ComparisonValidationError({"sample.n": f"between 1 and {MAX_LATEST:,}"})
        ids = list(
            AgentRun.objects.filter(team=team, rubric=rubric)
            .order_by("-created_at", "-id")
            .values_list("id", flat=True)[: sample.n]
        )
        return ids[::-1]
    if sample.kind == "golden":
        ids = golden_run_ids(rubric=rubric)
        if not ids:
            raise ComparisonValidationError(
                {"sample": "the golden set is empty: mark reviewed runs as golden first"}
            )
        return ids
    if sample.kind == "labelled":
        ids = labelled_run_ids(rubric=rubric)
        if not ids:
            raise ComparisonValidationError(
                {"sample": "no run of this rubric is labelled yet: review runs first"}
            )
        return ids
    scope = RescoreScope(runs=tuple(sample.runs)) if sample.kind == "runs" else sample.filters
    try:
        return scope_run_ids(team, rubric, scope)
    except RescoreValidationError as exc:
        raise ComparisonValidationError({f"sample.{k}": v for k, v in exc.errors.items()}) from exc


def comparison_start(
    *,
    team: Team,
    rubric: Rubric,
    a: SideIn,
    b: SideIn,
    sample: SampleIn,
    idempotency_key: str | None = None,
    dry_run: bool = False,
    purpose: str = ComparisonPurpose.COMPARE,
    user: Any = None,
) -> tuple[Comparison | None, dict[str, Any], bool]:
    """Compare side B with side A on the sample. Returns (comparison, estimate, created);
    ``dry_run`` answers the estimate alone (comparison None; a draft side is still saved as a
    draft, so the real request names the same version)."""
    if a.draft is not None:
        raise ComparisonValidationError(
            {"a.draft": "side a is a stored version; put the draft in b"}
        )
    version_a = _version(rubric, a, "a", user)
    version_b = _version(rubric, b, "b", user)
    run_ids = sample_run_ids(team=team, rubric=rubric, sample=sample)
    side_a, side_b = Side(version_a, a.judge or ""), Side(version_b, b.judge or "")
    if dry_run:
        estimate = comparison_estimate(
            team=team, rubric=rubric, a=side_a, b=side_b, run_ids=run_ids
        )
        return None, estimate, False
    comparison, created = comparison_create(
        team=team, rubric=rubric, a=side_a, b=side_b, run_ids=run_ids, sample=sample.as_json(),
        purpose=purpose, idempotency_key=idempotency_key, user=user,
    )  # fmt: skip
    return comparison, comparison.estimate, created
