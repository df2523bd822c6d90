"""Every module stays small enough to read: no Python module of the apps or evalsite/ (migrations
and evalsite/settings.py, a flat list of settings, excepted) and no stylesheet holds more than
400 lines. A module that grows past it is split along its sections (a package with one module
per concern, re-exported from the old name), not let run on."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 400
PACKAGES = ("evalsite", "judge_engine", "teams", "rubrics", "runs", "reviews")
EXCEPTED = {Path("evalsite/settings.py")}


def line_count(path: Path) -> int:
    return len(path.read_text().splitlines())


def python_modules(root: Path) -> list[Path]:
    """The checked Python modules under ``root``, relative to it."""
    return sorted(
        path.relative_to(root)
        for package in PACKAGES
        for path in (root / package).rglob("*.py")
        if "migrations" not in path.relative_to(root).parts
        and path.relative_to(root) not in EXCEPTED
    )


def too_long(root: Path, paths: list[Path]) -> dict[str, int]:
    """{path: lines} of those ``paths`` (relative to ``root``) longer than MAX_LINES."""
    counts = {str(path): line_count(root / path) for path in paths}
    return {path: lines for path, lines in counts.items() if lines > MAX_LINES}


def test_no_python_module_of_the_apps_or_evalsite_is_over_400_lines():
    modules = python_modules(ROOT)

    assert {Path("runs/models/evaluations.py"), Path("reviews/views.py")} <= set(modules)
    assert Path("evalsite/settings.py") not in modules
    assert not [m for m in modules if "migrations" in m.parts]
    assert too_long(ROOT, modules) == {}


def test_no_stylesheet_is_over_400_lines():
    sheets = sorted(p.relative_to(ROOT) for p in (ROOT / "static" / "css").glob("*.css"))

    assert Path("static/css/app.css") in sheets
    assert too_long(ROOT, sheets) == {}


def test_a_module_grown_past_400_lines_is_reported(tmp_path):
    (tmp_path / "runs" / "migrations").mkdir(parents=True)
    (tmp_path / "evalsite").mkdir()
    for package in ("teams", "rubrics", "reviews"):
        (tmp_path / package).mkdir()
    (tmp_path / "runs" / "small.py").write_text("x = 1\n" * MAX_LINES)
    (tmp_path / "runs" / "grown.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "runs" / "migrations" / "0001_initial.py").write_text("x = 1\n" * 1000)
    (tmp_path / "evalsite" / "settings.py").write_text("X = 1\n" * 1000)

    modules = python_modules(tmp_path)

    assert modules == [Path("runs/grown.py"), Path("runs/small.py")]
    assert too_long(tmp_path, modules) == {"runs/grown.py": MAX_LINES + 1}


# --- The README's layout section is the tree's ---------------------------------------------------


def layout_section(readme: str) -> tuple[list[str], list[str]]:
    """The folders the README's "Project layout" block lists (first column) and the file paths
    its text names in backticks."""
    section = readme.split("## Project layout", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    listed = [line.split()[0] for line in block.splitlines() if line and not line[0].isspace()]
    named = re.findall(r"`([\w./]+/[\w./]+\.py)`", section)
    return listed, named


def test_the_readme_layout_names_every_top_level_folder_and_only_paths_that_exist():
    listed, named = layout_section((ROOT / "README.md").read_text())
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    folders = {path.split("/")[0] + "/" for path in tracked if "/" in path}
    folders = {f for f in folders if not f.startswith(".")}

    assert "judge_engine/" in listed and "runs/hooks.py" in named
    assert [p for p in listed + named if not (ROOT / p).exists()] == []
    assert folders - {p for p in listed if p.count("/") == 1} == set()


def test_a_layout_naming_a_missing_path_or_leaving_out_a_folder_is_caught():
    readme = "## Project layout\n\n```\nruns/   x\nnowhere/   y\n```\n\n`runs/gone.py` z\n"
    listed, named = layout_section(readme)
    assert listed == ["runs/", "nowhere/"] and named == ["runs/gone.py"]
    assert [p for p in listed + named if not (ROOT / p).exists()] == ["nowhere/", "runs/gone.py"]
