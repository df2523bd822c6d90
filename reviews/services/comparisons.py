"""Comparisons: two sides judged on the same runs, as two re-score batches.

Side A is the baseline, side B the candidate: each a rubric version (a draft included: an
unpublished version, rubrics.drafts) and a judge model. Each side is a re-score batch whose
evaluations are *calibration* evaluations, so they never become a run's current result, never
change a run's status, and are exempt from the one-pending-evaluation rule; unlike golden-set
runs they are not forced, so every verdict whose key is stored already (an unchanged criterion,
same judge, same run) is reused on either side instead of judged again. Batches bring the rest:
the estimate, held evaluations released a window at a time, progress, cancel, the sweeper.

The runs are chosen by the caller (reviews.services.compare resolves golden and labelled sets,
which live above runs). Nothing here calls a judge.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from evalsite.errors import Conflict, FieldErrors
from judge_engine import JudgeConfig
from judging.services.rescore import rescore_active_check, rescore_after_create
from judging.services.rescore_estimate import (
    Estimate,
    batch_judge,
    estimate_from,
    judge_clean,
    plan_build,
    version_specs,
)
from judging.services.rescore_scope import chunks
from rubrics.models import Rubric, RubricVersion
from runs.models import AgentRun, Evaluation, Kind, RescoreBatch
from runs.services.evaluations import evaluation_build
from teams.models import Team

from ..models import Comparison, ComparisonPurpose


class ComparisonValidationError(FieldErrors):
    """Invalid comparison request; ``errors`` names each field at fault."""


class ComparisonConflict(Conflict, ValueError):
    """The idempotency key already names a comparison made for another request."""


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a version of the rubric and a judge model ("" = the rubric's)."""

    version: RubricVersion
    judge: str = ""


@dataclass(frozen=True)
class _Resolved:
    version: RubricVersion
    override: str
    config: JudgeConfig


def _resolve(rubric: Rubric, side: Side, name: str) -> _Resolved:
    if side.version.rubric_id != rubric.pk:
        raise ComparisonValidationError({f"{name}.version": "not a version of this rubric"})
    try:
        override = judge_clean(side.judge)
        config = batch_judge(rubric, override, rubric.team.judge_prices)
    except FieldErrors as exc:
        raise ComparisonValidationError({f"{name}.{k}": v for k, v in exc.errors.items()}) from exc
    return _Resolved(side.version, override, config)


def _sides(rubric: Rubric, a: Side, b: Side) -> tuple[_Resolved, _Resolved]:
    ra, rb = _resolve(rubric, a, "a"), _resolve(rubric, b, "b")
    if ra.version.pk == rb.version.pk and ra.config.model == rb.config.model:
        raise ComparisonValidationError(
            {
                "b": f"compares v{ra.version.number} with {ra.config.model} with itself: pick "
                "another version, a draft or another judge model"
            }
        )
    return ra, rb


def _check_runs(run_ids: Sequence[Any]) -> None:
    if not run_ids:
        raise ComparisonValidationError({"sample": "no runs match this sample"})
    limit = settings.EVALSITE_RESCORE_MAX_RUNS
    if len(run_ids) > limit:
        raise ComparisonValidationError(
            {"sample": f"more than {limit:,} runs: narrow the sample (EVALSITE_RESCORE_MAX_RUNS)"}
        )


def _estimate(team: Team, rubric: Rubric, side: _Resolved, run_ids: Sequence[Any]) -> Estimate:
    plan = plan_build(
        team.pk, run_ids, version_specs(side.version), side.config, rubric.strategy, False
    )
    return estimate_from(plan, side.config, 0)


def comparison_estimate(
    *, team: Team, rubric: Rubric, a: Side, b: Side, run_ids: Sequence[Any]
) -> dict[str, Any]:
    """What ``comparison_create`` would judge, reuse and cost per side; writes nothing."""
    ra, rb = _sides(rubric, a, b)
    _check_runs(run_ids)
    return _estimates(team, rubric, ra, rb, run_ids)


def _estimates(
    team: Team, rubric: Rubric, ra: _Resolved, rb: _Resolved, run_ids: Sequence[Any]
) -> dict[str, Any]:
    ea, eb = _estimate(team, rubric, ra, run_ids), _estimate(team, rubric, rb, run_ids)
    total = {
        name: getattr(ea, name) + getattr(eb, name)
        for name in ("judge_calls", "criterion_judgements", "criteria_reused", "tokens")
    }
    total["cost"] = None if ea.cost is None or eb.cost is None else ea.cost + eb.cost
    return {"a": ea.as_json(), "b": eb.as_json(), "total": total}


