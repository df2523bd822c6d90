"""Request bodies sent with ``Transfer-Encoding: chunked`` (no ``Content-Length``).

Every Node OTLP/HTTP exporter sends its export this way. Django reads a request body only up to
``CONTENT_LENGTH``, so without one it reads nothing: an export would be answered as if it were
empty. Both ways evalsite is served buffer such a body first, bounded, and set
``CONTENT_LENGTH`` to what arrived:

- under gunicorn (and any WSGI server that decodes chunked input itself), ``ChunkedBodies``
  wraps the WSGI application (``evalsite/wsgi.py``);
- under ``manage.py runserver`` and the test suite's live server, whose request handler hands
  Django the raw socket limited to ``CONTENT_LENGTH``, ``ChunkedRequestHandler`` decodes the
  chunks itself (``evalsite/management/commands/runserver.py`` and ``tests/conftest.py``).

At most ``DATA_UPLOAD_MAX_MEMORY_SIZE`` + 1 bytes are read: a longer body stops being read
there and is marked ``evalsite.body_truncated``, and the API answers 413 naming the limit before
parsing anything, so a truncated body is never parsed.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from typing import IO, Any

from django.conf import settings
from django.core.servers.basehttp import ServerHandler, WSGIRequestHandler, WSGIServer

TRUNCATED = "evalsite.body_truncated"
MAX_LINE = 4096  # a chunk-size line (hex digits and extensions) or a trailer line
# What is left of a body over the cap is read and thrown away, so that a client that sends it
# all before reading the answer (most do) gets the 413 rather than a broken pipe; past this
# much the connection is closed instead.
DRAIN_MAX = 256 * 1024 * 1024


class MalformedChunks(ValueError):
    """The chunked framing is broken: the request cannot be read (400)."""


def body_cap() -> int:
    """How many bytes of a chunked body are read: one more than Django would ever accept."""
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1


def is_chunked(environ: dict[str, Any]) -> bool:
    encoding = environ.get("HTTP_TRANSFER_ENCODING", "")
    return "chunked" in encoding.lower() and not environ.get("CONTENT_LENGTH")


def buffer_body(environ: dict[str, Any], stream: IO[bytes], cap: int) -> None:
    """Read ``stream`` (the decoded body) up to ``cap`` bytes into the environ's
    ``wsgi.input``, with ``CONTENT_LENGTH`` set; mark a longer body truncated."""
    body = stream.read(cap)
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    environ[TRUNCATED] = len(body) >= cap and stream.read(1) != b""


def drain(stream: IO[bytes]) -> bool:
    """Read and discard the rest of a body, up to DRAIN_MAX bytes; whether it all was."""
    left = DRAIN_MAX
    while left > 0:
        piece = stream.read(min(65_536, left))
        if not piece:
            return True
        left -= len(piece)
    return False


class ChunkedBodies:
    """WSGI middleware for servers that decode chunked input themselves (gunicorn)."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]):
        if is_chunked(environ):
            stream = environ["wsgi.input"]
            buffer_body(environ, stream, body_cap())
            if environ[TRUNCATED]:
                drain(stream)
        return self.app(environ, start_response)


class ChunkDecoder(io.RawIOBase):
    """The decoded body of a chunked request read from a raw socket file (RFC 9112 7.1)."""

    def __init__(self, rfile: IO[bytes]) -> None:
        self.rfile = rfile
        self.left = 0  # bytes left in the current chunk
        self.done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.done:
            return 0
        if self.left == 0:
            self.left = self._next_size()
            if self.left == 0:
                self._trailers()
                self.done = True
                return 0
        data = self.rfile.read(min(len(buffer), self.left))
        if not data:
            raise MalformedChunks("the connection closed inside a chunk")
        buffer[: len(data)] = data
        self.left -= len(data)
        if self.left == 0 and self._line() != b"":
            raise MalformedChunks("a chunk is longer than its size says")
        return len(data)

    def _line(self) -> bytes:
        line = self.rfile.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE or not line.endswith(b"\n"):
            raise MalformedChunks("a chunk-size or trailer line is too long or cut off")
        return line.rstrip(b"\r\n")

    def _next_size(self) -> int:
        digits = self._line().split(b";", 1)[0].strip()
        try:
            size = int(digits, 16)
        except ValueError:
            raise MalformedChunks(f"{digits[:20]!r} is not a chunk size") from None
        if size < 0:
            raise MalformedChunks("a chunk size is negative")
        return size

    def _trailers(self) -> None:
        while self._line():
            pass


class ChunkedRequestHandler(WSGIRequestHandler):
    """Django's development request handler, reading chunked bodies (``runserver``)."""

    def handle_one_request(self) -> None:
        # Django's own handle_one_request, with a chunked body decoded and buffered first.
        self.raw_requestline = self.rfile.readline(65537)
        if len(self.raw_requestline) > 65536:
            self.requestline = self.request_version = self.command = ""
            self.send_error(414)
            return
        if not self.parse_request():
            return
        environ: dict[str, Any] = dict(self.get_environ())
        stdin: IO[bytes] = self.rfile
        if is_chunked(environ):
            decoded = io.BufferedReader(ChunkDecoder(self.rfile))
            try:
                buffer_body(environ, decoded, body_cap())
                # The rest of a body over the cap: still on the socket unless drained.
                if environ[TRUNCATED] and not drain(decoded):
                    self.close_connection = True
            except MalformedChunks as exc:
                self.close_connection = True
                self.send_error(400, f"Malformed chunked body: {exc}")
                return
            stdin = environ["wsgi.input"]
        handler = ServerHandler(stdin, self.wfile, self.get_stderr(), environ)
        handler.request_handler = self  # type: ignore[attr-defined] # as Django's handler does
        handler.run(self.server.get_app())  # type: ignore[attr-defined]


class ChunkedWSGIServer(WSGIServer):
    """``runserver``'s server, with the request handler that reads chunked bodies."""

    handler_class: type[WSGIRequestHandler] = ChunkedRequestHandler

    def __init__(self, server_address: Any, handler: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(server_address, self.handler_class, *args, **kwargs)
