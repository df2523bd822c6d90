"""A worker whose threads far outnumber its pooled connections (32 threads' worth of work
through a pool of 2) judges everything once, without waiting for a connection: threads hand
their connection back before they wait on a judge, a group commit's leader or a fair turn
(evalsite.dbpool). Real worker, PostgreSQL, the fake judge over HTTP."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from runs.models import Evaluation, Status
from runs.payloads import RunPayload
from runs.services.ingest_many import runs_ingest_many
from tests.conftest import FAKE_MODEL, run_payload, wait_for

pytestmark = [
    pytest.mark.worker,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the pool is PostgreSQL's"),
]


def test_sixteen_threads_on_a_pool_of_two_judge_every_run_once_without_a_pool_timeout(
    start_worker, team, make_rubric, fake_judge
):
    rubric = make_rubric(alignment_mode="off")
    payloads = [
        RunPayload.model_validate(
            run_payload(
                rubric=rubric.slug, output=f"Your refund for order number {i:05d} was sent, thanks."
            )
        )
        for i in range(80)
    ]
    with transaction.atomic():
        runs_ingest_many(team=team, payloads=payloads)
    worker = start_worker(
        concurrency=16,
        EVALSITE_DB_POOL_MAX="2",
        EVALSITE_DB_POOL_MIN="1",
        EVALSITE_DB_POOL_TIMEOUT="5",
        EVALSITE_JUDGE_MODEL=FAKE_MODEL,
        EVALSITE_JUDGE_API_BASE=fake_judge.url,
        EVALSITE_JUDGE_API_KEY="fake-key",
    )

    def settled():
        statuses = list(Evaluation.objects.filter(team=team).values_list("status", "attempts"))
        busy = [s for s, _ in statuses if s in (Status.QUEUED, Status.RUNNING)]
        return None if busy else statuses

    ended = wait_for(settled, timeout=120, message="every evaluation to end")
    assert sorted({s for s, _ in ended}) == [Status.SUCCEEDED]
    assert {attempts for _, attempts in ended} == {1}  # none retried after a pool timeout
    assert "couldn't get a connection" not in worker.log.read_text()
