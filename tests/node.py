"""Node projects the suite runs (the Mastra client, the AI SDK and Mastra trace fixtures): Node
and npm found, the project's dependencies installed from its lockfile. Node and npm missing is a
failure, not a skip: scripts/ensure-node installs them."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

MIN_NODE = 20  # what the tests run on here (Debian's nodejs); @mastra/core 1.71 asks for 22.13


def node_env(**extra: str) -> dict[str, str]:
    """The environment of every Node process the tests start: Mastra's telemetry off."""
    return os.environ | {"MASTRA_TELEMETRY_DISABLED": "1", "NO_COLOR": "1"} | extra


@contextmanager
def project_lock(project: Path) -> Iterator[None]:
    """Held while npm installs or builds in ``project``: test processes running side by side
    (pytest-xdist) never write the same node_modules or dist/ at once."""
    digest = hashlib.sha256(str(project.resolve()).encode()).hexdigest()[:16]
    with open(Path(tempfile.gettempdir()) / f"evalsite-npm-{digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _installed_is_stale(project: Path) -> bool:
    # npm ci leaves node_modules/.package-lock.json behind; an older one than the lockfile
    # means the lockfile changed since.
    installed = project / "node_modules" / ".package-lock.json"
    lock = project / "package-lock.json"
    return not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime


def npm_project(project: Path) -> tuple[str, str]:
    """(node, npm) paths, with ``project``'s dependencies installed from its lockfile."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail(f"node and npm are required for {project.name}: run scripts/ensure-node")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout
    if int(version.lstrip("v").split(".")[0]) < MIN_NODE:
        pytest.fail(f"{project.name} needs Node {MIN_NODE} or newer, found {version.strip()}")
    with project_lock(project):
        if _installed_is_stale(project):
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"],
                cwd=project, env=node_env(), capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            assert done.returncode == 0, f"npm ci failed:\n{done.stdout}\n{done.stderr}"
    return node, npm
