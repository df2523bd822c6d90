"""What a team can read about a failure: a fixed message with a ref for our bugs, bounded text
without tracebacks or server paths for everything else; the traceback goes to the log."""

from __future__ import annotations

import json
import logging
import re
import socket
import traceback
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import RequestFactory
from django.utils import timezone

from evalsite.api import on_unexpected
from judging.services.execute import evaluation_claim, evaluation_execute
from judging.services.rescore import RescoreScope, batch_create
from judging.services.rescore_webhook import WebhookFailed, batch_webhook_deliver
from judging.services.results import record_failure
from runs.models import Evaluation, RescoreBatch, Status
from tests.http_listener import Listener

ROOT = str(Path(__file__).resolve().parents[2])
INTERNAL = re.compile(
    r"internal error \(ref ([0-9a-f]{12})\); the operators' logs have the details"
)


def logged_with(caplog, ref: str) -> logging.LogRecord:
    (record,) = [r for r in caplog.records if ref in r.getMessage()]
    return record


def test_a_crash_of_ours_stores_a_ref_and_logs_the_traceback_under_it(
    fake_judge, make_rubric, make_run, caplog
):
    run = make_run(rubric=make_rubric(alignment_mode="user").slug)
    alignment = Evaluation.objects.get(run=run, kind="alignment")
    # A row our own code cannot read (weights that are not numbers) stands for any bug of ours.
    Evaluation.objects.filter(pk=alignment.pk).update(
        alignment_weights={"user": {"intent": f"{ROOT}/oops"}}
    )

    assert evaluation_execute(evaluation_id=str(alignment.pk)).status == "failed"

    alignment.refresh_from_db()
    found = INTERNAL.fullmatch(alignment.error)
    assert found is not None, alignment.error
    record = logged_with(caplog, found.group(1))
    assert record.levelno == logging.ERROR and record.exc_info is not None


def test_a_failure_message_is_stored_without_traceback_or_path_and_bounded(
    fake_judge, make_rubric, make_run
):
    evaluation = Evaluation.objects.get(run=make_run(rubric=make_rubric().slug))
    claimed, token, _ = evaluation_claim(evaluation_id=str(evaluation.pk))
    try:
        open(f"{ROOT}/no-such-dir/key.pem")  # noqa: SIM115 - raising is the point
    except OSError as exc:
        message = f"judge failed: {exc} " + "x" * 3000 + "\n" + traceback.format_exc()

    assert record_failure(claimed, token, message, []) is True

    evaluation.refresh_from_db()
    assert evaluation.status == Status.FAILED
    assert evaluation.error.startswith(
        "judge failed: [Errno 2] No such file or directory: '<path>'"
    )
    assert len(evaluation.error) <= 1000 and ROOT not in evaluation.error
    assert "Traceback" not in evaluation.error


def test_the_api_answers_an_unexpected_error_with_a_ref_only(caplog):
    request = RequestFactory().get("/api/runs")
    try:
        open(f"{ROOT}/settings/secret.key")  # noqa: SIM115 - raising is the point
    except OSError as exc:
        response = on_unexpected(request, exc)

    assert response.status_code == 500
    body = json.loads(response.content)
    found = INTERNAL.fullmatch(body["message"])
    assert found is not None, body
    assert body["extra"] == {"ref": found.group(1)}
    assert logged_with(caplog, found.group(1)).exc_info is not None


# --- Webhook deliveries -----------------------------------------------------------------------


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"


@pytest.fixture
def finished_batch(settings, fake_judge, team, make_rubric, make_run):
    settings.EVALSITE_WEBHOOK_ALLOW_PRIVATE = True  # the receivers are on this machine

    def make(url: str) -> RescoreBatch:
        run = make_run(output="Refund for order number 7, thanks")
        batch, _ = batch_create(
            team=team, rubric=make_rubric(), scope=RescoreScope(runs=(run.pk,)), webhook_url=url
        )
        RescoreBatch.objects.filter(pk=batch.pk).update(finished_at=timezone.now())
        return batch

    return make


def test_a_webhook_answering_an_error_is_recorded_by_its_status_alone(finished_batch):
    # A receiver whose reason phrase and body both carry text the team must not see.
    talker = Listener(
        status=500,
        reason="Secret Reason From " + ROOT,
        body=f"internal service data at {ROOT}/private".encode(),
    ).start()
    try:
        batch = finished_batch(talker.url + "/hook")
        with pytest.raises(WebhookFailed):
            batch_webhook_deliver(batch_id=batch.pk)
    finally:
        talker.stop()

    batch.refresh_from_db()
    assert batch.webhook_error == "HTTP 500 Internal Server Error"


def test_a_webhook_that_cannot_be_reached_is_recorded_by_the_kind_of_failure(
    finished_batch, caplog
):
    batch = finished_batch(closed_port_url())
    with pytest.raises(WebhookFailed):
        batch_webhook_deliver(batch_id=batch.pk)

    batch.refresh_from_db()
    found = re.fullmatch(
        r"could not connect to the receiver \(ref ([0-9a-f]{12})\)", batch.webhook_error
    )
    assert found is not None, batch.webhook_error
    assert "Errno" in logged_with(caplog, found.group(1)).getMessage()


# --- Rows stored before the cleaning --------------------------------------------------------------


def test_redact_errors_cleans_texts_stored_earlier_once(make_rubric, make_run, capsys):
    evaluation = Evaluation.objects.get(run=make_run(rubric=make_rubric().slug))
    legacy = f"internal error: OSError: [Errno 2] '{ROOT}/x.py'\nTraceback (most recent call last):"
    call = {"model": "m", "messages": [], "error": f"boom in {ROOT}/runs/x.py"}
    Evaluation.objects.filter(pk=evaluation.pk).update(error=legacy, calls=[call, {"error": None}])

    call_command("redact_errors")
    call_command("redact_errors")

    evaluation.refresh_from_db()
    assert evaluation.error == "internal error: OSError: [Errno 2] '<path>'"
    assert evaluation.calls == [call | {"error": "boom in <path>"}, {"error": None}]
    first, again = capsys.readouterr().out.splitlines()
    assert first.startswith("cleaned 1 evaluation(s)") and again.startswith("cleaned 0 ")
