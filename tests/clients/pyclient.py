"""Fixtures and helpers of the Python client's tests (tests/clients/test_python_*.py): a
client of the live test server that records which API operations it called."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from evalsite_client import OPERATIONS, Client


def _template(path: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\\\{[a-z_]+\\\}", "[^/]+", re.escape(path)) + "$")


TEMPLATES = [(op.method, _template(op.path), op_id) for op_id, op in OPERATIONS.items()]


def operation_of(method: str, path: str) -> str | None:
    """The operation id a request was for (longest, most specific template first)."""
    for m, pattern, op_id in sorted(TEMPLATES, key=lambda t: -len(t[1].pattern)):
        if m == method and pattern.match(path):
            return op_id
    return None


class Recording(Client):
    """A client that notes the operation of every request it sends, and its answer's status."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.called: set[str] = set()
        self.statuses: list[tuple[str | None, int]] = []
        hooks = {"request": [self._note], "response": [self._status]}
        super().__init__(*args, event_hooks=hooks, **kwargs)

    def _note(self, request: httpx.Request) -> None:
        op = operation_of(request.method, request.url.path)
        if op:
            self.called.add(op)

    def _status(self, response: httpx.Response) -> None:
        op = operation_of(response.request.method, response.request.url.path)
        self.statuses.append((op, response.status_code))


@pytest.fixture
def evalsite(live_server, api_key) -> Iterator[Recording]:
    with Recording(live_server.url, api_key, backoff=0.05) as client:
        yield client


def cli_env(live_server, api_key) -> dict[str, str]:
    return {"EVALSITE_URL": live_server.url, "EVALSITE_API_KEY": api_key}


PASSING = "Your refund for order number 1234 was sent today, thanks for waiting."
NOT_PASSING = "Your refund was sent today."  # no "order number": a required criterion fails
TASK = "Where is my refund for order 1234?"
