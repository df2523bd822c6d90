"""A worker after a broker outage heals itself or exits non-zero, never lingers idle.

Each test starts a redis-server of its own on a free port (never the machine's shared one), points
this process and its workers at it, kills it and starts it again on the same port. Short
watchdog and heartbeat periods come from the workers' environment.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from evalsite.celery import app
from judging.liveness import worker_missing_for
from judging.worker_watch import EXIT_STALLED
from runs.models import AgentRun, Evaluation, Status
from tests.conftest import wait_for

pytestmark = [
    pytest.mark.worker,
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server"),
]

FAST_WATCH = {"EVALSITE_WORKER_BEAT_SECONDS": "0.5", "EVALSITE_WORKER_STALL_SECONDS": "3"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A redis-server of the test's own, without persistence: a restart loses every message,
    the worst a broker outage can do."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.port, self.starts = folder, free_port(), 0
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self, password: str = "") -> None:
        self.starts += 1
        log = open(self.folder / f"redis-{self.port}-{self.starts}.log", "wb")  # noqa: SIM115
        cmd = [
            "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
            "--dir", str(self.folder), "--save", "", "--appendonly", "no",
        ]  # fmt: skip
        if password:
            cmd += ["--requirepass", password]
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        client = redis.Redis(port=self.port, password=password or None, socket_timeout=0.5)
        wait_for(lambda: self._pings(client), timeout=15, message="redis-server to answer")

    def _pings(self, client: redis.Redis) -> bool:
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False

    def kill(self) -> None:
        """SIGKILL: the broker vanishes with every message it held."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def redis_servers(tmp_path) -> Iterator[Callable[[], RedisServer]]:
    servers: list[RedisServer] = []

    def make() -> RedisServer:
        server = RedisServer(tmp_path)
        server.start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.kill()


@pytest.fixture
def own_redis(redis_servers) -> Iterator[RedisServer]:
    """A redis-server of this test's own, this process's broker while the test runs."""
    server = redis_servers()
    keys = ("broker_url", "broker_transport", "broker_transport_options")
    saved = {k: app.conf[k] for k in keys}
    app.conf.update(broker_url=server.url, broker_transport=None, broker_transport_options={})
    app._after_fork()  # drop the pooled connections to the session's broker
    yield server
    app.conf.update(saved)
    app._after_fork()


def answer(n: int) -> str:
    """A different output each: no run's verdicts are reused for another's."""
    return f"Your refund for order number {1000 + n} was sent today, thanks for waiting."


def judged(runs: list[AgentRun]) -> bool:
    ids = [r.id for r in runs]
    return Evaluation.objects.filter(run_id__in=ids, status=Status.SUCCEEDED).count() == len(ids)


def test_after_a_broker_outage_every_run_is_judged_exactly_once_within_a_minute(
    start_worker, transactional_db, fake_judge, own_redis, make_rubric, make_run
):
    env = {"CELERY_BROKER_URL": own_redis.url, **FAST_WATCH}
    workers = [start_worker(concurrency=4, **env)]
    rubric = make_rubric()
    runs: list[AgentRun] = []
    # The broker dies while runs arrive and the worker acknowledges them.
    killer = threading.Timer(1.0, own_redis.kill)
    killer.start()
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        runs.append(make_run(rubric=rubric.slug, output=answer(len(runs))))
    killer.join()
    own_redis.start()
    back = time.monotonic()
    runs += [make_run(rubric=rubric.slug, output=answer(len(runs) + i)) for i in range(5)]
    print(f"sent 5 runs in {time.monotonic() - back:.1f} s after the broker came back")

    def supervised_and_judged() -> bool:
        # What docker-compose's `restart: unless-stopped` does for a worker that exits.
        if workers[-1].proc.poll() is not None:
            assert workers[-1].proc.returncode != 0
            print(f"worker exited {workers[-1].proc.returncode} at {time.monotonic() - back:.1f} s")
            workers.append(start_worker(concurrency=4, **env))
        return judged(runs)

    wait_for(supervised_and_judged, timeout=60, message="every run judged after the outage")
    print(f"{len(runs)} runs judged {time.monotonic() - back:.1f} s after the broker came back")
    assert fake_judge.stats()["completions"] == len(runs)
    assert Evaluation.objects.filter(run__in=runs).count() == len(runs)


def test_the_heartbeat_stops_with_consuming_and_a_worker_that_cannot_consume_exits_non_zero(
    start_worker, transactional_db, own_redis, redis_servers, settings
):
    store = redis_servers()  # the heartbeat's store stays up while the broker goes
    settings.EVALSITE_RATELIMIT_URL = store.url
    worker = start_worker(
        concurrency=2, CELERY_BROKER_URL=own_redis.url, EVALSITE_RATELIMIT_URL=store.url,
        **FAST_WATCH,
    )  # fmt: skip
    wait_for(lambda: not worker_missing_for(2), timeout=15, message="the first heartbeat")

    own_redis.kill()
    wait_for(lambda: worker_missing_for(2), timeout=15, message="the heartbeat to stop")
    assert worker.proc.poll() is None  # a broker that is away: Celery's reconnect loop waits

    # The broker answers again, but this worker can never consume from it.
    own_redis.start(password="not-the-workers")
    wait_for(lambda: worker.proc.poll() is not None, timeout=30, message="the worker to exit")
    assert worker.proc.returncode == EXIT_STALLED
    assert "does not consume" in worker.log.read_text()
    assert worker_missing_for(2)
