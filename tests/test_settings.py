"""DEBUG is off unless the environment asks; without SECRET_KEY and DEBUG the site refuses to
start, saying what to set. Each case loads evalsite.settings in a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Each case starts an interpreter: in make test, not in make test-fast.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
PRINT_DEBUG = "import evalsite.settings as s; print('DEBUG', s.DEBUG, bool(s.SECRET_KEY))"


def load_settings(
    tmp_path: Path, module: str = "evalsite.settings", **env: str
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY"}}
    return subprocess.run(
        [sys.executable, "-c", PRINT_DEBUG.replace("evalsite.settings", module)],
        cwd=ROOT,
        env=base | {"EVALSITE_DATA_DIR": str(tmp_path)} | env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_without_secret_key_or_debug_the_settings_refuse_to_load_and_say_what_to_set(tmp_path):
    loaded = load_settings(tmp_path)

    assert loaded.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY is not set" in loaded.stderr
    assert "DEBUG=1" in loaded.stderr


def test_a_secret_key_alone_leaves_debug_off(tmp_path):
    loaded = load_settings(tmp_path, SECRET_KEY="not-a-real-secret")

    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split() == ["DEBUG", "False", "True"]


def test_debug_is_on_only_when_the_environment_asks_and_then_a_development_key_is_used(tmp_path):
    asked = load_settings(tmp_path, DEBUG="1")
    refused = load_settings(tmp_path, DEBUG="0", SECRET_KEY="not-a-real-secret")

    assert asked.returncode == 0, asked.stderr
    assert asked.stdout.split() == ["DEBUG", "True", "True"]
    assert refused.stdout.split() == ["DEBUG", "False", "True"]


def test_make_run_asks_for_debug():
    script = (ROOT / "scripts" / "run").read_text()

    assert 'export DEBUG="${DEBUG:-1}"' in script


def test_the_type_checks_settings_load_without_a_secret(tmp_path):
    """mypy's Django plugin loads evalsite.settings_typecheck (pyproject.toml)."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    loaded = load_settings(tmp_path, "evalsite.settings_typecheck")

    assert 'django_settings_module = "evalsite.settings_typecheck"' in pyproject

    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split() == ["DEBUG", "True", "True"]
