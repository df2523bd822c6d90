"""The CI gate: score a set of runs (or the rubric's golden set) with a rubric version and
compare the pass rates with thresholds.

- **Runs**: each run is stored as a run of this gate (``external_id`` ``gate-<id>-<n>``,
  ``metadata.gate_id``; its own ``external_id`` kept as ``metadata.source_external_id``), so
  a retried push stores nothing twice and the gate's runs never collide with others. With
  the rubric's current version they are judged on ingest; with another version they are
  stored without a rubric and re-scored against it. The pass rate is the share of runs that
  passed; a criterion's, the share of runs whose verdict on it holds.
- **Golden set**: the golden set is judged with the version (``POST .../golden-runs``) and
  the rates are the **agreement with the human labels**, overall and per criterion.

An evaluation that failed leaves no whole result: it counts as not passed and fails the gate.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ._runs import RunsMixin
from .client import Client
from .errors import EvalsiteError
from .types import Evaluation

Progress = Callable[[str, int, int], None]  # (phase, done, total)
BULK_CHUNK = 500


@dataclass
class CriterionRate:
    criterion_id: str
    description: str
    required: bool
    passed: int = 0
    total: int = 0

    @property
    def rate(self) -> float | None:
        return self.passed / self.total if self.total else None


@dataclass
class GateReport:
    mode: str  # "runs" or "golden"
    rubric: str
    version: int
    gate_id: str
    runs: int = 0
    passed: int = 0
    total: int = 0
    criteria: list[CriterionRate] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.total if self.total else None

    def reasons(self, min_pass_rate: float | None, min_criterion: float | None) -> list[str]:
        """Why the gate fails (empty: it passes)."""
        out = [f"{len(self.failures)} evaluation(s) failed"] if self.failures else []
        if not self.total:
            out.append("nothing was measured: no verdict to count")
        rate = self.pass_rate
        if min_pass_rate is not None and (rate is None or rate < min_pass_rate):
            out.append(f"pass rate {pct(rate)} is below {pct(min_pass_rate)}")
        for c in self.criteria:
            if _below(c, min_criterion):
                out.append(
                    f"required criterion {c.criterion_id} ({c.description[:60]}) passes "
                    f"{pct(c.rate)}, below {pct(min_criterion)}"
                )
        return out

    def as_json(self, min_pass_rate: float | None, min_criterion: float | None) -> dict[str, Any]:
        reasons = self.reasons(min_pass_rate, min_criterion)
        return {
            "ok": not reasons,
            "mode": self.mode,
            "metric": "agreement with human labels" if self.mode == "golden" else "runs passed",
            "rubric": self.rubric,
            "version": self.version,
            "gate_id": self.gate_id,
            "runs": self.runs,
            "passed": self.passed,
            "total": self.total,
            "pass_rate": self.pass_rate,
            "min_pass_rate": min_pass_rate,
            "min_criterion_pass_rate": min_criterion,
            "criteria": [
                {
                    "criterion_id": c.criterion_id,
                    "description": c.description,
                    "required": c.required,
                    "passed": c.passed,
                    "total": c.total,
                    "rate": c.rate,
                    "ok": not _below(c, min_criterion),
                }
                for c in self.criteria
            ],
            "failures": self.failures,
            "reasons": reasons,
        }  # fmt: skip


def _below(c: CriterionRate, minimum: float | None) -> bool:
    """A required criterion under the minimum (one without verdicts is not judged here)."""
    rate = c.rate
    return c.required and minimum is not None and rate is not None and rate < minimum


def pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate * 100:.1f}%"


def _version(client: Client, rubric: str, version: int | None) -> tuple[dict[str, Any], int]:
    found = client.get_rubric(rubric)
    current = found["current_version"]
    if current is None:
        raise EvalsiteError(422, "the rubric has no criteria yet", "rubric")
    return dict(found), version or current["number"]


# --- Runs ---------------------------------------------------------------------------------------


def gate_runs(
    client: Client,
    runs: Iterable[dict[str, Any]],
    *,
    rubric: str,
    version: int | None = None,
    progress: Progress | None = None,
    poll: float = 0.5,
    timeout: float | None = None,
) -> GateReport:
    """Scores ``runs`` (run payloads) as one gate. Runs the API refuses raise
    ``EvalsiteError`` with an item error per run, its ``index`` (and ``runs[i]`` field) the
    run's position in ``runs``."""
    found, number = _version(client, rubric, version)
    rescore = number != found["current_version"]["number"]
    gate_id = uuid.uuid4().hex[:12]
    payloads = [_gate_payload(r, gate_id, n, found["slug"], rescore) for n, r in enumerate(runs)]
    if not payloads:
        raise EvalsiteError(422, "no runs to gate", "runs")
    run_ids, evaluation_ids = _push(client, payloads, progress)
    if rescore:
        evaluations = _rescored(client, found, number, run_ids, progress, poll, timeout)
    else:
        evaluations = _awaited(client, evaluation_ids, progress, poll, timeout)
    report = GateReport("runs", found["slug"], number, gate_id, runs=len(payloads))
    _tally(report, evaluations)
    return report


def _gate_payload(
    run: dict[str, Any], gate_id: str, n: int, rubric: str, unjudged: bool
) -> dict[str, Any]:
    payload = dict(run)
    metadata = dict(payload.get("metadata") or {}) | {"gate_id": gate_id}
    if payload.get("external_id"):
        metadata["source_external_id"] = payload["external_id"]
    payload |= {"external_id": f"gate-{gate_id}-{n}", "metadata": metadata}
    if unjudged:  # stored without a rubric, then re-scored against the version asked for
        payload.pop("rubric", None)
        payload["alignment"] = "off"
    else:
        payload["rubric"] = rubric
    return payload


