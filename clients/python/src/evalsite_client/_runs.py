"""Runs, evaluations, synchronous scoring, re-scoring and batches.

Writes here are made idempotent before they are sent, so a retry never stores twice: a run
without an ``external_id`` gets one (``client-<hex>``), a re-score without an
``Idempotency-Key`` gets one; the same key is sent on every attempt of that call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, cast

from ._base import BaseClient, body, new_key
from .errors import JudgingFailed, OverBudget, StillJudging
from .results import ScoreResult, score_result
from .types import (
    Batch,
    BatchPage,
    BulkResult,
    Estimate,
    Evaluation,
    Run,
    RunPage,
    RunSummary,
)

PENDING = ("queued", "running")
BATCH_ENDED = ("completed", "completed_with_failures", "cancelled")


def run_payload(
    run: dict[str, Any] | None = None,
    *,
    task: str | None = None,
    system: str | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A run payload: ``run`` (a payload dict) overlaid with the fields given. ``task`` and
    ``system`` make ``input.messages`` (a system and a user message) when ``input`` is not
    given; metadata is merged, not replaced."""
    payload = dict(run or {})
    metadata = {**payload.get("metadata", {}), **(fields.pop("metadata", None) or {})}
    payload.update(body(**fields))
    if metadata:
        payload["metadata"] = metadata
    if "input" not in payload and (task is not None or system is not None):
        messages = [{"role": "system", "content": system}] if system is not None else []
        if task is not None:
            messages.append({"role": "user", "content": task})
        payload["input"] = {"messages": messages}
    return payload


