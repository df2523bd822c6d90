"""Single-run ingest under concurrency: runs stored by concurrent callers in one process share
one transaction (group commit), and every caller is answered as if it had stored alone."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from django.db import connection, transaction

from runs.models import AgentRun, Evaluation, Status
from runs.payloads import RunPayload
from runs.services import evaluations as evaluations_module
from runs.services import ingest
from runs.services.ingest import RunConflict, run_store
from tests.conftest import run_payload
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _payload(**fields: Any) -> RunPayload:
    return RunPayload.model_validate(run_payload(**fields))


def test_concurrent_stores_share_a_write_and_each_caller_gets_its_own_answer(
    team, other_team, make_rubric, monkeypatch
):
    """Seven callers queue behind a first write held open: they go in one group, in which two
    carry the same new external_id (the group's insert collides, so it is retried run by run:
    one stores it, the other is answered with that run), one conflicts with a stored run, and
    two are another team's. Every run lands once, every caller gets its own answer, and each
    team's new evaluations are published on the live lane in one message of that team only."""
    rubric = make_rubric()
    theirs = make_rubric(team=other_team)
    stored, *_ = run_store(team=team, payload=_payload(external_id="old", rubric=rubric.slug))
    published: list[tuple[list[str], bool]] = []
    monkeypatch.setattr(
        evaluations_module,
        "evaluations_publish",
        lambda ids, bulk=True: published.append((ids, bulk)),
    )
    writes: list[int] = []
    first_write, others_queued = threading.Event(), threading.Event()
    original = ingest.runs_store

    def held(built: list[Any], **kw: Any) -> None:
        writes.append(len(built))
        if len(writes) == 1:  # hold the first write until the others queued behind it
            first_write.set()
            assert others_queued.wait(30), "the other callers never queued"
        original(built, **kw)

    monkeypatch.setattr(ingest, "runs_store", held)
    calls = [
        (team, _payload(rubric=rubric.slug, output="first")),
        (team, _payload(rubric=rubric.slug, output="second")),
        (team, _payload(rubric=rubric.slug, external_id="twin")),
        (team, _payload(rubric=rubric.slug, external_id="twin")),
        (team, _payload(rubric=rubric.slug, external_id="old", output="Other content.")),
        (team, _payload(rubric=rubric.slug, output="third")),
        (other_team, _payload(rubric=theirs.slug, output="theirs one")),
        (other_team, _payload(rubric=theirs.slug, output="theirs two")),
    ]
    answers: dict[int, Any] = {}

    def call(i: int) -> None:
        try:
            answers[i] = run_store(team=calls[i][0], payload=calls[i][1])
        except Exception as exc:  # noqa: BLE001 - the caller's answer
            answers[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(calls))]
    threads[0].start()
    assert first_write.wait(30)
    for t in threads[1:]:
        t.start()
    # The conflicting caller is answered before it stores anything; the other six queue.
    wait_for(lambda: len(ingest._stores._pending) == 6, timeout=30, message="6 stores to queue")
    others_queued.set()
    for t in threads:
        t.join()

    assert isinstance(answers[4], RunConflict) and answers[4].run.pk == stored.pk
    twins = [answers[2], answers[3]]
    assert sorted(created for _, created, _ in twins) == [False, True]
    assert twins[0][0].pk == twins[1][0].pk
    for i in (0, 1, 5, 6, 7):
        run, created, built = answers[i]
        assert created and AgentRun.objects.filter(pk=run.pk).exists()
        assert [e.id for e in built] == list(
            Evaluation.objects.filter(run=run).values_list("id", flat=True)
        )
        assert run.team_id == calls[i][0].pk
    assert AgentRun.objects.filter(team=team).count() == 1 + 3 + 1  # old, three new, twin
    assert AgentRun.objects.filter(team=other_team).count() == 2
    assert AgentRun.objects.filter(external_id="twin").count() == 1
    assert writes[0] == 1 and writes[1] == 6, writes  # the six did share a write (then retried)
    team_of = dict(Evaluation.objects.values_list("id", "team_id"))
    new = set(Evaluation.objects.exclude(run=stored).values_list("id", flat=True))
    assert sorted(str(i) for ids, _ in published for i in ids) == sorted(str(i) for i in new)
    for ids, bulk in published:
        assert bulk is False  # single runs stay on the live lane
        assert len({team_of[i] for i in map(uuid.UUID, ids)}) == 1


def test_inside_a_callers_transaction_the_run_is_written_there(team, make_rubric):
    """A caller holding a transaction (no group: another thread's connection could not see or
    undo it) stores the run in that transaction: rolled back with it, nothing left."""
    rubric = make_rubric()
    with pytest.raises(RuntimeError), transaction.atomic():
        run, created, _ = run_store(team=team, payload=_payload(rubric=rubric.slug))
        assert created and AgentRun.objects.filter(pk=run.pk).exists()
        raise RuntimeError("roll back")
    assert not AgentRun.objects.exists()
    assert not Evaluation.objects.filter(status=Status.QUEUED).exists()
