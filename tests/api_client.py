"""API test helpers: a JSON client for /api/ and the checks of its two error shapes. The
fixtures that make one per caller (``api``, ``other_api``, ``anon``, ``session_api``) are in
tests/conftest.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.test import Client


class Api:
    """A JSON client for /api/. ``key`` goes in ``Authorization: Bearer``; ``client`` may carry
    a session instead."""

    def __init__(self, key: str | None = None, client: Client | None = None) -> None:
        self.client = client or Client()
        self.headers = {"Authorization": f"Bearer {key}"} if key else {}

    def get(self, path: str, **params: Any):
        return self.client.get(f"/api{path}", params, headers=self.headers)

    def send(
        self,
        method: str,
        path: str,
        body: Any = None,
        raw: bytes | str | None = None,
        **headers: str,
    ):
        data = raw if raw is not None else json.dumps(body if body is not None else {})
        call = getattr(self.client, method.lower())
        return call(
            f"/api{path}",
            data=data,
            content_type="application/json",
            headers=self.headers | headers,
        )

    def post(self, path: str, body: Any = None, **kw: Any):
        return self.send("POST", path, body, **kw)

    def put(self, path: str, body: Any = None, **kw: Any):
        return self.send("PUT", path, body, **kw)

    def patch(self, path: str, body: Any = None, **kw: Any):
        return self.send("PATCH", path, body, **kw)


def field_locs(response) -> list[list[Any]]:
    """The ``loc`` of every field error of a 422."""
    assert response.status_code == 422, response.content
    return [e["loc"] for e in response.json()["detail"]]


def assert_error(response, status: int) -> dict[str, Any]:
    """The response has ``status`` and the one error shape {message, extra}."""
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"message", "extra"} and body["message"], body
    return body


@contextmanager
def statements() -> Iterator[list[str]]:
    """The SQL of every statement sent meanwhile on this thread's connection (an execute
    wrapper: unlike connection.queries, which each request's start clears)."""
    from django.db import connection

    sent: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        sent.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        yield sent
