"""The live server the browser, client and OTLP tests talk to: pytest-django's, served by the
request handler ``manage.py runserver`` uses (evalsite/bodies.py), so chunked request bodies
(Node OTLP exporters) are read as they are in development."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.servers.basehttp import ThreadedWSGIServer
from django.test.testcases import LiveServerThread, QuietWSGIRequestHandler
from pytest_django.live_server_helper import LiveServer

from evalsite.bodies import ChunkedRequestHandler


class _QuietChunkedHandler(ChunkedRequestHandler, QuietWSGIRequestHandler):
    """Reads chunked bodies; logs nothing (as the live server's own handler)."""


class _ChunkedServer(ThreadedWSGIServer):
    def __init__(self, server_address: Any, _handler: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(server_address, _QuietChunkedHandler, *args, **kwargs)


class _ChunkedLiveServerThread(LiveServerThread):
    server_class = _ChunkedServer


@pytest.fixture(scope="session")
def live_server(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    """pytest-django's live server (same address rules), on the chunked-reading handler."""
    addr = (
        request.config.getvalue("liveserver")
        or os.getenv("DJANGO_LIVE_TEST_SERVER_ADDRESS")
        or "localhost"
    )
    server = LiveServer(addr, start=False)
    plain = server.thread
    server.thread = _ChunkedLiveServerThread(
        plain.host,
        plain.static_handler,
        connections_override=plain.connections_override,
        port=plain.port,
    )
    server.thread.daemon = True
    server.start()
    yield server
    server.stop()
