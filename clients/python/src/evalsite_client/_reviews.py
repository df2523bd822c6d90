"""Human review: overrides and their reverts, golden sets, agreement, exports, calibration."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, cast

from ._base import BaseClient, body
from .types import Agreement, Calibration, Golden, OverrideResult, RunReview


class ReviewsMixin(BaseClient):
    def create_override(
        self,
        run_id: str,
        criterion_id: str,
        satisfied: bool,
        *,
        note: str = "",
        rubric: str | None = None,
    ) -> OverrideResult:
        """A reviewer's verdict on one criterion of the run's current result: agreeing
        confirms the judge, disagreeing overrides it (and needs a ``note``)."""
        payload = body(criterion_id=criterion_id, satisfied=satisfied, note=note, rubric=rubric)
        path = {"run_id": run_id}
        return cast(OverrideResult, self._json("reviews_api_create_override", path, json=payload))

    def get_review(self, run_id: str, *, rubric: str | None = None) -> RunReview:
        """The run's judge and human-adjusted results, verdicts and review history."""
        path, params = {"run_id": run_id}, body(rubric=rubric)
        return cast(RunReview, self._json("reviews_api_list_overrides", path, params=params))

    def revert_override(self, run_id: str, override_id: str, *, note: str = "") -> OverrideResult:
        path = {"run_id": run_id, "override_id": override_id}
        answer = self._json("reviews_api_revert_override", path, json={"note": note})
        return cast(OverrideResult, answer)

    def create_alignment_override(
        self, run_id: str, perspective: str, dimension: str, score: float, *, note: str = ""
    ) -> OverrideResult:
        payload = {"perspective": perspective, "dimension": dimension, "score": score}
        path = {"run_id": run_id}
        answer = self._json(
            "reviews_api_create_alignment_override", path, json=payload | {"note": note}
        )
        return cast(OverrideResult, answer)

    def revert_alignment_override(
        self, run_id: str, override_id: str, *, note: str = ""
    ) -> OverrideResult:
        path = {"run_id": run_id, "override_id": override_id}
        answer = self._json("reviews_api_revert_alignment_override", path, json={"note": note})
        return cast(OverrideResult, answer)

    def mark_golden(self, run_id: str, golden: bool = True, *, rubric: str | None = None) -> Golden:
        """Add a fully reviewed run to its rubric's golden set (``golden=False`` takes it out)."""
        payload = body(golden=golden, rubric=rubric)
        return cast(Golden, self._json("reviews_api_mark_golden", {"run_id": run_id}, json=payload))

    def get_agreement(self, rubric: str, *, version: int | None = None) -> Agreement:
        """Judge–human agreement per criterion of a version (default: the current one)."""
        path, params = {"rubric": rubric}, body(version=version)
        return cast(Agreement, self._json("reviews_api_agreement", path, params=params))

    def export_reviews_csv(self, rubric: str) -> str:
        return self._request("reviews_api_export_csv", {"rubric": rubric}).text

    def export_reviews_jsonl(self, rubric: str) -> list[dict[str, Any]]:
        text = self._request("reviews_api_export_jsonl", {"rubric": rubric}).text
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def start_golden_run(
        self,
        rubric: str,
        *,
        version: int | None = None,
        criteria: str | list[dict[str, Any]] | None = None,
        judge: str | None = None,
    ) -> Calibration:
        """Score the rubric's golden set with a stored ``version`` or unsaved ``criteria``
        and compare with the human labels; poll with ``get_calibration``/``wait_calibration``."""
        payload = body(version=version, criteria=criteria, judge=judge)
        path = {"rubric": rubric}
        return cast(Calibration, self._json("reviews_api_start_golden_run", path, json=payload))

    def start_consistency_check(
        self,
        rubric: str,
        *,
        version: int | None = None,
        runs: list[str] | None = None,
        sample: int | None = None,
        repeats: int | None = None,
        judge: str | None = None,
    ) -> Calibration:
        """Judge a sample of runs ``repeats`` more times and report how often verdicts flip."""
        payload = body(version=version, runs=runs, sample=sample, repeats=repeats, judge=judge)
        path = {"rubric": rubric}
        answer = self._json("reviews_api_start_consistency_check", path, json=payload)
        return cast(Calibration, answer)

    def get_calibration(self, calibration_id: str) -> Calibration:
        path = {"calibration_id": calibration_id}
        return cast(Calibration, self._json("reviews_api_get_calibration", path))

    def wait_calibration(
        self,
        calibration_id: str,
        *,
        poll: float = 1.0,
        timeout: float | None = None,
        on_progress: Callable[[Calibration], None] | None = None,
    ) -> Calibration:
        """The calibration once every judgement it asked for ended.

        Read once more after ``done`` was seen: the server computes a report's figures before
        its progress, so the answer that first says ``done`` may hold figures from a moment
        before the last judgement ended; any answer after it is whole."""
        self._wait(
            lambda: self.get_calibration(calibration_id),
            lambda c: c["progress"]["done"],
            poll=poll,
            timeout=timeout,
            what=f"calibration {calibration_id}",
            on_progress=on_progress,
        )
        return self.get_calibration(calibration_id)
