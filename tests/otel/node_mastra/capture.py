"""Regenerate tests/otel/mastra_spans.json: run.mjs exports to a local capture server, and the
OTLP/HTTP protobuf bodies it received are decoded the way the server decodes them.

    cd tests/otel/node_mastra && npm ci && cd ../../.. && \
        .venv/bin/python tests/otel/node_mastra/capture.py

Ids and timestamps change each time; the unit tests (tests/otel/test_convention_mastra.py)
read shapes, never ids.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
OUT = HERE.parent / "mastra_spans.json"
BODIES: list[tuple[str, bytes]] = []


class Capture(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = self._chunked()
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        BODIES.append((self.headers.get("Content-Type", ""), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _chunked(self) -> bytes:
        out = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                self.rfile.readline()
                return out
            out += self.rfile.read(size)
            self.rfile.readline()

    def log_message(self, *args: object) -> None:
        pass


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from runs.otel.decode import export_decode  # reads no setting for a plain body

    server = ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = os.environ | {
        "EVALSITE_OTLP_URL": f"http://127.0.0.1:{server.server_port}/api/otel/v1/traces",
        "EVALSITE_API_KEY": "capture",
        "EVALSITE_RUBRIC": "support-quality",
        "EVALSITE_SUPERVISOR_RUBRIC": "brief-quality",
        "MASTRA_TELEMETRY_DISABLED": "1",
    }
    done = subprocess.run(["node", "run.mjs"], cwd=HERE, env=env, timeout=300)
    server.shutdown()
    if done.returncode != 0:
        return done.returncode
    spans = [s for kind, body in BODIES for s in export_decode(body, kind)]
    spans.sort(key=lambda s: (s.trace_id, s.start_ns, s.span_id))
    OUT.write_text(
        json.dumps([dataclasses.asdict(s) for s in spans], indent=1, ensure_ascii=False) + "\n"
    )
    print(f"{len(spans)} spans from {len(BODIES)} export(s) -> {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
