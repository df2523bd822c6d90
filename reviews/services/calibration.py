"""Calibration judgements: golden-set runs and judge consistency checks.

Both create *calibration* evaluations through the runs services (evaluation_build returns
them unsaved, so the calibration flag is set before the insert; then
evaluations_enqueue on commit). Calibration evaluations are judged by the workers like any
other, with ``force`` so verdict reuse cannot answer a repeated judgement from the first one,
and they never become a run's current result. Nothing here calls a judge.
"""

from __future__ import annotations

import re
from typing import Any

from django.db import transaction

from rubrics.judging import judge_choice_errors
from rubrics.models import Criterion, Rubric, RubricVersion
from rubrics.services import RubricValidationError, criteria_from_any
from runs.models import AgentRun, Evaluation, Kind
from runs.services import evaluations_enqueue
from runs.services.evaluations import evaluation_build

from ..models import Calibration, CalibrationItem, CalibrationKind
from ..selectors.agreement import version_pick
from .errors import ReviewValidationError

MAX_REPEATS = 10
MAX_SAMPLE = 200
MAX_JUDGE_MODEL = 200
KEY_PREFIX = re.compile(r"^\s*\[([A-Za-z0-9_-]{1,32})\]\s+(.*)$")
TAGS = {"optional", "required"}


def _version(rubric: Rubric, number: int | None) -> RubricVersion:
    version = version_pick(rubric=rubric, number=number)
    if version is None:
        message = (
            f"the rubric has no version {number}" if number else "the rubric has no criteria yet"
        )
        raise ReviewValidationError({"version": message})
    return version


def _keyed_lines(text: str) -> list[dict[str, Any]]:
    """Text criteria where a line may start with its key, e.g. ``[c2] Mentions "refund"``."""
    items: list[dict[str, Any]] = []
    for line in text.splitlines():
        key, rest = None, line
        match = KEY_PREFIX.match(line)
        if match and match.group(1).lower() not in TAGS:
            key, rest = match.group(1), match.group(2)
        for c in criteria_from_any(rest):
            items.append({"description": c.description, "required": c.required, "key": key})
    return items


def candidate_criteria(*, rubric: Rubric, criteria: Any) -> list[dict[str, Any]]:
    """Candidate criteria ([{key, description, required}]) from text or a list. A criterion
    keeps an explicit key, else the key of the same wording in the current version, else gets
    a fresh ``new<n>`` key: statistics and flips follow keys across versions."""
    try:
        items = (
            _keyed_lines(criteria)
            if isinstance(criteria, str)
            else [
                {"description": c.description, "required": c.required, "key": c.key}
                for c in criteria_from_any(criteria)
            ]
        )
    except RubricValidationError as exc:
        raise ReviewValidationError({"criteria": "; ".join(exc.errors.values())}) from exc
    if not items:
        raise ReviewValidationError({"criteria": "give at least one criterion"})
    current = {
        c.description: c.key for c in Criterion.objects.filter(version_id=rubric.current_version_id)
    }
    fresh = 0
    for item in items:
        if not item["key"]:
            item["key"] = current.get(str(item["description"]))
        if not item["key"]:
            fresh += 1
            item["key"] = f"new{fresh}"
    keys = [i["key"] for i in items]
    if len(set(keys)) != len(keys):
        raise ReviewValidationError({"criteria": "two criteria share a key"})
    return items


def _start(
    *,
    rubric: Rubric,
    kind: str,
    runs: list[AgentRun],
    version: RubricVersion | None,
    criteria: list[dict[str, Any]] | None,
    judge_model: str,
    repeats: int,
    user: Any,
) -> Calibration:
    inline = [{"description": c["description"], "required": c["required"]} for c in criteria or []]
    with transaction.atomic():
        calibration = Calibration.objects.create(
            team_id=rubric.team_id,
            rubric=rubric,
            kind=kind,
            version=version,
            criteria=criteria,
            baseline_version_id=rubric.current_version_id,
            judge_model=judge_model,
            repeats=repeats,
            created_by=user,
        )
        evaluations, items = [], []
        prices = rubric.team.judge_prices
        for run in runs:
            for repeat in range(repeats):
                evaluation = evaluation_build(
                    run=run,
                    kind=Kind.RUBRIC,
                    rubric=rubric,
                    version=version,
                    inline_criteria=inline if version is None else None,
                    judge_model=judge_model,
                    force=True,
                    prices=prices,
                )
                evaluation.calibration = True
                evaluations.append(evaluation)
                items.append(
                    CalibrationItem(
                        calibration=calibration, run=run, evaluation=evaluation, repeat=repeat
                    )
                )
        Evaluation.objects.bulk_create(evaluations)
        CalibrationItem.objects.bulk_create(items)
        evaluations_enqueue(e.id for e in evaluations)
    return calibration


