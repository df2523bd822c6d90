"""The apps' layers hold: teams <- rubrics <- runs <- judging <- reviews, the core package
(evalsite) sits below every app, and the engine (judge_engine) stands alone below everything.

Models, services, selectors and the other modules that hold rules import only from apps to their
left (and from the engine, judge_engine); views, API routers, admin, forms, tasks, management
commands and app configs ("entry points") may import anything, and nothing below them imports
them. judge_engine imports nothing from Django or the apps. Imports inside functions count: a
wrong-way import hidden in a function is how the old circle of twelve modules survived.

And every module imports on its own: the first import of any of them in a fresh process (after
django.setup(), as manage.py, gunicorn and the worker do) succeeds.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("teams", "rubrics", "runs", "judging", "reviews")
ENGINE = "judge_engine"
# Modules (or packages) of an app that sit on top of every app.
ENTRY_POINTS = {
    "admin",
    "apps",
    "context_processors",
    "forms",
    "management",
    "middleware",
    "migrations",
    "schemas",
    "tasks",
    "templatetags",
    "urls",
    "views",
}
PROJECT_ENTRY_POINTS = {
    "evalsite.api",
    "evalsite.urls",
    "evalsite.celery",
    "evalsite.wsgi",
    "evalsite.asgi",
    "evalsite.settings",
    "evalsite.settings_test",
    "evalsite.settings_typecheck",
}
CORE = "evalsite"


def is_entry_point(module: str) -> bool:
    """A views/API/admin/forms/tasks/... module of an app (api, api_rescore, views_members,
    api/...)."""
    if module in PROJECT_ENTRY_POINTS:
        return True
    parts = module.split(".")
    if parts[0] not in LAYERS or len(parts) < 2:
        return False
    if parts[1] in ENTRY_POINTS or parts[1] == "api":
        return True
    return parts[1].startswith(("api_", "views_"))  # api_rescore, views_members, ...


def _imports(module: str, source: str, *, is_package: bool) -> list[tuple[int, list[str]]]:
    """Every import statement of ``source``, anywhere in it (functions and TYPE_CHECKING blocks
    included): its line and the modules it may name (``from x import y``: x, and x.y since y
    may be a module)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: list[tuple[int, list[str]]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, [alias.name]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{alias.name}" for alias in node.names]
            found.append((node.lineno, [target, *names]))
    return found


def _in_engine(module: str) -> bool:
    return module == ENGINE or module.startswith(ENGINE + ".")


def _problem(app: str, target: str) -> str | None:
    """Why a layered module of ``app`` must not import ``target`` (None: it may)."""
    top = target.split(".")[0]
    if _in_engine(target):
        return None  # every layer may use the engine
    if app == CORE:
        if top in LAYERS:
            return "the core package (evalsite) imports no app outside its entry points"
        return None
    if app == ENGINE:
        if top in (*LAYERS, "django", "evalsite"):
            return "judge_engine imports nothing from Django or the apps"
        return None
    if top in LAYERS and LAYERS.index(top) > LAYERS.index(app):
        return f"{app} sits below {top}"
    if is_entry_point(target):
        return "only entry points import entry points"
    return None


def layer_violations(module: str, source: str, *, is_package: bool = False) -> list[str]:
    """The wrong-way imports of ``module`` (its dotted name) whose code is ``source``: one
    message per offending import statement."""
    app = ENGINE if _in_engine(module) else module.split(".")[0]
    if app not in (*LAYERS, ENGINE, CORE) or is_entry_point(module):
        return []
    problems = []
    for line, targets in _imports(module, source, is_package=is_package):
        for target in targets:
            if (why := _problem(app, target)) is not None:
                problems.append(f"{module}:{line} imports {target}: {why}")
                break
    return problems


def _modules() -> list[tuple[str, Path]]:
    out = []
    for top in (*LAYERS, CORE, ENGINE):
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = path.relative_to(ROOT).with_suffix("")
            if "migrations" in relative.parts:
                continue
            parts = list(relative.parts)
            if parts[-1] == "__init__":
                parts.pop()
            out.append((".".join(parts), path))
    return out


# --- The checker ---------------------------------------------------------------------------------


def test_no_module_of_the_apps_imports_the_wrong_way():
    problems = [
        problem
        for module, path in _modules()
        for problem in layer_violations(
            module, path.read_text(), is_package=path.name == "__init__.py"
        )
    ]
    assert problems == []


def test_the_checker_sees_every_module_of_the_apps_and_the_engine():
    modules = {module for module, _ in _modules()}
    assert {
        "teams.models",
        "rubrics.services",
        "runs.services.evaluations",
        "judging.services.execute",
        "runs.selectors.rubric_stats",
        "judge_engine.judge",
        "reviews.services.refresh",
        "reviews.selectors.queue",
    } <= modules


def test_a_wrong_way_import_added_inside_a_function_of_a_real_module_is_reported():
    source = (ROOT / "rubrics" / "services.py").read_text()
    assert layer_violations("rubrics.services", source) == []
    added = (
        source + "\n\ndef _peek():\n    from runs.models import AgentRun\n\n    return AgentRun\n"
    )
    problems = layer_violations("rubrics.services", added)
    assert len(problems) == 1 and "imports runs.models: rubrics sits below runs" in problems[0]


def test_every_kind_of_wrong_way_import_is_reported():
    cases = {
        ("teams.selectors", "from rubrics.models import Rubric"): "teams sits below rubrics",
        ("judging.services.results", "import reviews.services"): "judging sits below reviews",
        ("runs.services.ingest", "from judging.services import execute"): "runs sits below judging",
        ("runs.models", "if TYPE_CHECKING:\n    from reviews.models import RunReview"): "reviews",
        ("runs.services.evaluations", "def f():\n    from ..tasks import evaluate"): "entry points",
        ("runs.selectors.runs", "from ..views import TeamRequest"): "entry points",
        ("judging.services.score", "from runs import api"): "entry points",
        ("reviews.services.labels", "from .. import api"): "entry points",
        ("judge_engine.judge", "from django.conf import settings"): "judge_engine",
        ("judge_engine", "from teams.models import Team"): "judge_engine",
        ("judge_engine.rubric", "from runs.models import Evaluation"): "judge_engine",
        ("evalsite.login", "from teams.api import Caller"): "core package",
        ("evalsite.notify", "from runs.selectors import evaluations_pending"): "core package",
    }
    for (module, source), says in cases.items():
        problems = layer_violations(module, source)
        assert len(problems) == 1 and says in problems[0], (module, source, problems)


def test_imports_to_the_left_to_the_engine_and_from_entry_points_are_allowed():
    allowed = {
        "judging.services.try_it": "from rubrics.services import criteria_validate\n"
        "from teams.models import Team\nfrom judge_engine import RubricScorer\n"
        "from ..models import Evaluation\nfrom .evaluations import evaluation_build",
        "reviews.services.labels": "from judging.services.results import run_refresh",
        "judge_engine.rubric": "import litellm\nfrom .judge import complete_json",
        "rubrics.views_editor": "from runs.selectors import rubric_stats",
        "runs.tasks": "from .services import evaluations_sweep",
        "reviews.apps": "from runs.hooks import result_adjuster_register",
        "evalsite.celery": "from judging.worker_watch import ConsumerWatch",
        "evalsite.outbound": "from judge_engine.netguard import url_refusal",
        "judging.services.score": "from evalsite.notify import wait_for_ends",
    }
    for module, source in allowed.items():
        assert layer_violations(module, source) == [], module


# --- Each module imports on its own --------------------------------------------------------------

# One interpreter does django.setup() (and imports litellm, a third-party module that costs
# seconds); then each module is imported first in a process of its own, forked from it.
FIRST_IMPORTS = """
import importlib, os, sys, traceback
import django
django.setup()
import litellm  # noqa: F401
failed = []
for name in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(name)
        except BaseException:
            print(f"--- import {name} failed:", flush=True)
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status:
        failed.append(name)
print("FAILED", " ".join(failed))
"""


@pytest.mark.slow
def test_every_module_imports_first_in_a_fresh_process(tmp_path):
    names = [m for m, _ in _modules() if not m.startswith("evalsite.settings") and m != "manage"]
    assert "reviews.api" in names and "judging.api_rescore" in names
    # Two modules that only import if the other is already loaded (the way reviews.api and
    # evalsite.api used to): the check must name the one imported first.
    (tmp_path / "circle_a.py").write_text("import circle_b\n\nVALUE = 1\n")
    (tmp_path / "circle_b.py").write_text("from circle_a import VALUE\n")
    env = os.environ | {
        "DJANGO_SETTINGS_MODULE": "evalsite.settings_test",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
    }
    done = subprocess.run(
        [sys.executable, "-c", FIRST_IMPORTS, *names, "circle_a"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    assert last == "FAILED circle_a", done.stdout + done.stderr[-5000:]
    assert "circular import" in done.stderr
