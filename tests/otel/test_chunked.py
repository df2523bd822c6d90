"""Chunked request bodies (``Transfer-Encoding: chunked``, no ``Content-Length``), as every Node
OTLP exporter sends them, are read whole under gunicorn and under the runserver handler (the
live server): the same export sent both ways, in both encodings and compressed or not, makes the
same run. A chunked body over the limit is a 413 naming it, read no further than the limit."""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import subprocess
import sys
import zlib
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from runs.models import AgentRun
from tests.conftest import ROOT
from tests.otel.otlp import export_json, export_proto, new_trace_id, two_tool_trace
from tests.otel.test_ingest import EXPECTED, kinds
from tests.waiting import wait_for

# A real gunicorn beside the live server: in make test, not in make test-fast.
pytestmark = pytest.mark.slow

PATH = "/api/otel/v1/traces"
GUNICORN_BULK_LIMIT = 200_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def gunicorn_url(worker_env, tmp_path_factory) -> Iterator[str]:
    """gunicorn serving evalsite.wsgi against the test database, as docker-compose runs it."""
    port = _free_port()
    log = tmp_path_factory.mktemp("gunicorn") / "gunicorn.log"
    env = worker_env | {
        "EVALSITE_OTEL_ASSEMBLE_DELAY": "0",
        "EVALSITE_MAX_BULK_BYTES": str(GUNICORN_BULK_LIMIT),
    }
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "evalsite.wsgi", "--bind", f"127.0.0.1:{port}",
             "--workers", "1", "--threads", "4"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip

        def up() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"gunicorn exited:\n{log.read_text()[-3000:]}")
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        wait_for(up, timeout=60, message="gunicorn listening")
        yield f"http://127.0.0.1:{port}"
        proc.terminate()
        proc.wait(15)


@pytest.fixture(params=["runserver", "gunicorn"])
def base_url(request, live_server, settings) -> str:
    settings.EVALSITE_OTEL_ASSEMBLE_DELAY = 0
    if request.param == "runserver":
        return live_server.url
    return request.getfixturevalue("gunicorn_url")


def _pieces(body: bytes, size: int = 1000) -> Iterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start : start + size]


def post(
    base: str, key: str, body: bytes, content_type: str, *, chunked: bool, encoding: str = ""
) -> tuple[int, bytes]:
    url = urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": content_type}
    if encoding:
        headers["Content-Encoding"] = encoding
    try:
        if chunked:
            # An iterable body of unknown length: http.client sends it chunk by chunk.
            conn.request("POST", PATH, body=_pieces(body), headers=headers, encode_chunked=True)
        else:
            conn.request("POST", PATH, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def _body(fmt: str, encoding: str) -> tuple[bytes, str, str]:
    """A fresh two-tool trace: (body, Content-Type, trace id)."""
    trace = two_tool_trace(new_trace_id())
    spans = list(trace.values())
    if fmt == "protobuf":
        body, content_type = export_proto(spans), "application/x-protobuf"
    else:
        body, content_type = json.dumps(export_json(spans)).encode(), "application/json"
    if encoding == "gzip":
        body = gzip.compress(body)
    elif encoding == "deflate":
        body = zlib.compress(body)
    return body, content_type, trace["agent"].trace_id


@pytest.mark.parametrize(
    ("fmt", "encoding"),
    [("json", ""), ("protobuf", ""), ("json", "gzip"), ("protobuf", "gzip"), ("json", "deflate")],
)
def test_the_same_export_with_content_length_and_chunked_makes_the_same_run(
    base_url, api_key, team, fmt, encoding
):
    runs = {}
    for chunked in (False, True):
        body, content_type, trace_id = _body(fmt, encoding)
        status, answer = post(
            base_url, api_key, body, content_type, chunked=chunked, encoding=encoding
        )
        assert status == 200, answer
        runs[chunked] = AgentRun.objects.get(team=team, metadata__trace_id=trace_id)

    assert kinds(runs[True]) == kinds(runs[False]) == EXPECTED
    assert runs[True].agent == runs[False].agent == "support-bot"


def test_a_chunked_body_over_the_limit_is_a_413_naming_it_and_stores_nothing(
    gunicorn_url, live_server, api_key, team, settings
):
    settings.EVALSITE_MAX_BULK_BYTES = GUNICORN_BULK_LIMIT
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = GUNICORN_BULK_LIMIT + 65_536
    # Valid JSON all the way through, so only the limit can refuse it.
    padding = {"key": "pad", "value": {"stringValue": "x" * 4_000_000}}
    export = export_json(list(two_tool_trace().values()))
    export["resourceSpans"][0]["resource"]["attributes"].append(padding)
    body = json.dumps(export).encode()

    for base in (live_server.url, gunicorn_url):
        status, answer = post(base, api_key, body, "application/json", chunked=True)

        assert status == 413, answer
        error = json.loads(answer)
        assert error["extra"]["setting"] == "EVALSITE_MAX_BULK_BYTES"
        assert error["extra"]["limit"] == GUNICORN_BULK_LIMIT
        assert "request body is over" in error["message"]
    assert not AgentRun.objects.filter(team=team).exists()


def test_broken_chunk_framing_is_a_400_not_a_parse_of_part_of_it(live_server, api_key, team):
    url = urlsplit(live_server.url)
    request = (
        f"POST {PATH} HTTP/1.1\r\nHost: {url.hostname}\r\n"
        f"Authorization: Bearer {api_key}\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
        "5\r\n{}{}{\r\nzz\r\n"
    ).encode()
    with socket.create_connection((url.hostname, url.port), timeout=30) as s:
        s.sendall(request)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk

    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert b"Malformed chunked body" in answer
    assert not AgentRun.objects.filter(team=team).exists()
