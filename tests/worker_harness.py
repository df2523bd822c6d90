"""The worker harness: real `celery -A evalsite worker` processes against the test database
and broker. tests/conftest.py imports the fixtures, so every test may ask for them:

- ``worker``: the shared worker (one per session, started lazily), with committed test data;
- ``start_worker``: workers of the test's own (extra environment per call), the queue's only
  consumers while the test runs;
- ``_no_stray_worker`` (autouse): stops the shared worker before a test that commits data but
  judges in-process, so the two never race for the same evaluations.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection

from evalsite.celery import app
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent


def _database_url() -> str:
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
def start_worker(shared_worker, transactional_db, tmp_path) -> Iterator[Callable[..., Worker]]:
    """Start worker processes (extra env per call); all are stopped at the end of the test.
    The shared worker is stopped first so these are the queue's only consumers. Set up after
    the test database (``transactional_db``), so it is torn down before it: the workers stop
    before the database is flushed, and a worker still judging a test's backlog never holds
    locks that deadlock the flush's TRUNCATE (seen on PostgreSQL)."""
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
    marker = request.node.get_closest_marker("django_db")
    committed = marker is not None and (
        marker.kwargs.get("transaction") or marker.kwargs.get("serialized_rollback")
    )
    if committed or "transactional_db" in names or "live_server" in names:
        request.getfixturevalue("shared_worker").stop()


@pytest.fixture
def worker(shared_worker, transactional_db, fake_judge) -> Worker:
    """A running worker for tests that need one; the test's data is committed so it sees it."""
    return shared_worker.get()
