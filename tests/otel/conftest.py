"""OTLP ingest fixtures: exports posted through the real endpoint with the team's API key."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from tests.otel.otlp import S, export_json, export_proto

PATH = "/api/otel/v1/traces"


@pytest.fixture(autouse=True)
def _assemble_in_the_request(settings) -> None:
    """Runs are assembled inside the export request (EVALSITE_OTEL_ASSEMBLE_DELAY=0) unless a
    test says otherwise."""
    settings.EVALSITE_OTEL_ASSEMBLE_DELAY = 0


def _post(key: str | None, body: bytes, content_type: str, **headers: str):
    auth = {"Authorization": f"Bearer {key}"} if key else {}
    return Client().post(PATH, data=body, content_type=content_type, headers=auth | headers)


@pytest.fixture
def send(api_key) -> Callable[..., Any]:
    """send(spans, encoding="json"|"protobuf"|"gzip", resource=None, key=team's key)."""

    def post(
        spans: list[S],
        encoding: str = "json",
        resource: dict[str, Any] | None = None,
        key: str | None = api_key,
    ):
        if encoding == "protobuf":
            return _post(key, export_proto(spans, resource), "application/x-protobuf")
        body = json.dumps(export_json(spans, resource)).encode()
        if encoding == "gzip":
            return _post(
                key, gzip.compress(body), "application/json", **{"Content-Encoding": "gzip"}
            )
        return _post(key, body, "application/json")

    return post


@pytest.fixture
def post_raw(api_key) -> Callable[..., Any]:
    def post(body: bytes, content_type: str = "application/json", key: str | None = api_key):
        return _post(key, body, content_type)

    return post
