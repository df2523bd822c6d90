"""A worker after a PostgreSQL restart gives back what it had in hand at once; judged once each.

The test starts a PostgreSQL cluster of its own (tests/pg_cluster.py: initdb into a temp folder,
a free port; never the machine's shared server), makes it this process's database and its
worker's, and stops and starts it while evaluations are being claimed, judged and written. Short
heartbeat periods come from the worker's environment; the sweeper does not run, so nothing but
the worker itself can bring back an evaluation the restart interrupted.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import dj_database_url
import pytest
from django.core.management import call_command
from django.db import connections
from django.db.utils import load_backend

from judging.liveness import worker_missing_for
from rubrics.services import rubric_create
from runs.models import AgentRun, Evaluation, Status
from runs.payloads import RunPayload
from runs.services import run_ingest
from teams.services import team_create
from tests.conftest import run_payload, wait_for
from tests.pg_cluster import Cluster, initdb_path

pytestmark = [
    pytest.mark.worker,
    pytest.mark.skipif(initdb_path() is None, reason="needs PostgreSQL's binaries (initdb)"),
]

FAST_WATCH = {"EVALSITE_WORKER_BEAT_SECONDS": "0.5", "EVALSITE_WORKER_STALL_SECONDS": "3"}


@pytest.fixture
def own_postgres(transactional_db, django_db_blocker) -> Iterator[Cluster]:
    """A cluster of this test's own, migrated, and this thread's database while the test runs
    (set up after the test database, so put back before it is flushed)."""
    cluster = Cluster()
    saved = connections["default"]
    settings_dict = connections.configure_settings({"default": dj_database_url.parse(cluster.url)})
    own = load_backend(settings_dict["default"]["ENGINE"]).DatabaseWrapper(
        settings_dict["default"], "default"
    )
    with django_db_blocker.unblock():
        connections["default"] = own
        try:
            call_command("migrate", "--noinput", verbosity=0)
            yield cluster
        finally:
            own.close()
            connections["default"] = saved
            cluster.remove()


def make_runs(n: int, start: int) -> list[AgentRun]:
    team = team_create(name="Restart", slug=f"restart-{start}")
    rubric = rubric_create(team=team, name="Thanks", criteria=[{"description": 'Says "thanks"'}])
    return [
        run_ingest(
            team=team,
            payload=RunPayload.model_validate(
                run_payload(rubric=rubric.slug, output=f"Order {start + i} shipped, thanks.")
            ),
        )[0]
        for i in range(n)
    ]


def judged(runs: list[AgentRun]) -> bool:
    ids = [r.id for r in runs]
    return Evaluation.objects.filter(run_id__in=ids, status=Status.SUCCEEDED).count() == len(ids)


def test_after_a_database_restart_every_evaluation_caught_mid_way_is_judged_once_within_seconds(
    own_postgres, start_worker, fake_judge
):
    worker = start_worker(concurrency=4, DATABASE_URL=own_postgres.url, **FAST_WATCH)
    wait_for(lambda: not worker_missing_for(1.5), timeout=15, message="the first heartbeat")
    fake_judge.set_latency(1.0)  # judge calls are in flight when the database goes
    runs = make_runs(12, start=0)
    wait_for(lambda: fake_judge.stats()["requests"] >= 4, timeout=15, message="judge calls")

    own_postgres.stop()
    # Claimed and judged, claimed and not judged, not claimed: all interrupted.
    wait_for(lambda: worker_missing_for(1.5), timeout=15, message="the heartbeat to stop")
    assert worker.proc.poll() is None
    own_postgres.start()
    back = time.monotonic()
    connections["default"].close()  # this thread's connection went with the old server

    # Within seconds, not after the sweeper's EVALSITE_REQUEUE_AFTER or the claims' lease.
    wait_for(lambda: judged(runs), timeout=20, message="every run judged after the restart")
    print(f"{len(runs)} runs judged {time.monotonic() - back:.1f} s after the database came back")
    wait_for(lambda: not worker_missing_for(1.5), timeout=10, message="the heartbeat again")
    assert fake_judge.stats()["completions"] == len(runs)
    assert Evaluation.objects.filter(run__in=runs).count() == len(runs)
