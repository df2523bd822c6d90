"""Reading the CLI's inputs: one JSON document, or JSON Lines, from a file or stdin (``-``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from ..errors import EvalsiteError


class UsageError(Exception):
    """A wrong command line or input file: exit code 2, the message says what to change."""


@contextmanager
def opened(path: str) -> Iterator[TextIO]:
    if path == "-":
        yield sys.stdin
        return
    try:
        handle = open(path, encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    with handle:
        yield handle


def read_json(path: str) -> dict[str, Any]:
    with opened(path) as handle:
        try:
            value = json.load(handle)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}: not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise UsageError(f"{path}: expected a JSON object (a run payload)")
    return value


def jsonl(handle: TextIO, name: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line."""
    for number, line in enumerate(handle, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{name} line {number}: not JSON: {exc.msg}") from exc
        if not isinstance(value, dict):
            raise UsageError(f"{name} line {number}: expected a JSON object (a run payload)")
        yield number, value


def by_line(exc: EvalsiteError, lines: list[int], note: str = "") -> EvalsiteError:
    """The API's item errors (``runs[3].output``) named by the input's line numbers
    (``line 5 output``): ``lines[i]`` is the line of the i-th run sent."""
    errors: list[dict[str, Any]] = []
    for e in exc.errors:
        index, name = e.get("index"), str(e.get("field", ""))
        if not (isinstance(index, int) and 0 <= index < len(lines)):
            errors.append(e)  # not one run's error (a rubric, a whole request)
            continue
        rest = name.split(".", 1)[1] if "." in name else ""
        errors.append({"field": f"line {lines[index]} {rest}".strip(), "message": e["message"]})
    field = errors[0]["field"] if errors else exc.field
    return EvalsiteError(exc.status, exc.message + note, field, errors=errors, extra=exc.extra)


def count_lines(path: str) -> int | None:
    """Non-blank lines of a regular file (for a progress bar's total); None for stdin."""
    if path == "-":
        return None
    with opened(path) as handle:
        return sum(1 for line in handle if line.strip())


def rate(text: str) -> float:
    """``0.9``, ``90%`` -> 0.9; a fraction between 0 and 1 (an argparse type)."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a rate: {text!r} (write 0.9 or 90%)") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"a rate is between 0 and 1 (or 0% and 100%), not {text}")
    return value
