"""Shared by the Mastra client's tests (test_mastra.py, test_mastra_package.py): Node and npm,
and the package's dependencies installed from its lockfile. Node and npm missing is a failure,
not a skip: scripts/ensure-node installs them."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tests.node import node_env, npm_project, project_lock  # noqa: F401 - the tests import them here

MASTRA = ROOT / "clients" / "mastra"


@pytest.fixture(scope="session")
def mastra_package() -> str:
    """npm's path, with the package's dependencies installed from its lockfile."""
    return npm_project(MASTRA)[1]
