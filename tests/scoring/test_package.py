"""The engine stays framework-free, and litellm stays behind one module."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "runs" / "scoring"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_importing_the_engine_loads_no_django_module():
    code = (
        "import sys, runs.scoring; "
        "print(sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"


def test_only_the_judge_module_imports_litellm():
    importers = {
        path.name
        for path in PACKAGE.glob("*.py")
        if any(m == "litellm" or m.startswith("litellm.") for m in imported_modules(path))
    }
    assert importers == {"judge.py"}
