"""The Python client's retries and errors against a local listener (tests/http_listener.py)
standing in for evalsite: 429/502/503/504 and dropped connections are retried honouring
Retry-After, a retried write carries the same idempotency key, errors carry the API's message
and field. No database: these are the client's own rules."""

from __future__ import annotations

import json
import socket
from email.utils import formatdate

import pytest
from evalsite_client import Client, ConfigurationError, EvalsiteError
from evalsite_client._http import retry_after_seconds
from evalsite_client.gate import CriterionRate, GateReport

from tests.http_listener import Listener

RUN = {"id": "r1", "external_id": "x", "status": "queued", "evaluations": []}
BATCH = {"id": "b1", "status": "queued"}


def answer(status: int, body: object, **headers: str) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json", **headers}, json.dumps(body).encode()


@pytest.fixture
def listener():
    server = Listener(status=201, body=json.dumps(RUN).encode()).start()
    yield server
    server.stop()


@pytest.fixture
def waits():
    return []


@pytest.fixture
def client(listener, waits):
    def on_retry(attempt: int, delay: float, reason: str) -> None:
        waits.append((attempt, round(delay, 2), reason))

    with Client(listener.url, "es_test", backoff=0.01, retries=3, on_retry=on_retry) as c:
        yield c


def sent(listener: Listener) -> list[dict]:
    return [json.loads(s.body) for s in listener.seen]


def test_a_429_is_retried_after_its_retry_after_and_the_run_keeps_one_external_id(
    listener, client, waits
):
    listener.script = [
        answer(429, {"message": "Too many requests", "extra": {}}, **{"Retry-After": "1"})
    ]

    run = client.create_run(output="hello", task="hi")

    assert run["id"] == "r1"
    assert [(s.method, s.path) for s in listener.seen] == [("POST", "/api/runs")] * 2
    assert waits == [(1, 1.0, "HTTP 429")]
    first, second = sent(listener)
    assert first["external_id"].startswith("client-") and first == second
    assert first["input"] == {"messages": [{"role": "user", "content": "hi"}]}
    assert listener.seen[0].headers["authorization"] == "Bearer es_test"


def test_a_retry_after_date_is_read_as_seconds_from_now():
    now = 1_700_000_000.0

    assert retry_after_seconds(formatdate(now + 7, usegmt=True), now=now) == 7.0
    assert retry_after_seconds("3", now=now) == 3.0
    assert retry_after_seconds(formatdate(now - 60, usegmt=True), now=now) == 0.0
    assert retry_after_seconds("soon", now=now) is None


def test_502_503_and_504_are_retried_with_growing_backoff(listener, client, waits):
    listener.status, listener.body = 200, json.dumps(RUN).encode()
    listener.script = [answer(s, {"message": "proxy"}) for s in (502, 503, 504)]

    assert client.get_run("r1")["id"] == "r1"

    assert len(listener.seen) == 4
    assert [w[2] for w in waits] == ["HTTP 502", "HTTP 503", "HTTP 504"]
    delays = [w[1] for w in waits]
    assert 0.005 <= delays[0] <= 0.01 and 0.02 <= delays[2] <= 0.04  # 0.01 * 2**n, jittered


def test_when_retries_run_out_the_apis_own_message_is_raised(listener, client):
    listener.status = 503
    listener.body = json.dumps({"message": "evalsite is restarting", "extra": {}}).encode()

    with pytest.raises(EvalsiteError) as raised:
        client.get_run("r1")

    assert raised.value.status == 503 and raised.value.message == "evalsite is restarting"
    assert len(listener.seen) == 4  # the first attempt and three retries


def test_a_500_is_not_retried(listener, client):
    listener.status = 500
    listener.body = json.dumps(
        {"message": "internal error (ref abc)", "extra": {"ref": "abc"}}
    ).encode()

    with pytest.raises(EvalsiteError) as raised:
        client.get_run("r1")

    assert (raised.value.status, raised.value.extra) == (500, {"ref": "abc"})
    assert len(listener.seen) == 1


def test_a_write_without_a_key_is_not_sent_again_after_a_503_but_is_after_a_429(listener, client):
    listener.script = [answer(503, {"message": "upstream"})]
    with pytest.raises(EvalsiteError):
        client.start_golden_run("support")
    assert len(listener.seen) == 1  # the first attempt may have started a calibration

    listener.seen.clear()
    listener.status, listener.body = 202, json.dumps({"id": "cal"}).encode()
    listener.script = [answer(429, {"message": "slow"}, **{"Retry-After": "0"})]
    assert client.start_golden_run("support")["id"] == "cal"
    assert len(listener.seen) == 2  # a 429 stored nothing


