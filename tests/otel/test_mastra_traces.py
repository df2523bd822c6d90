"""End to end: Mastra's own tracing (@mastra/observability + @mastra/otel-exporter, OTLP/HTTP
protobuf with chunked bodies) exports two agent runs from tests/otel/node_mastra/run.mjs to the
live server; a real worker judges them with the fake judge. One is an agent with a tool, the other
a supervisor delegating to two sub-agents, which must arrive as ONE run. Node and npm missing is
a failure, not a skip: scripts/ensure-node installs them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from runs.models import AgentRun, CriterionVerdict, Evaluation, Status
from tests.conftest import wait_for
from tests.node import npm_project
from tests.otel.test_convention_mastra import (
    ANSWER,
    BRIEF,
    FACTS,
    FINAL,
    QUESTION,
    RESEARCH_PROMPT,
    TASK,
    WRITING_PROMPT,
)

pytestmark = pytest.mark.worker

PROJECT = Path(__file__).parent / "node_mastra"
BRIEF_CRITERIA = [
    {"description": 'Mentions "instant feedback"', "required": True},
    {"description": 'Says who has "the final say"', "required": True},
]


@pytest.fixture(scope="session")
def node() -> str:
    """node's path, with the project's dependencies installed from its lockfile."""
    return npm_project(PROJECT)[0]


def _calls(run: AgentRun) -> list[tuple[str, str, object]]:
    steps = run.trajectory()
    return [(s["call_id"], s["tool"], s["arguments"]) for s in steps if s["kind"] == "tool_call"]


def _results(run: AgentRun) -> list[tuple[str, str, str]]:
    steps = run.trajectory()
    return [(s["call_id"], s["tool"], s["content"]) for s in steps if s["kind"] == "tool_result"]


def _texts(run: AgentRun, role: str) -> list[str]:
    steps = run.trajectory()
    return [s["text"] for s in steps if s["kind"] == "message" and s["role"] == role and s["text"]]


def _judged(run: AgentRun) -> Evaluation:
    final = (Status.SUCCEEDED, Status.FAILED)
    evaluation = wait_for(
        lambda: Evaluation.objects.filter(run=run, status__in=final).first(),
        timeout=60,
        message=f"the {run.agent} run judged",
    )
    assert evaluation.status == Status.SUCCEEDED, evaluation.error
    return evaluation


def test_mastras_own_traces_arrive_as_whole_runs_with_the_supervisors_delegations_and_are_judged(
    node, worker, fake_judge, live_server, api_key, team, make_rubric
):
    support_rubric = make_rubric()  # "refund" and "order number" required
    brief_rubric = make_rubric(name="Brief quality", criteria=BRIEF_CRITERIA)
    env = os.environ | {
        "EVALSITE_OTLP_URL": f"{live_server.url}/api/otel/v1/traces",
        "EVALSITE_API_KEY": api_key,
        "EVALSITE_RUBRIC": support_rubric.slug,  # the resource attribute: both runs ...
        "EVALSITE_SUPERVISOR_RUBRIC": brief_rubric.slug,  # ... but the supervisor's metadata wins
        "MASTRA_TELEMETRY_DISABLED": "1",
        "NO_COLOR": "1",
    }

    done = subprocess.run(
        [node, "run.mjs"], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=300
    )

    assert done.returncode == 0, f"run.mjs failed:\n{done.stdout}\n{done.stderr}"
    runs = AgentRun.objects.filter(team=team)
    wait_for(lambda: runs.count() >= 2, timeout=30, message="two runs")
    assert sorted(r.agent for r in runs) == ["supervisor", "support-agent"]  # no sub-agent runs
    support = runs.get(agent="support-agent")
    supervisor = runs.get(agent="supervisor")

    assert support.input["messages"] == [
        {"role": "system", "content": "You are Acme support. Look orders up before answering."},
        {"role": "user", "content": QUESTION},
    ]
    assert _calls(support) == [("call_lookup", "lookupOrder", {"order": 77})]
    assert _results(support) == [
        ("call_lookup", "lookupOrder", '{"order":77,"status":"delivered","damaged":true}')
    ]
    assert _texts(support, "assistant") == [ANSWER]
    assert support.metadata["gen_ai.usage.input_tokens"] == 24
    assert support.metadata["service.name"] == "mastra-fixture"

    assert [m["role"] for m in supervisor.input["messages"]] == ["system", "user"]
    assert supervisor.input["messages"][1]["content"] == TASK
    assert _calls(supervisor) == [
        ("call_research", "research-agent", {"input": RESEARCH_PROMPT}),
        ("call_writing", "writing-agent", {"input": WRITING_PROMPT}),
    ]
    assert _results(supervisor) == [
        ("call_research", "research-agent", FACTS),
        ("call_writing", "writing-agent", BRIEF),
    ]
    assert _texts(supervisor, "assistant") == [FINAL]
    assert supervisor.metadata["gen_ai.usage.output_tokens"] == 42  # its calls and its agents'

    support_eval, brief_eval = _judged(support), _judged(supervisor)
    assert support_eval.rubric_version == support_rubric.current_version
    assert brief_eval.rubric_version == brief_rubric.current_version
    assert CriterionVerdict.objects.filter(evaluation=support_eval).count() == 3
    assert CriterionVerdict.objects.filter(evaluation=brief_eval).count() == 2
    for run in (support, supervisor):
        run.refresh_from_db()
        assert run.passed is True, run.agent
    assert Evaluation.objects.filter(run__team=team).count() == 2
