"""Fixtures for the judge engine's tests: the fake judge server and a judge pointed at it.

Nothing here needs Django or a database; the fake judge is real HTTP, so litellm's own code
path runs for every judge call.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from runs.scoring import JudgeConfig
from tests.fake_judge import FakeJudge

FAKE_MODEL = "openai/fake-judge"


@pytest.fixture(scope="session")
def judge_server() -> Iterator[FakeJudge]:
    server = FakeJudge(latency=0.0).start()
    yield server
    server.stop()


@pytest.fixture
def server(judge_server: FakeJudge) -> FakeJudge:
    """The fake judge with counters, fault memory and latency reset."""
    judge_server.reset()
    judge_server.set_latency(0.0)
    return judge_server


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
