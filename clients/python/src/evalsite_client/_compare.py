"""Comparisons of two rubric versions (or judges) on the same runs, drafts, and the
publishing gate. A comparison without an ``Idempotency-Key`` gets one, as a re-score does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._base import BaseClient, body, new_key


class CompareMixin(BaseClient):
    def create_comparison(
        self,
        rubric: str,
        b: dict[str, Any],
        *,
        a: dict[str, Any] | None = None,
        sample: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Judge side ``b`` (``{"version"}``, ``{"judge"}`` or ``{"draft": {"criteria", ...}}``)
        and side ``a`` (default: the current version) on the same ``sample`` (default: the 50
        newest runs; ``{"kind": "runs", "runs": [...]}``, ``"golden"``, ``"labelled"``, ...).
        Answers the report (202); poll with ``get_comparison``/``wait_comparison``."""
        payload = body(rubric=rubric, a=a, b=b, sample=sample)
        headers = {"Idempotency-Key": idempotency_key or new_key("client")}
        answer: dict[str, Any] = self._json("comparison_create", json=payload, headers=headers)
        return answer

    def comparison_estimate(
        self,
        rubric: str,
        b: dict[str, Any],
        *,
        a: dict[str, Any] | None = None,
        sample: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """What a comparison would cost on each side (``{"a", "b", "total"}``): nothing is
        queued."""
        payload = body(rubric=rubric, a=a, b=b, sample=sample, dry_run=True)
        headers = {"Idempotency-Key": new_key("client")}
        answer = self._json("comparison_create", json=payload, headers=headers)
        estimate: dict[str, Any] = answer["estimate"]
        return estimate

    def get_comparison(self, comparison_id: str) -> dict[str, Any]:
        """The report: per-criterion flips, pass rates and agreement with human labels on both
        sides, run-level flips, progress and cost."""
        answer: dict[str, Any] = self._json("comparison_get", {"comparison_id": comparison_id})
        return answer

    def wait_comparison(
        self,
        comparison_id: str,
        *,
        poll: float = 1.0,
        timeout: float | None = None,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """The report once both sides were judged (read once more after ``done`` was seen,
        as ``wait_calibration`` does, so its figures are whole)."""
        self._wait(
            lambda: self.get_comparison(comparison_id),
            lambda report: bool(report["done"]),
            poll=poll,
            timeout=timeout,
            what=f"comparison {comparison_id}",
            on_progress=on_progress,
        )
        return self.get_comparison(comparison_id)

    def export_comparison(self, comparison_id: str, *, format: str = "csv") -> str:
        """One row per run and criterion (``csv`` or ``jsonl``), as text."""
        path, params = {"comparison_id": comparison_id}, {"format": format}
        return self._request("comparison_export", path, params=params).text

    def create_draft(
        self, rubric: str, criteria: str | list[dict[str, Any]], **fields: Any
    ) -> dict[str, Any]:
        """Save criteria as a draft version (not published). Fields: judge_view,
        run_token_budget, instructions, note. The same draft again returns the first one."""
        payload = {"criteria": criteria} | fields
        answer: dict[str, Any] = self._json(
            "rubric_draft_create", {"rubric_ref": rubric}, json=payload
        )
        return answer

    def set_gate(
        self,
        rubric: str,
        *,
        min_agreement: float | None = None,
        min_kappa: float | None = None,
        max_drop: float | None = None,
    ) -> dict[str, Any]:
        """The rubric's publishing gate (all None: no gate)."""
        payload = {"min_agreement": min_agreement, "min_kappa": min_kappa, "max_drop": max_drop}
        answer: dict[str, Any] = self._json("rubric_gate_set", {"rubric_ref": rubric}, json=payload)
        return answer

    def publish_version(
        self, rubric: str, number: int, *, override_reason: str | None = None
    ) -> dict[str, Any]:
        """Publish a draft: ``{"state": "published"}`` (200), or ``"checking"`` (202) while a
        gate judges it; call again for the outcome. A draft that failed its gate raises
        ``EvalsiteError`` 409 with the report in ``extra["comparison"]``."""
        path = {"rubric_ref": rubric, "number": number}
        payload = body(override_reason=override_reason)
        answer: dict[str, Any] = self._json("rubric_version_publish", path, json=payload)
        return answer
