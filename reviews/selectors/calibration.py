"""Reports of calibration judgements: golden-set runs and consistency checks."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db.models import Count

from rubrics.models import Criterion, Rubric
from runs.models import FINAL_STATUSES, AgentRun, CriterionVerdict, Evaluation, Status

from ..effective import text_hash
from ..models import Calibration, CalibrationItem, CalibrationKind, RunReview, VerdictLabel
from ..stats import Agreement, agreement_of, confusion_of, flip_rate
from .agreement import judge_verdicts, kappa_threshold


@dataclass(frozen=True)
class Progress:
    total: int
    finished: int
    failed: int

    @property
    def done(self) -> bool:
        return self.finished >= self.total

    @property
    def percent(self) -> int:
        return round(100 * self.finished / self.total) if self.total else 100


def calibration_get(*, team: Any, calibration_id: Any) -> Calibration | None:
    return (
        Calibration.objects.filter(team=team, pk=calibration_id)
        .select_related("rubric", "version", "baseline_version", "created_by")
        .first()
    )


def calibrations_list(*, rubric: Rubric, kind: str, limit: int = 20) -> list[Calibration]:
    return list(
        Calibration.objects.filter(rubric=rubric, kind=kind)
        .select_related("version", "baseline_version", "created_by")
        .order_by("-created_at")[:limit]
    )


def calibration_progress(*, calibration: Calibration) -> Progress:
    counts = dict(
        Evaluation.objects.filter(
            pk__in=CalibrationItem.objects.filter(calibration=calibration).values("evaluation_id")
        )
        .values_list("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )
    finished = sum(n for s, n in counts.items() if s in FINAL_STATUSES)
    failed = counts.get(Status.FAILED, 0) + counts.get(Status.CANCELLED, 0)
    return Progress(sum(counts.values()), finished, failed)


def golden_set(*, rubric: Rubric) -> list[RunReview]:
    """The rubric's golden runs (reviewed runs marked golden), newest first."""
    return list(
        RunReview.objects.filter(rubric=rubric, golden=True)
        .select_related("run")
        .defer(
            "run__input",
            "run__output",
            "run__request_context",
            "run__metadata",
            "run__task_text",
            "run__system_text",
            "run__output_text",
        )
        .order_by("-run__created_at")
    )


