"""The README cannot drift from the code: every EVALSITE_* setting is in its configuration
tables, and its layout section shows every app."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def table_names(markdown: str) -> set[str]:
    """The names in backticks in the first cell of every table row."""
    names: set[str] = set()
    for line in markdown.splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            names.update(re.findall(r"`([A-Z][A-Z0-9_]*)`", first_cell))
    return names


def layout_section(markdown: str) -> str:
    return markdown.split("## Project layout", 1)[1].split("\n## ", 1)[0]


def test_every_evalsite_setting_is_in_the_readmes_configuration_tables():
    source = (ROOT / "evalsite" / "settings.py").read_text()
    names = set(re.findall(r"\bEVALSITE_[A-Z0-9_]+\b", source))

    assert len(names) > 40  # the scan found the settings
    assert sorted(names - table_names(README)) == []


def test_the_table_scan_would_notice_a_setting_missing_from_the_readme():
    tables = "| variable | meaning |\n| --- | --- |\n| `EVALSITE_A`, `EVALSITE_B` | x |\n"

    assert table_names(tables) == {"EVALSITE_A", "EVALSITE_B"}
    assert "EVALSITE_C" not in table_names(tables + "`EVALSITE_C` in prose only\n")


def test_the_readme_layout_shows_every_app():
    apps = [app for app in settings.INSTALLED_APPS if (ROOT / app / "apps.py").exists()]
    layout = layout_section(README)

    assert {"teams", "rubrics", "runs", "reviews"} <= set(apps)
    for folder in [*apps, "evalsite", "judge_engine", "templates", "static", "tests", "bench"]:
        assert re.search(rf"^{re.escape(folder)}/ ", layout, re.M), folder


def test_make_test_fast_leaves_out_worker_browser_and_slow_tests_and_the_readme_says_so():
    makefile = (ROOT / "Makefile").read_text()
    target = makefile.split("\ntest-fast:", 1)[1].split("\n\n", 1)[0]
    selection = '-m "not worker and not browser and not slow"'

    assert f"$(BIN)/pytest {selection}" in target
    assert "`make test-fast`" in README and selection in README
    # make test leaves nothing out: its passes select by worker/browser only.
    script = (ROOT / "scripts" / "test").read_text()
    assert "slow" not in script


def environment_names(source: str) -> set[str]:
    """The variables a settings module reads: os.environ.get("X") and env_bool/int/float("X")."""
    return set(
        re.findall(r'(?:os\.environ\.get|env_(?:bool|int|float))\(\s*"([A-Z][A-Z0-9_]*)"', source)
    )


def test_every_environment_variable_settings_reads_is_in_the_readme():
    names = environment_names((ROOT / "evalsite" / "settings.py").read_text())

    assert {"SECRET_KEY", "DATABASE_URL", "LOG_LEVEL", "SECURE_COOKIES"} <= names
    assert sorted(n for n in names if f"`{n}`" not in README) == []


def test_the_environment_scan_would_notice_an_undocumented_variable():
    assert environment_names('X = env_int("NEW_ONE", 3)\nY = os.environ.get("OTHER")') == {
        "NEW_ONE",
        "OTHER",
    }
