"""A batch's webhook: called once when the batch ends, signed, retried after a failure."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone

from evalsite.outbound import Purpose, outbound_refusal
from judging.services.rescore import RescoreScope, batch_create
from judging.services.rescore_webhook import webhook_signature, webhook_verify
from runs.models import RescoreBatch
from teams.services import team_webhook_secret_rotate
from tests.conftest import wait_for

pytestmark = pytest.mark.worker


class Receiver:
    """An HTTP endpoint answering the given statuses in turn (then 200), recording requests."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = list(statuses)
        self.requests: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), body))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made: list[Receiver] = []

    def make(statuses: list[int]) -> Receiver:
        made.append(Receiver(statuses))
        return made[-1]

    yield make
    for r in made:
        r.close()


def test_a_finished_batch_calls_its_webhook_signed_once_and_retries_after_a_failure(
    worker, make_rubric, make_run, team, receiver
):
    hook = receiver([500])
    secret = team_webhook_secret_rotate(team=team)  # what the owner is shown, once
    rubric = make_rubric()
    run = make_run(output="Refund for order number 7, thanks")  # no rubric: nothing pending

    batch, _ = batch_create(
        team=team, rubric=rubric, scope=RescoreScope(runs=(run.pk,)), webhook_url=hook.url
    )
    wait_for(
        lambda: RescoreBatch.objects.filter(pk=batch.pk, webhook_delivered_at__isnull=False).exists(),
        timeout=60, message="the webhook to be delivered",
    )  # fmt: skip

    batch.refresh_from_db()
    assert len(hook.requests) == 2 and batch.webhook_attempts == 2 and batch.webhook_error == ""
    (first_headers, first_body), (headers, body) = hook.requests
    assert headers["X-Evalsite-Delivery"] == first_headers["X-Evalsite-Delivery"] == str(batch.pk)
    assert webhook_verify(secret=secret, body=body, header=headers["X-Evalsite-Signature"])
    assert not webhook_verify(
        secret="not-the-secret", body=body, header=headers["X-Evalsite-Signature"]
    )
    payload = json.loads(body)
    assert payload["event"] == "batch.finished"
    assert payload["batch"]["id"] == str(batch.pk) and payload["batch"]["status"] == "completed"
    assert payload["batch"]["counts"]["succeeded"] == 1


def test_a_signature_covers_the_body_and_its_timestamp():
    header = webhook_signature(secret="s3cret", body=b'{"a":1}', timestamp=1_700_000_000)

    assert header.startswith("t=1700000000,v1=")
    assert not webhook_verify(secret="s3cret", body=b'{"a":2}', header=header)
    assert not webhook_verify(secret="s3cret", body=b'{"a":1}', header=header)  # too old
    assert not webhook_verify(secret="s3cret", body=b'{"a":1}', header="garbage")


# Which addresses are refused, at every entry point and on delivery: tests/test_outbound.py.
def test_a_public_webhook_is_allowed_and_a_private_one_can_be_allowed(settings):
    settings.EVALSITE_WEBHOOK_ALLOW_PRIVATE = False
    assert outbound_refusal("https://93.184.216.34/hook", purpose=Purpose.WEBHOOK) is None
    assert outbound_refusal("http://127.0.0.1/hook", purpose=Purpose.WEBHOOK) is not None
    settings.EVALSITE_WEBHOOK_ALLOW_PRIVATE = True
    assert outbound_refusal("http://127.0.0.1/hook", purpose=Purpose.WEBHOOK) is None


def test_a_batch_with_a_private_webhook_is_refused_naming_the_field(
    settings, db, team, make_rubric, make_run, fake_judge
):
    from judging.services.rescore import RescoreValidationError

    settings.EVALSITE_WEBHOOK_ALLOW_PRIVATE = False
    rubric = make_rubric()
    run = make_run(output="x")
    with pytest.raises(RescoreValidationError) as caught:
        batch_create(
            team=team,
            rubric=rubric,
            scope=RescoreScope(runs=(run.pk,)),
            webhook_url="http://169.254.169.254/latest",
        )
    assert "webhook_url" in caught.value.errors


def test_every_delivery_checks_the_address_again(
    settings, db, team, make_rubric, make_run, fake_judge
):
    from judging.services.rescore_webhook import batch_webhook_deliver

    rubric = make_rubric()
    run = make_run(output="Refund for order number 7, thanks")
    batch, _ = batch_create(
        team=team, rubric=rubric, scope=RescoreScope(runs=(run.pk,)),
        webhook_url="http://127.0.0.1:9/hook",  # the guard was off when it was created
    )  # fmt: skip
    RescoreBatch.objects.filter(pk=batch.pk).update(finished_at=timezone.now())
    settings.EVALSITE_WEBHOOK_ALLOW_PRIVATE = False

    assert batch_webhook_deliver(batch_id=batch.pk) is False
    batch.refresh_from_db()
    assert batch.webhook_delivered_at is None and "loopback" in batch.webhook_error
