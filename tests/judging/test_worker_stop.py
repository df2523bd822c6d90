"""SIGTERM stops a worker within EVALSITE_WORKER_STOP_SECONDS, even when its shutdown hangs."""

from __future__ import annotations

import signal
import time

import pytest

from judging.worker_watch import EXIT_STALLED
from tests.conftest import wait_for

pytestmark = pytest.mark.worker


def test_sigterm_stops_a_worker_whose_judge_call_hangs_within_the_stop_deadline(
    start_worker, fake_judge, make_rubric, make_run
):
    worker = start_worker(concurrency=2, EVALSITE_WORKER_STOP_SECONDS="2")
    # The fake judge holds this call for an hour; Celery's warm shutdown waits for the task.
    make_run(rubric=make_rubric().slug, output="[[judge:timeout]] thanks")
    wait_for(lambda: fake_judge.stats()["requests"] >= 1, timeout=20, message="the judge call")

    worker.proc.send_signal(signal.SIGTERM)
    asked = time.monotonic()
    wait_for(lambda: worker.proc.poll() is not None, timeout=15, message="the worker to exit")
    print(f"exited {time.monotonic() - asked:.1f} s after SIGTERM")
    assert worker.proc.returncode == EXIT_STALLED
    assert "did not stop within EVALSITE_WORKER_STOP_SECONDS" in worker.log.read_text()
