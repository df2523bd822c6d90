"""The comparison report: two sides judged on the same runs (reviews.services.comparisons), per
criterion and per run, with agreement with the human labels on both sides.

Criteria follow their keys across versions (a reworded criterion keeps its key). A label counts
for a side when it answers that side's wording, else the other side's wording of the same key:
a reworded criterion is measured against what reviewers said about the old wording, which is
the point of comparing. A fixed number of queries whatever the size.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from rubrics.models import Criterion
from runs.models import AgentRun, CriterionVerdict, Evaluation, Status
from runs.selectors import BatchProgress, batches_progress

from ..effective import text_hash
from ..models import Comparison, VerdictLabel
from ..stats import Agreement, agreement_of, confusion_of

FLIPS_SHOWN = 50  # run links listed per criterion and direction (the counts are exact)


@dataclass
class CriterionComparison:
    criterion_id: str
    description_a: str | None  # None: not in side A's version
    description_b: str | None
    required: bool
    runs: int = 0  # runs with a verdict on both sides
    passed_a: int = 0
    passed_b: int = 0
    pass_to_fail: list[Any] = field(default_factory=list)  # run ids
    fail_to_pass: list[Any] = field(default_factory=list)
    agreement_a: Agreement | None = None
    agreement_b: Agreement | None = None

    @property
    def reworded(self) -> bool:
        return None not in (self.description_a, self.description_b) and (
            self.description_a != self.description_b
        )

    @property
    def flip_lists(self) -> tuple[list[Any], list[Any]]:
        return self.pass_to_fail, self.fail_to_pass

    @property
    def agreements(self) -> tuple[Agreement | None, Agreement | None]:
        return self.agreement_a, self.agreement_b

    @property
    def rate_a(self) -> float | None:
        return self.passed_a / self.runs if self.runs else None

    @property
    def rate_b(self) -> float | None:
        return self.passed_b / self.runs if self.runs else None


@dataclass
class ComparisonReport:
    comparison: Comparison
    progress_a: BatchProgress | None
    progress_b: BatchProgress | None
    criteria: list[CriterionComparison]
    run_pass_to_fail: list[Any]
    run_fail_to_pass: list[Any]
    run_labels: dict[Any, str]  # run id → external id or id, for links
    verdicts: dict[tuple[Any, str], dict[str, Any]]  # (run, key) → {"a", "b", "human"}

    @property
    def done(self) -> bool:
        return all(p is None or p.done >= p.total for p in self.sides())

    def sides(self) -> list[BatchProgress | None]:
        return [self.progress_a, self.progress_b]

    @property
    def named_sides(self) -> list[tuple[str, BatchProgress | None]]:
        c = self.comparison
        return [
            (f"a: v{c.version_a.number} · {c.judge_a}", self.progress_a),
            (f"b: v{c.version_b.number} · {c.judge_b}", self.progress_b),
        ]


def _criteria(version_id: Any) -> dict[str, Criterion]:
    return {c.key: c for c in Criterion.objects.filter(version_id=version_id).order_by("position")}


def _side_verdicts(batch_id: Any) -> dict[tuple[Any, str], dict[str, Any]]:
    rows = CriterionVerdict.objects.filter(
        evaluation__batch_id=batch_id, evaluation__status=Status.SUCCEEDED
    ).values("run_id", "criterion_key", "description", "satisfied")
    return {(r["run_id"], r["criterion_key"]): dict(r) for r in rows}


def _run_results(comparison: Comparison) -> dict[Any, dict[str, bool | None]]:
    out: dict[Any, dict[str, bool | None]] = defaultdict(dict)
    sides = {comparison.batch_a_id: "a", comparison.batch_b_id: "b"}
    for row in Evaluation.objects.filter(
        batch_id__in=[b for b in sides if b], status=Status.SUCCEEDED
    ).values("run_id", "batch_id", "passed"):
        out[row["run_id"]][sides[row["batch_id"]]] = row["passed"]
    return out


def _labels(comparison: Comparison, run_ids: set[Any]) -> dict[tuple[Any, str], dict[str, bool]]:
    out: dict[tuple[Any, str], dict[str, bool]] = defaultdict(dict)
    rows = VerdictLabel.objects.filter(
        rubric_id=comparison.rubric_id, run_id__in=list(run_ids)
    ).values("run_id", "criterion_key", "text_hash", "satisfied")
    for row in rows:
        out[(row["run_id"], row["criterion_key"])][row["text_hash"]] = row["satisfied"]
    return out


def _label(by_text: dict[str, bool], mine: str, other: str | None) -> bool | None:
    found = by_text.get(text_hash(mine))
    if found is None and other is not None:
        found = by_text.get(text_hash(other))
    return found


def _compare_criterion(
    row: CriterionComparison,
    a: dict[tuple[Any, str], dict[str, Any]],
    b: dict[tuple[Any, str], dict[str, Any]],
    run_ids: list[Any],
    labels: dict[tuple[Any, str], dict[str, bool]],
    verdicts: dict[tuple[Any, str], dict[str, Any]],
) -> None:
    key = row.criterion_id
    pairs_a: list[tuple[bool, bool]] = []
    pairs_b: list[tuple[bool, bool]] = []
    for run_id in run_ids:
        va, vb = a.get((run_id, key)), b.get((run_id, key))
        by_text = labels.get((run_id, key), {})
        human = None
        if va is not None:
            human = _label(by_text, va["description"], vb["description"] if vb else None)
            if human is not None:
                pairs_a.append((va["satisfied"], human))
        if vb is not None:
            human_b = _label(by_text, vb["description"], va["description"] if va else None)
            human = human_b if human_b is not None else human
            if human_b is not None:
                pairs_b.append((vb["satisfied"], human_b))
        verdicts[(run_id, key)] = {
            "a": va["satisfied"] if va else None,
            "b": vb["satisfied"] if vb else None,
            "human": human,
        }
        if va is None or vb is None:
            continue
        row.runs += 1
        row.passed_a += va["satisfied"]
        row.passed_b += vb["satisfied"]
        if va["satisfied"] and not vb["satisfied"]:
            row.pass_to_fail.append(run_id)
        elif vb["satisfied"] and not va["satisfied"]:
            row.fail_to_pass.append(run_id)
    row.agreement_a = agreement_of(confusion_of(pairs_a))
    row.agreement_b = agreement_of(confusion_of(pairs_b))


def comparison_report(*, comparison: Comparison) -> ComparisonReport:
    """Per criterion (side B's order, then criteria only side A has): verdict flips both ways,
    pass rates, agreement and kappa with human labels; run-level flips; each side's progress,
    tokens and cost. Verdicts of unfinished sides count as far as they go."""
    # Progress first: verdicts read after it include everything it counts as done, so a
    # report that says "done" never misses the last judgement's figures.
    batches = [x for x in (comparison.batch_a, comparison.batch_b) if x is not None]
    progress = batches_progress(batches=batches) if batches else {}
    crit_a, crit_b = _criteria(comparison.version_a_id), _criteria(comparison.version_b_id)
    a, b = _side_verdicts(comparison.batch_a_id), _side_verdicts(comparison.batch_b_id)
    results = _run_results(comparison)
    run_ids = sorted({r for r, _ in a} | {r for r, _ in b} | set(results), key=str)
    labels = _labels(comparison, set(run_ids))
    verdicts: dict[tuple[Any, str], dict[str, Any]] = {}
    rows = []
    for key in [*crit_b, *(k for k in crit_a if k not in crit_b)]:
        ca, cb = crit_a.get(key), crit_b.get(key)
        row = CriterionComparison(
            key,
            ca.description if ca else None,
            cb.description if cb else None,
            (cb or ca).required,  # type: ignore[union-attr]
        )
        _compare_criterion(row, a, b, run_ids, labels, verdicts)
        rows.append(row)
    names = {
        r.pk: str(r) for r in AgentRun.objects.filter(pk__in=run_ids).only("id", "external_id")
    }
    return ComparisonReport(
        comparison=comparison,
        progress_a=progress.get(comparison.batch_a_id),
        progress_b=progress.get(comparison.batch_b_id),
        criteria=rows,
        run_pass_to_fail=[r for r, x in results.items() if x.get("a") and x.get("b") is False],
        run_fail_to_pass=[r for r, x in results.items() if x.get("a") is False and x.get("b")],
        run_labels=names,
        verdicts=verdicts,
    )


def _agreement_json(stats: Agreement | None) -> dict[str, Any] | None:
    if stats is None:
        return None
    return {"labelled": stats.labelled, "agreement": stats.agreement, "kappa": stats.kappa}


def _progress_json(progress: BatchProgress | None) -> dict[str, Any] | None:
    return progress.as_json() if progress is not None else None


def comparison_report_json(report: ComparisonReport, *, flips_shown: int | None = None) -> dict:
    """The report as the API answers it (and the gate's 409 carries)."""
    c = report.comparison
    cut = slice(0, flips_shown)
    return {
        "id": str(c.pk),
        "rubric_id": str(c.rubric_id),
        "purpose": c.purpose,
        "a": {"version": c.version_a.number, "judge": c.judge_a},
        "b": {"version": c.version_b.number, "judge": c.judge_b,
              "draft": not c.version_b.published},
        "sample": c.sample,
        "runs": c.runs,
        "done": report.done,
        "gate_state": c.gate_state,
        "gate_result": c.gate_result,
        "estimate": c.estimate,
        "progress": {"a": _progress_json(report.progress_a), "b": _progress_json(report.progress_b)},
        "criteria": [
            {
                "criterion_id": row.criterion_id,
                "description_a": row.description_a,
                "description_b": row.description_b,
                "required": row.required,
                "runs": row.runs,
                "pass_rate_a": row.rate_a,
                "pass_rate_b": row.rate_b,
                "pass_to_fail": len(row.pass_to_fail),
                "fail_to_pass": len(row.fail_to_pass),
                "pass_to_fail_runs": [str(r) for r in row.pass_to_fail[cut]],
                "fail_to_pass_runs": [str(r) for r in row.fail_to_pass[cut]],
                "human_a": _agreement_json(row.agreement_a),
                "human_b": _agreement_json(row.agreement_b),
            }
            for row in report.criteria
        ],
        "run_flips": {
            "pass_to_fail": [str(r) for r in report.run_pass_to_fail],
            "fail_to_pass": [str(r) for r in report.run_fail_to_pass],
        },
        "created_at": c.created_at.isoformat(),
    }  # fmt: skip


def comparison_export_rows(report: ComparisonReport) -> Iterator[dict[str, Any]]:
    """One row per run and criterion: both sides' verdicts and the human label."""
    for (run_id, key), v in sorted(
        report.verdicts.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])
    ):
        yield {
            "run_id": str(run_id),
            "run": report.run_labels.get(run_id, str(run_id)),
            "criterion_id": key,
            "a": v["a"],
            "b": v["b"],
            "flipped": v["a"] is not None and v["b"] is not None and v["a"] != v["b"],
            "human": v["human"],
        }
