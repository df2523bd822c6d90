"""The Mastra scorer (clients/mastra) against the live server: `npm test` runs the package's
Node tests (built with tsc first) while this test serves the API (pytest-django's live_server),
a real worker judges with the fake judge, and a team key and rubric are handed over in the
environment. Node and npm missing is a failure, not a skip: scripts/ensure-node installs them.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.worker

PACKAGE = ROOT / "clients" / "mastra"
MIN_NODE = 20  # what the pinned @mastra/core is tested on here (it asks for 22.13)


def _installed_is_stale() -> bool:
    # npm ci leaves node_modules/.package-lock.json behind; an older one than the lockfile
    # means the lockfile changed since.
    installed = PACKAGE / "node_modules" / ".package-lock.json"
    lock = PACKAGE / "package-lock.json"
    return not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime


@pytest.fixture(scope="session")
def mastra_package() -> str:
    """npm's path, with the package's dependencies installed from its lockfile."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("node and npm are required for the Mastra client: run scripts/ensure-node")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout
    if int(version.lstrip("v").split(".")[0]) < MIN_NODE:
        pytest.fail(f"the Mastra client needs Node {MIN_NODE} or newer, found {version.strip()}")
    if _installed_is_stale():
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=PACKAGE, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, f"npm ci failed:\n{done.stdout}\n{done.stderr}"
    return npm


def test_a_mastra_agent_loops_on_an_evalsite_rubric_until_it_passes(
    mastra_package, worker, fake_judge, live_server, api_key, make_rubric
):
    rubric = make_rubric()  # requires "refund" and "order number"; "thanks" is optional
    env = os.environ | {
        "EVALSITE_URL": live_server.url,
        "EVALSITE_API_KEY": api_key,
        "EVALSITE_RUBRIC": rubric.slug,
        "NO_COLOR": "1",
    }

    done = subprocess.run(
        [mastra_package, "test"],
        cwd=PACKAGE, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip

    assert done.returncode == 0, f"npm test failed:\n{done.stdout}\n{done.stderr}"
