"""Shared fixtures: personas, factories, the fake judge, and real Celery worker processes.

Personas: ``owner`` and ``teammate`` (editor) and ``viewer`` of ``team``; ``stranger`` owns
``other_team``. The judge is the only fake: an OpenAI-compatible HTTP server (tests/fake_judge.py)
that litellm really talks to.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model

from tests.fake_judge import FakeJudge

ROOT = Path(__file__).resolve().parent.parent
FAKE_MODEL = "openai/fake-judge"


def wait_for(
    predicate: Callable[[], Any],
    *,
    timeout: float = 30.0,
    interval: float = 0.05,
    message: str = "condition",
) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        time.sleep(interval)


# --- The judge ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def fake_judge_server() -> Iterator[FakeJudge]:
    judge = FakeJudge(latency=0.0).start()
    yield judge
    judge.stop()


@pytest.fixture
def fake_judge(fake_judge_server: FakeJudge, settings) -> FakeJudge:
    """The fake judge, reset, and configured as the deployment's default judge."""
    fake_judge_server.reset()
    fake_judge_server.set_latency(0.0)
    settings.EVALSITE_JUDGE_MODEL = FAKE_MODEL
    settings.EVALSITE_JUDGE_API_BASE = fake_judge_server.url
    settings.EVALSITE_JUDGE_API_KEY = "fake-key"
    return fake_judge_server


# --- Personas and factories ---------------------------------------------------------------------


@pytest.fixture
def make_user(db) -> Callable[..., Any]:
    def make(username: str, password: str = "correct-horse-battery") -> Any:
        return get_user_model().objects.create_user(username=username, password=password)

    return make


@pytest.fixture
def team(db):
    from teams.services import team_create

    return team_create(name="Acme", slug="acme")


@pytest.fixture
def other_team(db):
    from teams.services import team_create

    return team_create(name="Globex", slug="globex")


@pytest.fixture
def owner(make_user, team):
    from teams.services import membership_set

    user = make_user("olivia")
    membership_set(team=team, user=user, role="owner")
    return user


@pytest.fixture
def teammate(make_user, team):
    from teams.services import membership_set

    user = make_user("teo")
    membership_set(team=team, user=user, role="editor")
    return user


@pytest.fixture
def viewer(make_user, team):
    from teams.services import membership_set

    user = make_user("vera")
    membership_set(team=team, user=user, role="viewer")
    return user


@pytest.fixture
def stranger(make_user, other_team):
    from teams.services import membership_set

    user = make_user("sam")
    membership_set(team=other_team, user=user, role="owner")
    return user


@pytest.fixture
def api_key(team) -> str:
    from teams.services import api_key_create

    _, raw = api_key_create(team=team, name="tests")
    return raw


@pytest.fixture
def other_api_key(other_team) -> str:
    from teams.services import api_key_create

    _, raw = api_key_create(team=other_team, name="tests")
    return raw


SUPPORT_CRITERIA = [
    {"description": 'Mentions "refund"', "required": True},
    {"description": 'Gives the "order number"', "required": True},
    {"description": 'Says "thanks"', "required": False},
]


@pytest.fixture
def make_rubric(team) -> Callable[..., Any]:
    from rubrics.services import rubric_create

    def make(name: str = "Support quality", criteria: Any = None, team=team, **kwargs: Any):
        return rubric_create(
            team=team,
            name=name,
            criteria=SUPPORT_CRITERIA if criteria is None else criteria,
            **kwargs,
        )

    return make


def run_payload(**overrides: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "agent": "support-bot",
        "input": {
            "messages": [
                {"role": "system", "content": "You are a polite support agent."},
                {"role": "user", "content": "Where is my refund for order 1234?"},
            ]
        },
        "output": "Your refund for order number 1234 was sent today, thanks for waiting.",
        "request_context": {},
        "metadata": {},
    }
    payload.update(overrides)
    return payload


@pytest.fixture
def make_run(team) -> Callable[..., Any]:
    """Ingest a run through the real service (evaluations are queued, not executed)."""
    from runs.payloads import RunPayload
    from runs.services import run_ingest

    def make(team=team, **overrides: Any):
        run, _ = run_ingest(team=team, payload=RunPayload.model_validate(run_payload(**overrides)))
        return run

    return make


