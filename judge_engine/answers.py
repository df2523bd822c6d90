"""Reading a judge's JSON answer, and what to tell it when the answer is unusable."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n?(.*?)\n?[ \t]*```$", re.DOTALL)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"the answer contains {name}, which is not a JSON number")


def parse_json(text: str) -> Any:
    """The JSON value in a judge's answer, tolerating a ```json fence around it."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body:
        raise ValueError("the answer was empty")
    try:
        return json.loads(body, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"the answer is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from exc


def describe_problem(exc: ValueError) -> str:
    """A one-line account of what was wrong with an answer, for the judge and for people."""
    if isinstance(exc, ValidationError):
        parts = []
        for err in exc.errors()[:5]:
            where = ".".join(str(p) for p in err["loc"]) or "the answer"
            parts.append(f"{where}: {err['msg']}")
        more = f" (and {exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
        return "; ".join(parts) + more
    return str(exc)


def repair_request(problem: str) -> dict[str, str]:
    return {
        "role": "user",
        "content": (
            f"That answer cannot be used: {problem}. Reply again with only the JSON object, "
            "following the required JSON schema exactly, and nothing before or after it."
        ),
    }


def with_schema_in_prompt(messages: list[dict], schema: dict) -> list[dict]:
    """For judges without json_schema support: the schema goes into the system message."""
    note = (
        "Answer with a single JSON object, and nothing else, that validates against this "
        f"JSON Schema:\n{json.dumps(schema, separators=(',', ':'))}"
    )
    if messages and messages[0].get("role") == "system":
        first = {**messages[0], "content": f"{messages[0]['content']}\n\n{note}"}
        return [first, *messages[1:]]
    return [{"role": "system", "content": note}, *messages]