def _request_hash(rubric: Rubric, a: Side, b: Side, sample: dict[str, Any], purpose: str) -> str:
    asked = {
        "rubric": str(rubric.pk),
        "a": [str(a.version.pk), a.judge.strip()],
        "b": [str(b.version.pk), b.judge.strip()],
        "sample": sample,
        "purpose": purpose,
    }
    return hashlib.sha256(json.dumps(asked, sort_keys=True, default=str).encode()).hexdigest()


def comparison_create(
    *,
    team: Team,
    rubric: Rubric,
    a: Side,
    b: Side,
    run_ids: Sequence[Any],
    sample: dict[str, Any],
    purpose: str = ComparisonPurpose.COMPARE,
    idempotency_key: str | None = None,
    user: Any = None,
) -> tuple[Comparison, bool]:
    """Create the comparison, its two batches of held calibration evaluations and their
    estimates; the first windows are released once this commits. Returns (comparison,
    created): a repeated ``idempotency_key`` with the same request returns the first one."""
    key = (idempotency_key or "").strip()[:200] or None
    asked = _request_hash(rubric, a, b, sample, purpose)
    if key and (found := _by_key(team, key, asked)) is not None:
        return found, False
    ra, rb = _sides(rubric, a, b)
    _check_runs(run_ids)
    try:
        return _create(team, rubric, ra, rb, list(run_ids), sample, purpose, key, asked, user)
    except IntegrityError:
        found = _by_key(team, key, asked) if key else None
        if found is None:
            raise
        return found, False


def _by_key(team: Team, key: str, asked: str) -> Comparison | None:
    found = Comparison.objects.filter(team=team, idempotency_key=key).first()
    if found is not None and found.request_hash != asked:
        raise ComparisonConflict(
            f"Idempotency-Key {key!r} was already used for a different comparison "
            f"({found.pk}); use a new key for a new request",
            extra={"comparison_id": str(found.pk)},
        )
    return found


def _create(
    team: Team,
    rubric: Rubric,
    ra: _Resolved,
    rb: _Resolved,
    run_ids: list[Any],
    sample: dict[str, Any],
    purpose: str,
    key: str | None,
    asked: str,
    user: Any,
) -> tuple[Comparison, bool]:
    with transaction.atomic():
        rescore_active_check(team)
        comparison = Comparison.objects.create(
            team=team, rubric=rubric, version_a=ra.version, version_b=rb.version,
            judge_a=ra.config.model, judge_b=rb.config.model, sample=sample, runs=len(run_ids),
            purpose=purpose, idempotency_key=key, request_hash=asked, created_by=user,
            estimate=_estimates(team, rubric, ra, rb, run_ids),
        )  # fmt: skip
        comparison.batch_a = _side_batch(comparison, "a", ra, run_ids, user)
        comparison.batch_b = _side_batch(comparison, "b", rb, run_ids, user)
        comparison.save(update_fields=["batch_a", "batch_b"])
        for batch_id in (comparison.batch_a.pk, comparison.batch_b.pk):
            transaction.on_commit(partial(rescore_after_create, batch_id), robust=True)
    return comparison, True


def _side_batch(
    comparison: Comparison, name: str, side: _Resolved, run_ids: list[Any], user: Any
) -> RescoreBatch:
    estimate = comparison.estimate[name]
    batch = RescoreBatch.objects.create(
        team_id=comparison.team_id, rubric=comparison.rubric, rubric_version=side.version,
        judge_model=side.config.model, scope={"comparison": str(comparison.pk), "side": name},
        estimate=estimate, total=len(run_ids), created_by=user,
        window=max(1, settings.EVALSITE_BATCH_WINDOW),
    )  # fmt: skip
    rubric = comparison.rubric
    prices = comparison.team.judge_prices
    for chunk in chunks(run_ids):
        rows = []
        for run in AgentRun.objects.filter(pk__in=chunk).only("id", "team_id"):
            evaluation = evaluation_build(
                run=run, kind=Kind.RUBRIC, rubric=rubric, version=side.version,
                judge_model=side.override, batch=batch, held=True, prices=prices,
            )  # fmt: skip
            evaluation.calibration = True  # never the run's current result
            rows.append(evaluation)
        Evaluation.objects.bulk_create(rows)
    return batch


def comparison_get(*, team: Team, comparison_id: Any) -> Comparison | None:
    return (
        Comparison.objects.filter(team=team, pk=comparison_id)
        .select_related("rubric", "version_a", "version_b", "batch_a", "batch_b")
        .first()
    )
