"""``evalsite gate``: fail a CI job when a rubric's pass rates are below thresholds."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..client import Client
from ..errors import EvalsiteError
from ..gate import GateReport, gate_golden, gate_runs, pct
from . import io
from .progress import Bar, enabled


def add_gate(sub: Any) -> None:
    p = sub.add_parser(
        "gate",
        help="score runs (JSON Lines) or the golden set; exit 1 below the thresholds",
        description="Runs: the pass rate is the share of runs that pass, a criterion's the "
        "share of runs whose verdict on it holds. --golden: the rates are the agreement with "
        "the human labels of the rubric's golden set. Failed evaluations fail the gate.",
    )
    p.add_argument("file", nargs="?", help="runs as JSON Lines, or - for stdin")
    p.add_argument("--golden", action="store_true", help="gate on the rubric's golden set")
    p.add_argument("--rubric", required=True, help="rubric slug or id")
    p.add_argument("--version", type=int, help="rubric version (default: current)")
    p.add_argument("--min-pass-rate", type=io.rate, help="e.g. 0.9 or 90%%")
    p.add_argument(
        "--min-criterion-pass-rate", type=io.rate,
        help="every required criterion's pass rate must reach this",
    )  # fmt: skip
    p.add_argument("--timeout", type=float, default=1800, help="seconds to wait (default 1800)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None,
        help="progress bar on stderr (default: when stderr is a terminal)",
    )  # fmt: skip
    p.set_defaults(handler=gate)


def gate(client: Client, args: argparse.Namespace) -> int:
    if args.golden == bool(args.file):
        raise io.UsageError("give a JSON Lines file of runs, or --golden (not both)")
    if args.min_pass_rate is None and args.min_criterion_pass_rate is None:
        raise io.UsageError("give --min-pass-rate and/or --min-criterion-pass-rate")
    bar = Bar(enabled(args.progress))
    if args.golden:
        report = gate_golden(
            client, rubric=args.rubric, version=args.version, progress=bar, timeout=args.timeout
        )
    else:
        report = _gate_file(client, args, bar)
    bar.close()
    out = report.as_json(args.min_pass_rate, args.min_criterion_pass_rate)
    print(json.dumps(out, indent=2) if args.json else table(report, out))
    return 0 if out["ok"] else 1


def _gate_file(client: Client, args: argparse.Namespace, bar: Bar) -> GateReport:
    with io.opened(args.file) as handle:
        numbered = list(io.jsonl(handle, args.file))
    try:
        return gate_runs(
            client, [run for _, run in numbered], rubric=args.rubric, version=args.version,
            progress=bar, timeout=args.timeout,
        )  # fmt: skip
    except EvalsiteError as exc:
        bar.close()
        raise io.by_line(exc, [number for number, _ in numbered]) from exc


def table(report: GateReport, out: dict[str, Any]) -> str:
    what = (
        "golden-set verdicts agreeing with reviewers" if report.mode == "golden" else "runs passed"
    )
    minimum = out["min_pass_rate"]
    lines = [
        f"evalsite gate: rubric {report.rubric} v{report.version}, {report.runs} runs"
        + (
            f" (gate {report.gate_id})"
            if report.mode == "runs"
            else f" (calibration {report.gate_id})"
        ),
        f"pass rate {pct(report.pass_rate)} ({report.passed}/{report.total} {what})"
        + (f", minimum {pct(minimum)}" if minimum is not None else ""),
        "",
        f"{'criterion':<10} {'required':<9} {'pass rate':>9} {'count':>11}  {'ok':<4} description",
    ]
    for c in out["criteria"]:
        count = f"{c['passed']}/{c['total']}"
        mark = ("ok" if c["ok"] else "FAIL") if c["required"] else "-"
        lines.append(
            f"{c['criterion_id']:<10} {'yes' if c['required'] else 'no':<9} {pct(c['rate']):>9} "
            f"{count:>11}  {mark:<4} {c['description'][:70]}"
        )
    lines += [
        f"failed: {f.get('run_id', '')} {f['error']}".replace("  ", " ")
        for f in out["failures"][:10]
    ]
    lines.append("")
    lines.append("PASSED" if out["ok"] else "FAILED: " + "; ".join(out["reasons"]))
    return "\n".join(lines)
