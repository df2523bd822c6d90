"""The Docker image and the compose stack: what ``COPY . .`` sends (the .dockerignore read with
Docker's rules, tests/dockerignore.py), the user the containers run as, and what compose gives
the services (the secrets key, a health check, restarts)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.dockerignore import Pattern, context_files, excluded, read_dockerignore

ROOT = Path(__file__).resolve().parents[1]


def _patterns() -> list[Pattern]:
    return [Pattern.parse(p) for p in read_dockerignore((ROOT / ".dockerignore").read_text())]


@pytest.mark.parametrize(
    ("patterns", "path", "out"),
    [
        # Docker's documentation of .dockerignore, example by example
        (["*/temp*"], "somedir/temporary.txt", True),
        (["*/temp*"], "temp", False),
        (["*/*/temp*"], "somedir/subdir/temporary.txt", True),
        (["temp?"], "tempa", True),
        (["temp?"], "sub/tempa", False),
        (["**/*.go"], "a/b/c.go", True),
        (["**/*.go"], "c.go", True),
        (["*.md", "!README*.md", "README-secret.md"], "README-secret.md", True),
        (["*.md", "!README*.md", "README-secret.md"], "README.md", False),
        (["*.md", "!README*.md", "README-secret.md"], "CHANGES.md", True),
        # a folder's contents go with it; without "**" a pattern is anchored at the root
        (["data"], "data/x/y.sqlite3", True),
        (["data"], "runs/data/x", False),
        (["/data/"], "data/x", True),
        (["**/node_modules"], "tests/otel/node_mastra/node_modules/a/b.js", True),
        (["node_modules"], "clients/mastra/node_modules/x.js", False),
        (["docs/**"], "docs/a/b.md", True),
        (["**/*.py[cod]"], "runs/__pycache__/x.cpython-311.pyc", True),
        (["# a comment", " .git "], ".git/config", True),
    ],
)
def test_the_matcher_follows_dockers_rules(patterns, path, out):
    parsed = [Pattern.parse(p) for p in read_dockerignore("\n".join(patterns))]
    assert excluded(path, parsed) is out


NEVER_SENT = [
    ".venv/bin/python", "clients/python/.venv/lib/x.py", "data/evalsite.sqlite3",
    "data/broker/out/m.msg", ".git/HEAD", ".git", ".testdata/27272/db", ".testdata-pg/base/1",
    "node_modules/x/index.js", "clients/mastra/node_modules/@mastra/core/index.js",
    "tests/otel/node_mastra/node_modules/a.js", "runs/__pycache__/models.cpython-311.pyc",
    "evalsite/__pycache__", "bench/results.sqlite3", "evalsite.sqlite3-wal", ".env",
    ".pytest_cache/v/cache", "test-results/trace.zip", "staticfiles/app.css",
]  # fmt: skip


@pytest.mark.parametrize("path", NEVER_SENT)
def test_the_dockerignore_keeps_environments_data_and_caches_out(path):
    assert excluded(path, _patterns())


def test_copy_sends_the_code_and_nothing_of_this_checkout_that_must_stay_out():
    sent = context_files(ROOT)
    parts = [path.split("/") for path in sent]

    assert [p for p in sent if p.split("/")[0] in (".venv", "data", ".git")] == []
    assert [p for p in sent if p.startswith(".testdata")] == []
    assert [p for p, split in zip(sent, parts, strict=True) if "node_modules" in split] == []
    assert [p for p, split in zip(sent, parts, strict=True) if "__pycache__" in split] == []
    assert [p for p in sent if p.endswith(".sqlite3")] == []
    # and what the image needs is sent
    needed = {"manage.py", "pyproject.toml", "evalsite/settings.py", "templates/base.html"}
    assert needed <= set(sent) and any(p.startswith("static/") for p in sent)


def test_the_image_runs_as_an_unprivileged_user():
    lines = [line.split() for line in (ROOT / "Dockerfile").read_text().splitlines() if line]
    users = [i for i, words in enumerate(lines) if words[0] == "USER"]
    cmd = next(i for i, words in enumerate(lines) if words[0] == "CMD")

    assert users and users[-1] < cmd
    user = lines[users[-1]][1].split(":")[0]
    assert user not in ("root", "0") and re.fullmatch(r"[1-9][0-9]*", user)


@pytest.fixture(scope="module")
def services() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


@pytest.mark.parametrize("name", ["web", "worker", "beat"])
def test_the_long_running_services_restart_and_get_the_secrets_key(services, name):
    service = services[name]
    assert service["restart"] == "unless-stopped"
    assert service["environment"]["EVALSITE_SECRETS_KEY"] == "${EVALSITE_SECRETS_KEY:-}"


def test_the_web_service_is_health_checked_on_healthz(services):
    test = services["web"]["healthcheck"]["test"]
    assert test[0] == "CMD" and "http://127.0.0.1:8000/healthz" in " ".join(test)