def keyed(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload with an ``external_id`` (a new one when it has none)."""
    return payload if payload.get("external_id") else {**payload, "external_id": new_key("client")}


class RunsMixin(BaseClient):
    # --- Runs -----------------------------------------------------------------------------------

    def create_run(self, run: dict[str, Any] | None = None, **fields: Any) -> Run:
        """Store a run and queue its evaluations. Fields: external_id, agent, rubric,
        alignment, input, output, request_context, metadata, expected_output (or task= and
        system= for the input messages). The same external_id again returns the stored run."""
        payload = keyed(run_payload(run, **fields))
        return cast(Run, self._json("runs_api_create_run", json=payload))

    def create_runs_bulk(self, runs: list[dict[str, Any]]) -> BulkResult:
        """Store up to 1,000 runs in one transaction, all or none (a 422 lists every bad item
        in ``EvalsiteError.errors`` with its field, e.g. ``runs[3].output``)."""
        payload = {"runs": [keyed(r) for r in runs]}
        return cast(BulkResult, self._json("runs_api_create_runs_bulk", json=payload))

    def list_runs(
        self, *, cursor: str | None = None, limit: int | None = None, **filters: Any
    ) -> RunPage:
        """One page, newest first. Filters: rubric, version, passed, failing_criterion,
        status, agent, tool, since, until, q."""
        params = body(cursor=cursor, limit=limit, **filters)
        return cast(RunPage, self._json("runs_api_list_runs", params=params))

    def iter_runs(self, **filters: Any) -> Iterator[RunSummary]:
        """Every run matching the filters, page after page."""
        return self._pages("runs_api_list_runs", None, body(limit=200, **filters))

    def get_run(self, run_id: str) -> Run:
        return cast(Run, self._json("runs_api_get_run", {"run_id": run_id}))

    def delete_run(self, run_id: str, *, force: bool = False) -> None:
        """Delete a run with its evaluations, verdicts and labels. A protected run (golden,
        labelled, an example) is a 409 naming why unless ``force`` (owners and API keys)."""
        params = {"force": "true"} if force else None
        self._request("runs_api_delete_run", {"run_id": run_id}, params=params)

    def export_runs(self, *, format: str = "jsonl", **filters: Any) -> str:
        """Every run matching the filters with its current (human-adjusted) verdicts and
        alignment, as CSV or JSON Lines text, streamed by the server."""
        params = body(format=format, **filters)
        return self._request("reviews_api_export_export_runs", params=params).text

    def get_evaluation(self, evaluation_id: str) -> Evaluation:
        path = {"evaluation_id": evaluation_id}
        return cast(Evaluation, self._json("runs_api_get_evaluation", path))

    def wait_evaluations(
        self, evaluation_ids: list[str], *, poll: float = 0.5, timeout: float | None = None
    ) -> list[Evaluation]:
        """The evaluations once none is queued or running (each ended one is fetched once)."""
        ended: dict[str, Evaluation] = {}
        for evaluation_id in evaluation_ids:
            ended[evaluation_id] = self._wait(
                lambda i=evaluation_id: self.get_evaluation(i),  # type: ignore[misc]
                lambda e: e["status"] not in PENDING,
                poll=poll,
                timeout=timeout,
                what=f"evaluation {evaluation_id}",
            )
        return [ended[i] for i in evaluation_ids]

    # --- Synchronous scoring --------------------------------------------------------------------

    def score(
        self,
        output: Any = None,
        *,
        rubric: str | None = None,
        criteria: str | list[dict[str, Any]] | None = None,
        timeout: float = 30.0,
        inline: bool | None = None,
        fresh: bool | None = None,
        run: dict[str, Any] | None = None,
        **fields: Any,
    ) -> ScoreResult:
        """Store a run, wait up to ``timeout`` seconds (at most 120) for its verdict, return it.

        ``criteria`` (text or a list) replace the rubric's; ``inline=True`` asks the web
        process that receives the call to judge it itself (no worker queue: what an agent
        loop wants; see docs/api.md); an ``external_id`` scored before answers its stored
        result (``ScoreResult.stored``, ``rubric_version``) unless ``fresh=True``, which
        judges that run again on the rubric's current version; fields are the run payload's
        (``task=``/``system=`` build the input). Raises ``StillJudging`` when the wait ran out
        (``OverBudget``, a kind of it, when the team's judge budget is reached)
        (the evaluations go on) and ``JudgingFailed`` when the judge failed for good: a
        ``ScoreResult`` is always a whole verdict, never a guess.
        """
        payload = keyed(run_payload(run, output=output, rubric=rubric, **fields))
        payload |= body(criteria=criteria, timeout=timeout, inline=inline, fresh=fresh)
        response = self._request("runs_api_score", json=payload, timeout=timeout + 30)
        answer = response.json()
        if answer.get("status") == "over_budget":
            raise OverBudget(answer)
        if response.status_code == 202 or answer.get("status") in PENDING:
            raise StillJudging(answer)
        if answer.get("status") != "succeeded":
            raise JudgingFailed(answer)
        return score_result(answer)

    # --- Re-scoring -----------------------------------------------------------------------------

    def rescore(self, rubric: str, *, idempotency_key: str | None = None, **options: Any) -> Batch:
        """Start a batch re-scoring runs of ``rubric``: ``runs`` (ids), else the filters
        ``version``, ``failed_only``, ``criterion_id``, ``since``, ``until``; options
        ``target_version``, ``judge``, ``force``, ``webhook_url``. A key is made when none is
        given, so a retried request returns the same batch."""
        return cast(Batch, self._rescore("rescore", None, rubric, idempotency_key, options))

    def rescore_estimate(self, rubric: str, **options: Any) -> Estimate:
        """What ``rescore`` would cost (judge calls, tokens, USD): nothing is queued."""
        answer = self._rescore("rescore", None, rubric, None, options | {"dry_run": True})
        return cast(Estimate, answer["estimate"])

    def rescore_run(
        self,
        run_id: str,
        *,
        rubric: str | None = None,
        idempotency_key: str | None = None,
        **options: Any,
    ) -> Batch:
        """Re-score one run (its own rubric unless ``rubric`` names another), a batch of one."""
        path = {"run_id": run_id}
        return cast(Batch, self._rescore("rescore_run", path, rubric, idempotency_key, options))

    def _rescore(
        self,
        operation: str,
        path: dict[str, Any] | None,
        rubric: str | None,
        key: str | None,
        options: dict[str, Any],
    ) -> Any:
        payload = body(rubric=rubric, **options)
        if "runs" in payload:
            payload["runs"] = [str(r) for r in payload["runs"]]
        headers = {"Idempotency-Key": key or new_key("client")}
        return self._json(operation, path, json=payload, headers=headers)

    def list_batches(
        self,
        *,
        status: str | None = None,
        rubric: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> BatchPage:
        params = body(status=status, rubric=rubric, cursor=cursor, limit=limit)
        return cast(BatchPage, self._json("list_batches", params=params))

    def get_batch(self, batch_id: str) -> Batch:
        return cast(Batch, self._json("get_batch", {"batch_id": batch_id}))

    def cancel_batch(self, batch_id: str) -> Batch:
        return cast(Batch, self._json("cancel_batch", {"batch_id": batch_id}))

    def wait_batch(
        self,
        batch_id: str,
        *,
        poll: float = 1.0,
        timeout: float | None = None,
        on_progress: Callable[[Batch], None] | None = None,
    ) -> Batch:
        """The batch once it ended (completed, with failures, or cancelled)."""
        return self._wait(
            lambda: self.get_batch(batch_id),
            lambda b: b["status"] in BATCH_ENDED,
            poll=poll,
            timeout=timeout,
            what=f"batch {batch_id}",
            on_progress=on_progress,
        )
