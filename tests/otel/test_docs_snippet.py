"""The OpenTelemetry SDK snippet of docs/otel.md works as written, against the live server."""

from __future__ import annotations

import re

from runs.models import AgentRun
from tests.conftest import ROOT


def test_the_sdk_snippet_in_the_otel_docs_makes_a_run_with_its_tool_step(
    live_server, api_key, team, make_rubric
):
    rubric = make_rubric(name="Support quality")
    docs = (ROOT / "docs" / "otel.md").read_text()
    section = docs[docs.index("### Any SDK, by hand") :]
    snippet = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    snippet = snippet.replace("http://127.0.0.1:8000", live_server.url)

    exec(compile(snippet, "docs/otel.md", "exec"), {"EVALSITE_API_KEY": api_key})

    run = AgentRun.objects.get(team=team)
    assert run.agent == "support-bot" and run.rubric == rubric
    steps = [(s["kind"], s.get("tool")) for s in run.trajectory()]
    assert steps == [
        ("message", None),
        ("tool_call", "lookup_order"),
        ("tool_result", "lookup_order"),
        ("message", None),
    ]