def _judge_model(value: str, rubric: Rubric) -> str:
    model = (value or "").strip()
    if len(model) > MAX_JUDGE_MODEL:
        raise ReviewValidationError({"judge": f"at most {MAX_JUDGE_MODEL} characters"})
    # A second judge goes where the rubric's judge goes: the same rule as the rubric's model.
    problems = judge_choice_errors(
        team=rubric.team, rubric=rubric, fields={"judge_model": model}, out={}
    )
    if problems:
        raise ReviewValidationError({"judge": problems["judge_model"]})
    return model


def golden_run(
    *,
    rubric: Rubric,
    user: Any = None,
    version_number: int | None = None,
    criteria: Any = None,
    judge_model: str = "",
) -> Calibration:
    """Judge the rubric's golden set with a candidate: stored version ``version_number``, or
    ``criteria`` not saved as a version yet (text or a list), else the current version. The
    report compares each verdict with the human labels and with the current version's."""
    if version_number is not None and criteria is not None:
        raise ReviewValidationError({"criteria": "give a version or criteria, not both"})
    model = _judge_model(judge_model, rubric)
    golden = list(
        AgentRun.objects.filter(
            team_id=rubric.team_id, reviews__rubric=rubric, reviews__golden=True
        )
    )
    if not golden:
        raise ReviewValidationError(
            {"golden": "the golden set is empty: mark reviewed runs as golden first"}
        )
    if criteria is not None:
        candidate = candidate_criteria(rubric=rubric, criteria=criteria)
        version = None
    else:
        candidate, version = None, _version(rubric, version_number)
    return _start(
        rubric=rubric,
        kind=CalibrationKind.GOLDEN,
        runs=golden,
        version=version,
        criteria=candidate,
        judge_model=model,
        repeats=1,
        user=user,
    )


def _sample(
    rubric: Rubric, version: RubricVersion, run_ids: list[Any] | None, sample: int
) -> list[AgentRun]:
    if run_ids:
        wanted = list(dict.fromkeys(str(r) for r in run_ids))
        runs = list(AgentRun.objects.filter(team_id=rubric.team_id, pk__in=wanted))
        missing = sorted(set(wanted) - {str(r.pk) for r in runs})
        if missing:
            raise ReviewValidationError(
                {"runs": f"no such run in this team: {', '.join(missing[:5])}"}
            )
        return runs
    runs = list(
        AgentRun.objects.filter(
            team_id=rubric.team_id, rubric=rubric, current_version=version
        ).order_by("-created_at", "-id")[:sample]
    )
    if not runs:
        raise ReviewValidationError({"runs": f"no run has a result on v{version.number} to sample"})
    return runs


def consistency_check(
    *,
    rubric: Rubric,
    user: Any = None,
    version_number: int | None = None,
    run_ids: list[Any] | None = None,
    sample: int = 20,
    repeats: int = 3,
    judge_model: str = "",
) -> Calibration:
    """Judge a sample of runs ``repeats`` more times (or with a second judge model) on a
    version; the report shows per criterion how often the verdict flips. The sample is the
    given runs, else the ``sample`` newest runs whose result is on that version."""
    if not 1 <= repeats <= MAX_REPEATS:
        raise ReviewValidationError({"repeats": f"between 1 and {MAX_REPEATS}"})
    if not 1 <= sample <= MAX_SAMPLE:
        raise ReviewValidationError({"sample": f"between 1 and {MAX_SAMPLE}"})
    if run_ids is not None and len(run_ids) > MAX_SAMPLE:
        raise ReviewValidationError({"runs": f"at most {MAX_SAMPLE} runs"})
    model = _judge_model(judge_model, rubric)
    version = _version(rubric, version_number)
    return _start(
        rubric=rubric,
        kind=CalibrationKind.CONSISTENCY,
        runs=_sample(rubric, version, run_ids, sample),
        version=version,
        criteria=None,
        judge_model=model,
        repeats=repeats,
        user=user,
    )
