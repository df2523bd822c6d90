"""The Mastra scorer (clients/mastra) against the live server: `npm test` runs the package's
Node tests (built with tsc first) while this test serves the API (pytest-django's live_server),
a real worker judges with the fake judge, and a team key and rubric are handed over in the
environment (node and the package's dependencies: conftest.py).
"""

from __future__ import annotations

import subprocess

import pytest

from tests.clients.conftest import MASTRA, node_env, project_lock

pytestmark = pytest.mark.worker


def test_a_mastra_agent_loops_on_an_evalsite_rubric_until_it_passes(
    mastra_package, worker, fake_judge, live_server, api_key, make_rubric
):
    rubric = make_rubric()  # requires "refund" and "order number"; "thanks" is optional
    env = node_env(
        EVALSITE_URL=live_server.url, EVALSITE_API_KEY=api_key, EVALSITE_RUBRIC=rubric.slug
    )

    with project_lock(MASTRA):  # `npm test` builds dist/ first, as `npm pack` does
        done = subprocess.run(
            [mastra_package, "test"],
            cwd=MASTRA, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip

    assert done.returncode == 0, f"npm test failed:\n{done.stdout}\n{done.stderr}"
