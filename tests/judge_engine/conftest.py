"""Fixtures for the judge engine's tests: a judge pointed at the fake judge server (``server``,
reset per test, comes from tests/conftest.py).

Nothing here needs Django or a database; the fake judge is real HTTP, so litellm's own code
path runs for every judge call.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from judge_engine import JudgeConfig
from tests.conftest import FAKE_MODEL
from tests.fake_judge import FakeJudge


@pytest.fixture
def judge(server: FakeJudge) -> JudgeConfig:
    return JudgeConfig(model=FAKE_MODEL, api_base=server.url, api_key="fake")


def post_json(url: str, body: dict) -> tuple[int, dict]:
    """POST JSON with the standard library; returns (status, decoded body) even for errors."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
