"""A tiny HTTP listener on 127.0.0.1 that records every request (method, path, headers) and
answers with a fixed status, headers and body: the stand-in for "some other server" a judge
request must never reach, or a server answering with a redirect. ``script`` holds answers given
first, one per request, in order (e.g. a 429 then the fixed 200); ``Seen.body`` is the request
body."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CREDENTIAL_HEADERS = ("authorization", "x-api-key", "api-key", "x-goog-api-key")


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes = b""

    def credentials(self) -> dict[str, str]:
        return {k: v for k, v in self.headers.items() if k in CREDENTIAL_HEADERS}


@dataclass
class Listener:
    status: int = 200
    body: bytes = b""
    reason: str | None = None  # the status line's phrase; None: the standard one
    headers: dict[str, str] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    script: list[tuple[int, dict[str, str], bytes]] = field(default_factory=list)
    _server: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> Listener:
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                sent = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                listener.seen.append(Seen(self.command, self.path, headers, sent))
                status, answer_headers, body = (
                    listener.script.pop(0)
                    if listener.script
                    else (listener.status, listener.headers, listener.body)
                )
                self.send_response(status, listener.reason)
                for name, value in answer_headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def credentials_seen(self) -> list[str]:
        return [v for s in self.seen for v in s.credentials().values()]