def _push(
    client: RunsMixin, payloads: list[dict[str, Any]], progress: Progress | None
) -> tuple[list[str], list[str]]:
    run_ids: list[str] = []
    evaluation_ids: list[str] = []
    for start in range(0, len(payloads), BULK_CHUNK):
        try:
            answer = client.create_runs_bulk(payloads[start : start + BULK_CHUNK])
        except EvalsiteError as exc:
            raise _from_start(exc, start) from exc
        for item in answer["items"]:
            run_ids.append(item["id"])
            evaluation_ids += [e["id"] for e in item["evaluations"] if e["kind"] == "rubric"]
        if progress:
            progress("pushing runs", len(run_ids), len(payloads))
    return run_ids, evaluation_ids


def _from_start(exc: EvalsiteError, start: int) -> EvalsiteError:
    """A chunk's refusal with its item errors' ``index`` and ``runs[i]`` counted from the
    first of all the runs, not of the chunk; the chunks before it are stored."""
    errors = [
        e | {"index": e["index"] + start, "field": _shifted(str(e["field"]), e["index"] + start)}
        if isinstance(e.get("index"), int)
        else e
        for e in exc.errors
    ]
    note = f"; the {start} runs before these were stored" if start else ""
    field = errors[0]["field"] if errors else exc.field
    return EvalsiteError(exc.status, exc.message + note, field, errors=errors, extra=exc.extra)


def _shifted(field: str, index: int) -> str:
    rest = field.split(".", 1)[1] if "." in field else ""
    return f"runs[{index}].{rest}" if rest else f"runs[{index}]"


def _awaited(
    client: Client,
    ids: list[str],
    progress: Progress | None,
    poll: float,
    timeout: float | None,
) -> list[Evaluation]:
    ended = []
    for evaluation_id in ids:
        ended += client.wait_evaluations([evaluation_id], poll=poll, timeout=timeout)
        if progress:
            progress("judging", len(ended), len(ids))
    return ended


def _rescored(
    client: Client,
    rubric: dict[str, Any],
    number: int,
    run_ids: list[str],
    progress: Progress | None,
    poll: float,
    timeout: float | None,
) -> list[Evaluation]:
    batch = client.rescore(rubric["slug"], runs=run_ids, target_version=number)

    def report(b: Any) -> None:
        if progress:
            progress("judging", b["done"], b["total"])

    client.wait_batch(batch["id"], poll=poll, timeout=timeout, on_progress=report)
    out = []
    for run_id in run_ids:
        evaluations = client.get_run(run_id)["evaluations"]
        out += [
            e
            for e in evaluations
            if e["kind"] == "rubric"
            and e["rubric_id"] == rubric["id"]
            and e["rubric_version"] == number
        ][:1]
    return out


def _tally(report: GateReport, evaluations: list[Evaluation]) -> None:
    criteria: dict[str, CriterionRate] = {}
    report.total = report.runs
    for e in evaluations:
        if e["status"] != "succeeded":
            report.failures.append(
                {"run_id": e["run_id"], "evaluation_id": e["id"], "error": e["error"]}
            )
            continue
        report.passed += e["passed"] is True
        for v in e["verdicts"]:
            c = criteria.setdefault(
                v["criterion_id"], CriterionRate(v["criterion_id"], v["description"], v["required"])
            )
            c.total += 1
            c.passed += v["satisfied"] is True
    missing = report.runs - len(evaluations)
    if missing:
        report.failures.append({"error": f"{missing} run(s) got no evaluation for this version"})
    report.criteria = sorted(criteria.values(), key=lambda c: _key_order(c.criterion_id))


def _key_order(key: str) -> tuple[int, str]:
    digits = key.lstrip("c")
    return (int(digits), key) if digits.isdigit() else (1 << 30, key)


# --- Golden set -----------------------------------------------------------------------------------


def gate_golden(
    client: Client,
    *,
    rubric: str,
    version: int | None = None,
    progress: Progress | None = None,
    poll: float = 1.0,
    timeout: float | None = None,
) -> GateReport:
    found, number = _version(client, rubric, version)
    calibration = client.start_golden_run(found["slug"], version=number)

    def report_progress(c: Any) -> None:
        if progress:
            progress("judging the golden set", c["progress"]["finished"], c["progress"]["total"])

    done = client.wait_calibration(
        calibration["id"], poll=poll, timeout=timeout, on_progress=report_progress
    )
    required = {
        c["criterion_id"]: c["required"] for c in client.get_version(rubric, number)["criteria"]
    }
    report = GateReport("golden", found["slug"], number, calibration["id"], runs=done["runs"])
    for c in done["criteria"]:
        labelled = c.get("labelled") or 0
        agreeing = round((c.get("agreement") or 0.0) * labelled)
        rate = CriterionRate(
            c["criterion_id"], c["description"], required.get(c["criterion_id"], True),
            agreeing, labelled,
        )  # fmt: skip
        report.criteria.append(rate)
        report.passed += agreeing
        report.total += labelled
    if done["progress"]["failed"]:
        report.failures.append({"error": f"{done['progress']['failed']} judgement(s) failed"})
    if not done["runs"]:
        raise EvalsiteError(
            422, "the rubric's golden set is empty: mark reviewed runs golden", "golden"
        )
    return report
