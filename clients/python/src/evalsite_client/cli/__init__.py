"""``evalsite``: the command line of the evalsite client.

Exit codes: 0 ok; 1 a failed result (a run that did not pass, a gate below its threshold,
evaluations that failed); 2 a usage error or input the API refused (its message and field are
printed); 3 evalsite could not answer (unreachable, 5xx after retries, still judging); 130
interrupted; 141 stdout's reader went away (``evalsite export | head``), quietly, the status
of a Unix tool ended by SIGPIPE.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from .._base import __version__
from ..client import Client
from ..errors import EvalsiteError, JudgingFailed, OverBudget, StillJudging
from . import commands, gate
from .io import UsageError

OK, FAILED, USAGE, UNAVAILABLE = 0, 1, 2, 3
INTERRUPTED, READER_GONE = 130, 141  # 128 + SIGINT, 128 + SIGPIPE, as a shell reports them


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="evalsite",
        description="Score agent runs with evalsite rubrics, push and export runs, re-score, "
        "and gate CI on a rubric. Configured by EVALSITE_URL and EVALSITE_API_KEY.",
        epilog="Exit codes: 0 ok, 1 failed result or gate, 2 usage or input error, "
        "3 evalsite unavailable or still judging.",
    )
    p.add_argument("--version", action="version", version=f"evalsite {__version__}")
    p.add_argument("--url", help="evalsite URL (default: $EVALSITE_URL)")
    p.add_argument("--api-key", help="team API key (default: $EVALSITE_API_KEY)")
    p.add_argument("--retries", type=int, default=4, help="retries on 429/5xx (default 4)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_score(sub)
    commands.add_runs(sub)
    commands.add_rescore(sub)
    commands.add_export(sub)
    gate.add_gate(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help/--version (0) or a usage error (2)
        return int(exc.code or 0)
    try:
        with Client(args.url, args.api_key, retries=args.retries, on_retry=_say_retry) as client:
            code = int(args.handler(client, args))
            sys.stdout.flush()  # a reader gone before the last buffered lines shows here
            return code
    except BrokenPipeError:
        return _reader_gone()
    except UsageError as exc:
        return _fail(USAGE, f"error: {exc}")
    except OverBudget as exc:  # the server's "Waiting for budget — resumes <when>: ..."
        return _fail(UNAVAILABLE, exc.detail or exc.message)
    except StillJudging as exc:
        return _fail(
            UNAVAILABLE, f"still judging (not a pass): evaluations {', '.join(exc.evaluation_ids)}"
        )
    except JudgingFailed as exc:
        return _fail(FAILED, f"judging failed: {exc.error}")
    except EvalsiteError as exc:
        return _fail(USAGE if exc.is_input_error else UNAVAILABLE, *_describe(exc))
    except KeyboardInterrupt:
        return _fail(INTERRUPTED, "interrupted")


def _describe(exc: EvalsiteError) -> list[str]:
    """The API's message, then one line per field it names (a 422's message is its fields)."""
    status = f" ({exc.status})" if exc.status else ""
    fields: list[Any] = exc.errors or ([{"field": exc.field, "message": ""}] if exc.field else [])
    joined = "; ".join(f"{e['field']}: {e['message']}" for e in fields)
    message = "invalid input" if fields and exc.message == joined else exc.message
    lines = [f"error{status}: {message}"]
    lines += [f"  field {e['field']}: {e['message']}".rstrip(": ") for e in fields[:20]]
    if len(fields) > 20:
        lines.append(f"  ... and {len(fields) - 20} more")
    return lines


def _fail(code: int, *lines: str) -> int:
    for line in lines:
        print(line, file=sys.stderr)
    return code


def _reader_gone() -> int:
    """stdout's reader closed it early: stop without a word. stdout now points at /dev/null,
    so the interpreter's last flush of what is still buffered cannot fail again on the way out."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # a stdout without a file descriptor: nothing to flush
        pass
    return READER_GONE


def _say_retry(attempt: int, delay: float, reason: str) -> None:
    print(f"evalsite: {reason}, retry {attempt} in {delay:.1f}s", file=sys.stderr)


def run() -> None:
    """The console script."""
    sys.exit(main())