# --- Real Celery workers -----------------------------------------------------------------------


def _database_url() -> str:
    from django.db import connection

    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{s['NAME']}"
    user = s.get("USER") or ""
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    port = f":{s['PORT']}" if s.get("PORT") else ""
    return f"postgres://{auth}{s.get('HOST') or 'localhost'}{port}/{s['NAME']}"


class Worker:
    """A real `celery -A evalsite worker` process against the test database."""

    def __init__(self, env: dict[str, str], concurrency: int, log: Path) -> None:
        self.log = log
        self.name = f"test-{uuid.uuid4().hex[:8]}@%h"
        cmd = [
            sys.executable, "-m", "celery", "-A", "evalsite", "worker",
            "--pool", "threads", "--concurrency", str(concurrency), "--loglevel", "INFO",
            "--without-heartbeat", "--without-gossip", "--without-mingle", "-n", self.name,
        ]  # fmt: skip
        self._log_file = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=self._log_file, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        wait_for(self._ready, timeout=60, message=f"worker ready (log: {log})")

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"worker exited early:\n{self.log.read_text()[-4000:]}")
        return b" ready." in self.log.read_bytes()

    def kill(self) -> None:
        """SIGKILL, as a crashed machine would: no cleanup, no acks."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log_file.close()


@pytest.fixture(scope="session")
def worker_env(django_db_setup, django_db_blocker) -> dict[str, str]:
    with django_db_blocker.unblock():
        url = _database_url()
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="evalsite.settings_test",
        DATABASE_URL=url,
        EVALSITE_DATA_DIR=str(django_settings.DATA_DIR),
        CELERY_BROKER_URL=django_settings.CELERY_BROKER_URL,
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        PYTHONUNBUFFERED="1",
    )
    if django_settings.CELERY_BROKER_URL.startswith("filesystem"):
        queue = Path(django_settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
        shutil.rmtree(queue, ignore_errors=True)
        queue.mkdir(parents=True, exist_ok=True)
    else:
        from evalsite.celery import app

        app.control.purge()  # messages left by an earlier run would hit a fresh database
    return env


class SharedWorker:
    """One worker reused across tests; stopped while a test runs workers of its own, so those
    are the only consumers of the queue, and started again lazily."""

    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.env, self.log_dir, self.worker, self.starts = env, log_dir, None, 0

    def get(self) -> Worker:
        if self.worker is not None and self.worker.proc.poll() is not None:
            raise AssertionError(f"shared worker died:\n{self.worker.log.read_text()[-4000:]}")
        if self.worker is None:
            self.starts += 1
            self.worker = Worker(self.env, 16, self.log_dir / f"shared-{self.starts}.log")
        return self.worker

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None


@pytest.fixture(scope="session")
def shared_worker(worker_env, tmp_path_factory) -> Iterator[SharedWorker]:
    shared = SharedWorker(worker_env, tmp_path_factory.mktemp("workers"))
    yield shared
    shared.stop()


@pytest.fixture
def start_worker(shared_worker, tmp_path) -> Iterator[Callable[..., Worker]]:
    """Start worker processes (extra env per call); all are stopped at the end of the test.
    The shared worker is stopped first so these are the queue's only consumers."""
    shared_worker.stop()
    started: list[Worker] = []

    def start(concurrency: int = 8, **env: str) -> Worker:
        w = Worker(shared_worker.env | env, concurrency, tmp_path / f"worker-{len(started)}.log")
        started.append(w)
        return w

    yield start
    for w in started:
        w.stop()


@pytest.fixture(autouse=True)
def _no_stray_worker(request) -> None:
    """A test that commits data but runs evaluations in-process must not race the shared
    worker for them: stop it (it restarts lazily for the next test that asks for a worker)."""
    names = request.fixturenames
    if "worker" in names or "start_worker" in names:
        return
    if "transactional_db" in names or "live_server" in names:
        request.getfixturevalue("shared_worker").stop()


@pytest.fixture
def worker(shared_worker, transactional_db, fake_judge) -> Worker:
    """A running worker for tests that need one; the test's data is committed so it sees it."""
    return shared_worker.get()
