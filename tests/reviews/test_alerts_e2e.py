"""Alert webhooks through a real Celery worker and broker: a refused delivery is retried with
backoff and every attempt logged; a receiver that is down never holds up judging."""

from __future__ import annotations

import socket

import pytest

from reviews.models import AlertDelivery
from reviews.services.alerts import alert_rule_create, alerts_evaluate
from runs.models import Evaluation, Status
from tests.conftest import FAKE_MODEL, wait_for
from tests.http_listener import Listener
from tests.reviews.conftest import FAILING

pytestmark = pytest.mark.worker


def _env(fake_judge, **extra: str) -> dict[str, str]:
    return {
        "EVALSITE_JUDGE_MODEL": FAKE_MODEL,
        "EVALSITE_JUDGE_API_BASE": fake_judge.url,
        "EVALSITE_JUDGE_API_KEY": "fake-key",
        "EVALSITE_WEBHOOK_ALLOW_PRIVATE": "1",
        "EVALSITE_WEBHOOK_BACKOFF": "1.5",
        **extra,
    }


def _judged(run) -> bool:
    return Evaluation.objects.filter(run=run, status=Status.SUCCEEDED).exists()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once it is closed


def test_a_refused_delivery_is_retried_with_backoff_and_each_attempt_is_logged(
    start_worker, transactional_db, fake_judge, team, rubric, make_run, settings
):
    settings.EVALSITE_WEBHOOK_ALLOW_PRIVATE = True
    listener = Listener().start()
    listener.script.append((500, {}, b"down for a moment"))
    try:
        start_worker(concurrency=2, **_env(fake_judge))
        alert_rule_create(
            team=team, kind="criterion_failure_rate", rubric=rubric.slug, criterion_key="c2",
            threshold=50, webhook_url=f"{listener.url}/hook",
        )  # fmt: skip
        run = make_run(rubric=rubric.slug, output=FAILING)
        wait_for(lambda: _judged(run), timeout=60, message="the run judged by the worker")

        assert alerts_evaluate().fired == 1  # the delivery is queued when this commits

        log = wait_for(
            lambda: (rows := list(AlertDelivery.objects.order_by("attempt"))) and rows[-1].ok
            and rows,
            timeout=60, message="the delivery to succeed on a retry",
        )  # fmt: skip
    finally:
        listener.stop()
    assert [(d.attempt, d.status_code, d.ok) for d in log] == [(1, 500, False), (2, 200, True)]
    assert [s.headers["x-evalsite-delivery"] for s in listener.seen] == [
        f"{log[0].alert_id}.fired"
    ] * 2


def test_a_webhook_that_is_down_is_retried_and_logged_while_runs_are_still_judged(
    start_worker, transactional_db, fake_judge, team, rubric, make_run, settings
):
    settings.EVALSITE_WEBHOOK_ALLOW_PRIVATE = True
    start_worker(concurrency=1, **_env(fake_judge, EVALSITE_WEBHOOK_MAX_RETRIES="2"))
    alert_rule_create(
        team=team, kind="criterion_failure_rate", rubric=rubric.slug, criterion_key="c2",
        threshold=50, webhook_url=f"http://127.0.0.1:{_closed_port()}/hook",
    )  # fmt: skip
    run = make_run(rubric=rubric.slug, output=FAILING)
    wait_for(lambda: _judged(run), timeout=60, message="the run judged")
    alerts_evaluate()

    later = make_run(rubric=rubric.slug)
    wait_for(lambda: _judged(later), timeout=60, message="a later run judged meanwhile")
    failed = wait_for(
        lambda: AlertDelivery.objects.count() == 3 and list(AlertDelivery.objects.all()),
        timeout=60, message="the first attempt and its two retries logged",
    )  # fmt: skip

    assert all(not d.ok and "could not connect" in d.error for d in failed)
    assert sorted(d.attempt for d in failed) == [1, 2, 3]
