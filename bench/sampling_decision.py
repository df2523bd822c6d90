#!/usr/bin/env python
"""What the sampling decision adds to ingest, per run (judge_engine/sampling.py).

Ingest decides, for every run bound to a rubric, whether it is judged: a SHA-256 of team,
rubric and run key, then the filters. It reads only rows ingest has already loaded, so its
cost is CPU alone. Prints microseconds per decision without filters and with three filters
(parsed from the rubric's JSON each time, as ingest does per run), and the share sampled at
20 %, with the load average before and after.

    .venv/bin/python bench/sampling_decision.py [N]
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judge_engine.sampling import SampleFilters, sample_bucket, sample_decide  # noqa: E402

FILTERS = {"agents": ["bot-a"], "metadata_equals": {"env": "prod"}, "context_has": ["uid"]}
NONE = SampleFilters()


def decide_all(n: int, raw: dict | None) -> tuple[float, int]:
    team, rubric = uuid.uuid4(), uuid.uuid4()
    started, sampled = time.perf_counter(), 0
    for i in range(n):
        filters = SampleFilters.model_validate(raw) if raw else NONE
        bucket = sample_bucket(team, rubric, f"run-{i}")
        sampled += sample_decide(
            rate=20, filters=filters, bucket=bucket, agent="bot-a", metadata={"env": "prod"},
            request_context={"uid": 1},
        ).sampled  # fmt: skip
    return (time.perf_counter() - started) / n * 1e6, sampled


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    print(f"load average before: {os.getloadavg()}")
    for label, raw in (("no filters", None), ("three filters", FILTERS)):
        micros, sampled = decide_all(n, raw)
        print(f"{label}: {micros:.2f} µs per run, {sampled / n:.2%} of {n:,} sampled at 20 %")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