def _candidate(calibration: Calibration) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The criteria judged ([{key, description, required}]) and a map from the criterion key
    stored on the calibration's verdicts to the candidate's key."""
    if calibration.version_id:
        rows = Criterion.objects.filter(version_id=calibration.version_id).order_by("position")
        items: list[dict[str, Any]] = [
            {"key": c.key, "description": c.description, "required": c.required} for c in rows
        ]
        return items, {c["key"]: c["key"] for c in items}
    items = list(calibration.criteria or [])  # type: ignore[arg-type]
    # Inline criteria are judged under positional ids c1, c2, … (judging.services.execute).
    return items, {f"c{i + 1}": c["key"] for i, c in enumerate(items)}


def _calibration_verdicts(
    calibration: Calibration, key_map: dict[str, str]
) -> dict[tuple[Any, str], list[bool]]:
    out: dict[tuple[Any, str], list[bool]] = defaultdict(list)
    rows = CriterionVerdict.objects.filter(
        evaluation_id__in=CalibrationItem.objects.filter(calibration=calibration).values(
            "evaluation_id"
        ),
        evaluation__status=Status.SUCCEEDED,
    ).values_list("run_id", "criterion_key", "satisfied")
    for run_id, key, satisfied in rows:
        if key in key_map:
            out[(run_id, key_map[key])].append(satisfied)
    return out


@dataclass(frozen=True)
class Flip:
    run_id: Any
    run_label: str
    before: bool
    after: bool
    human: bool | None


@dataclass
class GoldenCriterion:
    criterion_id: str
    description: str
    required: bool
    baseline_description: str | None  # None: the criterion is new in the candidate
    stats: Agreement
    flagged: bool
    compared: int = 0
    flips: list[Flip] = field(default_factory=list)

    @property
    def reworded(self) -> bool:
        return (
            self.baseline_description is not None and self.baseline_description != self.description
        )


@dataclass
class GoldenReport:
    calibration: Calibration
    progress: Progress
    runs: int
    criteria: list[GoldenCriterion]


def _human_labels(rubric_id: Any, run_ids: list[Any]) -> dict[tuple[Any, str], dict[str, bool]]:
    out: dict[tuple[Any, str], dict[str, bool]] = defaultdict(dict)
    for row in VerdictLabel.objects.filter(rubric_id=rubric_id, run_id__in=run_ids).values(
        "run_id", "criterion_key", "text_hash", "satisfied"
    ):
        out[(row["run_id"], row["criterion_key"])][row["text_hash"]] = row["satisfied"]
    return out


def golden_report(*, calibration: Calibration) -> GoldenReport:
    """Per candidate criterion: agreement with the human labels (the label of the candidate's
    wording, else the label of the baseline wording of the same key — a reworded criterion is
    measured against what people said about the old wording, which is the point), and the
    verdicts that flipped versus the baseline version."""
    # Progress first: figures read after it include everything it counts as done, so a
    # report that says "done" never carries figures from before the last judgement.
    progress = calibration_progress(calibration=calibration)
    items, key_map = _candidate(calibration)
    run_ids = list(
        CalibrationItem.objects.filter(calibration=calibration)
        .values_list("run_id", flat=True)
        .distinct()
    )
    labels = {
        str(r.pk): r for r in AgentRun.objects.filter(pk__in=run_ids).only("id", "external_id")
    }
    after = _calibration_verdicts(calibration, key_map)
    before = (
        judge_verdicts(version=calibration.baseline_version, run_ids=run_ids)
        if calibration.baseline_version
        else {}
    )
    baseline_text = {key: row["description"] for (_, key), row in before.items()}
    human = _human_labels(calibration.rubric_id, run_ids)
    threshold = kappa_threshold()
    criteria = []
    for c in items:
        pairs, flips, compared = [], [], 0
        for run_id in run_ids:
            verdicts = after.get((run_id, c["key"]))
            if not verdicts:
                continue
            old = before.get((run_id, c["key"]))
            by_text = human.get((run_id, c["key"]), {})
            label = by_text.get(text_hash(c["description"]))
            if label is None and old is not None:
                label = by_text.get(text_hash(old["description"]))
            if label is not None:
                pairs.append((verdicts[0], label))
            if old is not None:
                compared += 1
                if old["satisfied"] != verdicts[0]:
                    run = labels.get(str(run_id))
                    flips.append(
                        Flip(
                            run_id,
                            str(run) if run else str(run_id),
                            old["satisfied"],
                            verdicts[0],
                            label,
                        )
                    )
        stats = agreement_of(confusion_of(pairs))
        criteria.append(
            GoldenCriterion(
                criterion_id=c["key"],
                description=c["description"],
                required=c["required"],
                baseline_description=baseline_text.get(c["key"]),
                stats=stats,
                flagged=stats.kappa is not None and stats.kappa < threshold,
                compared=compared,
                flips=flips,
            )
        )
    return GoldenReport(calibration, progress, len(run_ids), criteria)


@dataclass(frozen=True)
class ConsistencyCriterion:
    criterion_id: str
    description: str
    compared: int
    flipped: int
    flip_rate: float | None
    flaky: bool


@dataclass
class ConsistencyReport:
    calibration: Calibration
    progress: Progress
    runs: int
    threshold: float
    criteria: list[ConsistencyCriterion]

    @property
    def flaky(self) -> list[ConsistencyCriterion]:
        return [c for c in self.criteria if c.flaky]


def consistency_report(*, calibration: Calibration) -> ConsistencyReport:
    """Per criterion: of the sampled runs judged at least twice (the run's own verdict on the
    version plus the calibration's repeats, by the same or a second judge), how many got both
    verdicts. A criterion is flaky when that share exceeds EVALSITE_REVIEW_FLIP_THRESHOLD."""
    progress = calibration_progress(calibration=calibration)  # first: see golden_report
    items, key_map = _candidate(calibration)
    run_ids = list(
        CalibrationItem.objects.filter(calibration=calibration)
        .values_list("run_id", flat=True)
        .distinct()
    )
    repeats = _calibration_verdicts(calibration, key_map)
    own = (
        judge_verdicts(version=calibration.version, run_ids=run_ids) if calibration.version else {}
    )
    threshold = float(settings.EVALSITE_REVIEW_FLIP_THRESHOLD)
    criteria = []
    for c in items:
        sets = []
        for run_id in run_ids:
            values = list(repeats.get((run_id, c["key"]), []))
            base = own.get((run_id, c["key"]))
            if base is not None and base["description"] == c["description"]:
                values.append(base["satisfied"])
            sets.append(values)
        compared, flipped, rate = flip_rate(sets)
        criteria.append(
            ConsistencyCriterion(
                c["key"],
                c["description"],
                compared,
                flipped,
                rate,
                rate is not None and rate > threshold,
            )
        )
    return ConsistencyReport(
        calibration,
        progress,
        len(run_ids),
        threshold,
        criteria,
    )


def calibration_report(*, calibration: Calibration) -> GoldenReport | ConsistencyReport:
    if calibration.kind == CalibrationKind.GOLDEN:
        return golden_report(calibration=calibration)
    return consistency_report(calibration=calibration)