def test_a_rescore_gets_an_idempotency_key_sent_on_every_attempt(listener, client):
    listener.status, listener.body = 202, json.dumps(BATCH).encode()
    listener.script = [answer(503, {"message": "upstream"})]

    client.rescore("support", failed_only=True)
    client.rescore("support", idempotency_key="nightly-1")

    keys = [s.headers["idempotency-key"] for s in listener.seen]
    assert keys[0] == keys[1] and keys[0].startswith("client-")
    assert keys[2] == "nightly-1"
    assert sent(listener)[0] == {"rubric": "support", "failed_only": True}


def test_bulk_runs_each_get_an_external_id_unless_they_have_one(listener, client):
    listener.body = json.dumps({"created": 2, "existing": 0, "items": []}).encode()

    client.create_runs_bulk([{"output": "a"}, {"output": "b", "external_id": "mine"}])

    runs = sent(listener)[0]["runs"]
    assert runs[0]["external_id"].startswith("client-") and runs[1]["external_id"] == "mine"


def test_an_unreachable_server_is_retried_then_reported_without_a_status(waits):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there

    def on_retry(*args):
        waits.append(args)

    client = Client(f"http://127.0.0.1:{port}", "k", backoff=0.01, retries=2, on_retry=on_retry)
    with client, pytest.raises(EvalsiteError) as raised:
        client.list_rubrics()

    assert raised.value.status is None and "cannot reach evalsite" in raised.value.message
    assert len(waits) == 2 and "ConnectError" in waits[0][2]


def test_a_422_names_the_field_as_a_person_writes_it(listener, client):
    detail = [
        {
            "loc": ["body", "payload", "input", "messages", 0, "role"],
            "msg": "bad role",
            "type": "x",
        },
        {"loc": ["body", "payload", "rubric"], "msg": "no rubric 'x' in this team", "type": "x"},
    ]
    listener.status, listener.body = 422, json.dumps({"detail": detail}).encode()

    with pytest.raises(EvalsiteError) as raised:
        client.create_run(output="x", rubric="x")

    error = raised.value
    assert (error.status, error.field) == (422, "input.messages[0].role")
    assert [e["field"] for e in error.errors] == ["input.messages[0].role", "rubric"]
    assert "rubric: no rubric 'x' in this team" in error.message
    assert error.is_input_error and len(listener.seen) == 1


def test_a_bulk_422_names_each_items_field(listener, client):
    errors = [{"index": 1, "field": "output[0]", "message": "a message needs a role"}]
    body = {"message": "1 of 2 runs are invalid; nothing was stored", "extra": {"errors": errors}}
    listener.status, listener.body = 422, json.dumps(body).encode()

    with pytest.raises(EvalsiteError) as raised:
        client.create_runs_bulk([{"output": "a"}, {"output": [{}]}])

    assert raised.value.field == "runs[1].output[0]"
    assert raised.value.message == "1 of 2 runs are invalid; nothing was stored"


def test_the_url_and_key_come_from_the_environment_or_the_error_names_them(monkeypatch):
    monkeypatch.delenv("EVALSITE_URL", raising=False)
    monkeypatch.delenv("EVALSITE_API_KEY", raising=False)
    with pytest.raises(ConfigurationError) as raised:
        Client()
    assert raised.value.field == "EVALSITE_URL"

    monkeypatch.setenv("EVALSITE_URL", "https://evalsite.example.com/api/")
    with pytest.raises(ConfigurationError) as raised:
        Client()
    assert raised.value.field == "EVALSITE_API_KEY"

    monkeypatch.setenv("EVALSITE_API_KEY", "es_1")
    with Client() as client:
        assert client.url == "https://evalsite.example.com"


def test_a_gate_that_measured_nothing_never_passes():
    unmeasured = GateReport(
        "golden", "support", 2, "cal", runs=1, criteria=[CriterionRate("c1", "x", True)]
    )
    measured = GateReport("golden", "support", 2, "cal", runs=1, passed=1, total=1)

    assert unmeasured.reasons(None, 0.9) == ["nothing was measured: no verdict to count"]
    assert measured.reasons(None, 0.9) == []
