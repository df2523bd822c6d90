"""The client's errors. Every failure of a call is an ``EvalsiteError`` carrying the API's own
message and, for a 422, the field it names; ``StillJudging`` and ``JudgingFailed`` are the two
outcomes of ``Client.score`` that are not a verdict."""

from __future__ import annotations

from typing import Any


class EvalsiteError(Exception):
    """A call the API refused or could not answer.

    ``status`` is the HTTP status (``None`` when the server could not be reached),
    ``message`` the API's message, ``field`` the field a 422 names (``input.messages[0].role``;
    the first one when several are wrong, all of them in ``errors``), ``extra`` the answer's
    ``extra`` object (``run_id`` of a 409, ``retry_after`` of a 429, ...).
    """

    def __init__(
        self,
        status: int | None,
        message: str,
        field: str | None = None,
        *,
        errors: list[dict[str, Any]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field
        self.errors = errors or []
        self.extra = extra or {}

    def __str__(self) -> str:
        where = f" ({self.field})" if self.field else ""
        status = f"{self.status}: " if self.status is not None else ""
        return f"{status}{self.message}{where}"

    @property
    def is_input_error(self) -> bool:
        """The request itself was wrong (a 4xx other than 429): retrying cannot help."""
        return self.status is not None and 400 <= self.status < 500 and self.status != 429


class ConfigurationError(EvalsiteError):
    """The client is missing its URL or API key."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(None, message, field)

    @property
    def is_input_error(self) -> bool:
        return True


class StillJudging(EvalsiteError):
    """``POST /api/score`` answered 202: its wait ran out while the judge was still working.
    The evaluations go on; ``evaluation_ids`` can be polled. Never a pass."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.evaluation_ids: list[str] = [str(e) for e in body.get("evaluation_ids", [])]
        self.evaluation_id = str(body.get("evaluation_id", ""))
        self.run_id = str(body.get("run_id", ""))
        self.judging_status = str(body.get("status", "queued"))
        ids = ", ".join(self.evaluation_ids)
        super().__init__(202, f"still judging ({self.judging_status}): evaluations {ids}")


class OverBudget(StillJudging):
    """``POST /api/score`` answered 202 ``over_budget``: the team's judge budget is reached,
    so the run waits and is judged when the budget allows (the next UTC day or month, or a
    raised budget). Never a pass; ``detail`` is the server's explanation."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(body)
        self.detail = str(body.get("detail", ""))
        ids = ", ".join(self.evaluation_ids)
        self.message = f"the team's judge budget is reached: evaluations {ids} wait for it"


class JudgingFailed(EvalsiteError):
    """The judge failed for good on an evaluation of the run (after its retries): there is no
    whole result, so neither a pass nor a fail. ``error`` is the evaluation's message."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.evaluation_ids = [str(e) for e in body.get("evaluation_ids", [])]
        self.run_id = str(body.get("run_id", ""))
        self.error = str(body.get("error") or "the judge failed")
        super().__init__(200, f"judging failed: {self.error}")


def field_name(loc: list[Any]) -> str:
    """``["body", "payload", "input", "messages", 0, "role"]`` -> ``input.messages[0].role``:
    the field as a person writes it, without where the API found it."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header"):
        location = parts.pop(0)
        if location == "body" and parts and parts[0] in ("payload", "body"):
            parts.pop(0)
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def error_from_answer(status: int, body: Any, fallback: str) -> EvalsiteError:
    """An EvalsiteError from one of the API's two error shapes (or whatever a proxy sent)."""
    if isinstance(body, dict) and isinstance(body.get("detail"), list):
        details = [d for d in body["detail"] if isinstance(d, dict)]
        errors = [
            {"field": field_name(d.get("loc", [])), "message": d.get("msg", "")} for d in details
        ]
        first = errors[0] if errors else {"field": None, "message": fallback}
        message = "; ".join(
            f"{e['field']}: {e['message']}" if e["field"] else e["message"] for e in errors
        )
        return EvalsiteError(status, message or fallback, first["field"] or None, errors=errors)
    if isinstance(body, dict) and "message" in body:
        extra = body.get("extra")
        extra = extra if isinstance(extra, dict) else {}
        items = extra.get("errors")
        items = items if isinstance(items, list) else []
        errors = [_bulk_item(e) for e in items if isinstance(e, dict)]
        field = errors[0]["field"] if errors else None
        return EvalsiteError(status, str(body["message"]), field, errors=errors, extra=extra)
    return EvalsiteError(status, fallback)


def _bulk_item(item: dict[str, Any]) -> dict[str, Any]:
    """A bulk item error ``{index, field, message}`` with its field as ``runs[3].output``."""
    index, field = item.get("index"), item.get("field")
    prefix = f"runs[{index}]" if index is not None else "runs"
    return {
        "index": index,
        "field": f"{prefix}.{field}" if field else prefix,
        "message": str(item.get("message", "")),
    }
