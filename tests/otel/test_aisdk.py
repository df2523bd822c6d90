"""End to end: the Vercel AI SDK itself (tests/otel/node_aisdk, ``ai`` 5.0.277 against its mock
model) runs generateText and streamText with telemetry on and exports their spans with the real
OTLP/HTTP protobuf exporter (chunked bodies) to the live server; a real worker judges both runs
with the fake judge. Node and npm missing is a failure, not a skip: scripts/ensure-node installs
them."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from runs.models import AgentRun, Evaluation
from runs.models import Status as RunStatus
from tests.conftest import ROOT, wait_for
from tests.node import npm_project
from tests.otel.test_convention_aisdk import (
    GENERATE_ANSWER,
    GENERATE_STEPS,
    GENERATE_USAGE,
    STREAM_ANSWER,
    STREAM_STEPS,
    STREAM_USAGE,
)
from tests.otel.test_ingest import kinds

pytestmark = pytest.mark.worker

PROJECT = ROOT / "tests" / "otel" / "node_aisdk"


@pytest.fixture(scope="session")
def aisdk_node() -> str:
    """node's path, with the project's dependencies installed from its lockfile."""
    return npm_project(PROJECT)[0]


def _runs_by_agent(team, count: int) -> dict[str, AgentRun] | None:
    runs = {r.agent: r for r in AgentRun.objects.filter(team=team)}
    return runs if len(runs) == count else None


def _judged(run: AgentRun) -> Evaluation:
    final = (RunStatus.SUCCEEDED, RunStatus.FAILED)
    return wait_for(
        lambda: Evaluation.objects.filter(run=run, status__in=final).first(),
        timeout=60,
        message=f"the {run.agent} run judged",
    )


def test_the_ai_sdks_generate_and_stream_runs_arrive_whole_and_are_judged(
    aisdk_node, worker, fake_judge, live_server, api_key, team, make_rubric
):
    rubric = make_rubric(name="Support quality")
    strict = make_rubric(name="Strict support")
    env = os.environ | {
        "EVALSITE_URL": live_server.url,
        "EVALSITE_API_KEY": api_key,
        "EVALSITE_RUBRIC": rubric.slug,
        "STREAM_RUBRIC": strict.slug,
        "MASTRA_TELEMETRY_DISABLED": "1",
    }

    done = subprocess.run(
        [aisdk_node, "run.mjs"],
        cwd=PROJECT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip

    assert done.returncode == 0, f"run.mjs failed:\n{done.stdout}\n{done.stderr}"
    assert json.loads(done.stdout) == {"generate": GENERATE_ANSWER, "stream": STREAM_ANSWER}
    runs = wait_for(lambda: _runs_by_agent(team, 2), message="both runs")
    generate, stream = runs["support-bot"], runs["support-bot-stream"]
    assert kinds(generate) == GENERATE_STEPS
    assert kinds(stream) == STREAM_STEPS
    assert {k: generate.metadata[k] for k in GENERATE_USAGE} == GENERATE_USAGE
    assert {k: stream.metadata[k] for k in STREAM_USAGE} == STREAM_USAGE
    for run, judge in ((generate, rubric), (stream, strict)):
        evaluation = _judged(run)
        assert evaluation.status == RunStatus.SUCCEEDED, evaluation.error
        assert evaluation.rubric == judge and evaluation.judge_calls == 1
        run.refresh_from_db()
        assert run.status == RunStatus.SUCCEEDED and run.passed is not None
