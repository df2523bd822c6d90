"""``evalsite score``, ``runs push``, ``rescore`` and ``export``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

from ..client import Client
from ..errors import EvalsiteError
from ..gate import pct
from ..results import ScoreResult
from . import io
from .progress import Bar, enabled

BULK_RUNS = 500  # runs per POST /api/runs/bulk (the API takes up to 1,000)
BULK_BYTES = 8_000_000  # and at most this much JSON (the API's default limit is 20 MB)


def _progress_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None,
        help="progress bar on stderr (default: when stderr is a terminal)",
    )  # fmt: skip


# --- score --------------------------------------------------------------------------------------


def add_score(sub: Any) -> None:
    p = sub.add_parser("score", help="score one run (a JSON payload) and print the verdicts")
    p.add_argument("file", help="the run payload as JSON, or - for stdin")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--rubric", help="rubric slug or id (default: the payload's)")
    which.add_argument("--criteria", help="inline criteria, one per line (@FILE reads a file)")
    p.add_argument("--wait", type=float, default=30, help="seconds to wait (default 30, max 120)")
    p.add_argument(
        "--fresh", action="store_true",
        help="re-judge a run whose external_id was scored before (on the rubric's current "
        "version) instead of printing its stored result",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the API's answer as JSON")
    p.set_defaults(handler=score)


def score(client: Client, args: argparse.Namespace) -> int:
    run = io.read_json(args.file)
    criteria = args.criteria
    if criteria and criteria.startswith("@"):
        with io.opened(criteria[1:]) as handle:
            criteria = handle.read()
    if not (args.rubric or criteria or run.get("rubric")):
        raise io.UsageError("say what to score with: --rubric, --criteria, or a payload rubric")
    result = client.score(
        run=run, rubric=args.rubric, criteria=criteria, timeout=args.wait, fresh=args.fresh or None
    )
    if args.json:
        print(json.dumps(result.raw, indent=2))
    else:
        outcome = "PASSED" if result.passed else "NOT PASSED"
        if result.stored:
            outcome += f" ({_stored_note(client, result)})"
        print(f"{outcome}  score {result.score}  run {result.run_id}")
        for v in result.verdicts:
            mark = "ok  " if v["satisfied"] else "FAIL"
            kind = "required" if v["required"] else "optional"
            print(f"  {mark} {v['criterion_id']:>4} [{kind}] {v['description']}")
        if result.reason and not result.passed:
            print(f"reason: {result.reason}")
    return 0 if result.passed else 1


def _stored_note(client: Client, result: ScoreResult) -> str:
    """What a stored result is: its rubric version and when it was judged (the evaluation's
    end, read back: the score answer does not carry it)."""
    source = f"version {result.rubric_version}" if result.rubric_version else "inline criteria"
    finished = client.get_evaluation(result.evaluation_id).get("finished_at")
    when = f", judged {ago(finished)}" if finished else ""
    return f"stored result from {source}{when}; --fresh to re-judge"


def ago(stamp: str, now: datetime | None = None) -> str:
    """How long ago an ISO 8601 time was, coarsely: "40 s ago", "12 min ago", "3 h ago"."""
    then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    seconds = max(0, int(((now or datetime.now(timezone.utc)) - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


# --- runs push ----------------------------------------------------------------------------------


def add_runs(sub: Any) -> None:
    runs = sub.add_parser("runs", help="work with runs").add_subparsers(
        dest="runs_command", required=True, metavar="SUBCOMMAND"
    )
    p = runs.add_parser("push", help="store runs from JSON Lines (bulk, in chunks)")
    p.add_argument("file", help="one run payload per line, or - for stdin")
    p.add_argument("--rubric", help="rubric for runs that name none")
    p.add_argument(
        "--chunk", type=int, default=BULK_RUNS, help=f"runs per request (default {BULK_RUNS})"
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    _progress_flags(p)
    p.set_defaults(handler=push)


def push(client: Client, args: argparse.Namespace) -> int:
    if not 1 <= args.chunk <= 1000:
        raise io.UsageError("--chunk is between 1 and 1000")
    total = io.count_lines(args.file)
    bar = Bar(enabled(args.progress))
    created = existing = sent = 0
    with io.opened(args.file) as handle:
        for lines, chunk in _chunks(io.jsonl(handle, args.file), args.chunk):
            if args.rubric:
                chunk = [r if r.get("rubric") else {**r, "rubric": args.rubric} for r in chunk]
            try:
                answer = client.create_runs_bulk(chunk)
            except EvalsiteError as exc:
                bar.close()
                raise _with_lines(exc, lines, sent) from exc
            created, existing = created + answer["created"], existing + answer["existing"]
            sent += len(chunk)
            bar("pushing runs", sent, max(total or sent, sent))
    bar.close()
    summary = {"runs": sent, "created": created, "existing": existing}
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"pushed {sent} runs: {created} created, {existing} already stored")
    return 0


def _chunks(
    items: Iterator[tuple[int, dict[str, Any]]], size: int
) -> Iterator[tuple[list[int], list[dict[str, Any]]]]:
    lines: list[int] = []
    chunk: list[dict[str, Any]] = []
    weight = 0
    for number, run in items:
        cost = len(json.dumps(run, ensure_ascii=False).encode())
        if chunk and (len(chunk) >= size or weight + cost > BULK_BYTES):
            yield lines, chunk
            lines, chunk, weight = [], [], 0
        lines.append(number)
        chunk.append(run)
        weight += cost
    if chunk:
        yield lines, chunk


def _with_lines(exc: EvalsiteError, lines: list[int], stored: int) -> EvalsiteError:
    """The API's item errors as the input's line numbers, and which lines were stored."""
    note = f" (lines {lines[0]}-{lines[-1]}; the {stored} runs before them were stored)"
    return io.by_line(exc, lines, note)


# --- rescore ------------------------------------------------------------------------------------


def add_rescore(sub: Any) -> None:
    p = sub.add_parser("rescore", help="re-score runs of a rubric as a batch")
    p.add_argument("--rubric", required=True, help="rubric slug or id")
    p.add_argument("--runs", nargs="+", metavar="RUN_ID", help="these runs (else the filters)")
    p.add_argument("--version", type=int, help="runs whose current result is on this version")
    p.add_argument("--failed-only", action="store_true", help="runs whose result did not pass")
    p.add_argument("--criterion", dest="criterion_id", help="runs failing this criterion (c3)")
    p.add_argument("--since", help="runs created at or after (ISO date or time)")
    p.add_argument("--until", help="runs created before")
    p.add_argument(
        "--target-version", type=int, help="score against this version (default: current)"
    )
    p.add_argument("--judge", help="another judge model (litellm model string)")
    p.add_argument("--force", action="store_true", help="judge everything again, reuse nothing")
    p.add_argument("--webhook-url", help="called once, signed, when the batch ends")
    p.add_argument("--idempotency-key", help="retrying with the same key returns the same batch")
    p.add_argument("--dry-run", action="store_true", help="print the estimate, queue nothing")
    p.add_argument("--wait", action="store_true", help="wait for the batch to end")
    p.add_argument("--json", action="store_true", help="print the batch as JSON")
    _progress_flags(p)
    p.set_defaults(handler=rescore)


def rescore(client: Client, args: argparse.Namespace) -> int:
    options = {
        name: getattr(args, name)
        for name in ("runs", "version", "criterion_id", "since", "until", "target_version",
                     "judge", "webhook_url")
        if getattr(args, name) is not None
    } | {"failed_only": args.failed_only, "force": args.force}  # fmt: skip
    if args.dry_run:
        estimate = client.rescore_estimate(args.rubric, **options)
        print(json.dumps(estimate, indent=None if args.json else 2))
        return 0
    batch = client.rescore(args.rubric, idempotency_key=args.idempotency_key, **options)
    if args.wait:
        bar = Bar(enabled(args.progress))
        batch = client.wait_batch(
            batch["id"], on_progress=lambda b: bar("re-scoring", b["done"], b["total"])
        )
        bar.close()
    if args.json:
        print(json.dumps(batch))
    else:
        counts = batch["counts"]
        print(
            f"batch {batch['id']}: {batch['status']}, {batch['total']} evaluations "
            f"({counts['succeeded']} succeeded, {counts['failed']} failed, "
            f"{counts['queued'] + counts['running']} pending), progress {pct(batch['progress'])}"
        )
    for failure in batch["failures"][:10]:
        print(f"  failed: run {failure['run_id']}: {failure['error']}", file=sys.stderr)
    ended_badly = batch["counts"]["failed"] > 0 or batch["status"] == "cancelled"
    return 1 if args.wait and ended_badly else 0


# --- export -------------------------------------------------------------------------------------


def add_export(sub: Any) -> None:
    p = sub.add_parser("export", help="print runs as JSON Lines, newest first")
    p.add_argument("--rubric", help="rubric slug or id")
    p.add_argument("--version", type=int, help="version number of the current result")
    p.add_argument("--passed", choices=["true", "false"], help="passed or not")
    p.add_argument("--failing-criterion", help="runs whose verdict on this criterion fails (c2)")
    p.add_argument("--status", choices=["queued", "running", "succeeded", "failed", "cancelled"])
    p.add_argument("--agent", help="the agent's name")
    p.add_argument("--tool", help="runs that called this tool")
    p.add_argument("--since", help="created at or after (ISO date or time)")
    p.add_argument("--until", help="created before (a bare date includes that day)")
    p.add_argument("-q", "--query", help="text in external_id, task or output")
    p.add_argument("--limit", type=int, help="at most this many runs")
    p.add_argument(
        "--full", action="store_true", help="whole runs with evaluations (one request each)"
    )
    p.add_argument("-o", "--output", default="-", help="write to this file (default stdout)")
    p.set_defaults(handler=export)


def export(client: Client, args: argparse.Namespace) -> int:
    filters = {
        "rubric": args.rubric, "version": args.version, "passed": args.passed,
        "failing_criterion": args.failing_criterion, "status": args.status, "agent": args.agent,
        "tool": args.tool, "since": args.since, "until": args.until, "q": args.query,
    }  # fmt: skip
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")  # noqa: SIM115
    try:
        count = 0
        for summary in client.iter_runs(**{k: v for k, v in filters.items() if v is not None}):
            if args.limit is not None and count >= args.limit:
                break
            item: Any = client.get_run(summary["id"]) if args.full else summary
            out.write(json.dumps(item, ensure_ascii=False) + "\n")
            count += 1
    finally:
        if out is not sys.stdout:
            out.close()
    print(f"exported {count} runs", file=sys.stderr)
    return 0
