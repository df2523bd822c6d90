"""Shared by the Mastra client's tests (test_mastra.py, test_mastra_package.py): Node and npm,
and the package's dependencies installed from its lockfile. Node and npm missing is a failure,
not a skip: scripts/ensure-node installs them."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.conftest import ROOT

MASTRA = ROOT / "clients" / "mastra"
MIN_NODE = 20  # what the tests run on here (Debian's nodejs); @mastra/core asks for 22.13


def node_env(**extra: str) -> dict[str, str]:
    """The environment of every Node process the tests start: Mastra's telemetry off."""
    return os.environ | {"MASTRA_TELEMETRY_DISABLED": "1", "NO_COLOR": "1"} | extra


def _installed_is_stale() -> bool:
    # npm ci leaves node_modules/.package-lock.json behind; an older one than the lockfile
    # means the lockfile changed since.
    installed = MASTRA / "node_modules" / ".package-lock.json"
    lock = MASTRA / "package-lock.json"
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
            cwd=MASTRA, env=node_env(), capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, f"npm ci failed:\n{done.stdout}\n{done.stderr}"
    return npm
