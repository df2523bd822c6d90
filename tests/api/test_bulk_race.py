"""Concurrent POST /api/runs/bulk calls with overlapping external ids answer as the sequential
case would: each external id is created by exactly one call, the others see that run (same
content) or report a conflict on the item (other content, nothing stored); no run is stored
twice and no call answers 500.

The calls run in threads released together by a barrier, each with its own database
connection, on committed data (a transactional test). On PostgreSQL the losing insert waits
for the winner's commit and then collides on the unique key: the path this tests.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest
from django.db import connection

from runs.models import AgentRun, Evaluation
from tests.api_client import Api
from tests.conftest import run_payload

pytestmark = pytest.mark.django_db(transaction=True)

CALLS = 4
SPAN = 120  # runs per call; each call overlaps the next by half


def post_together(key: str, bodies: list[dict[str, Any]]) -> list[Any]:
    barrier = threading.Barrier(len(bodies))
    answers: list[Any] = [None] * len(bodies)

    def call(i: int) -> None:
        try:
            api = Api(key)
            api.client.raise_request_exception = False
            barrier.wait(timeout=30)
            answers[i] = api.post("/runs/bulk", bodies[i])
        finally:
            connection.close()

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert all(a is not None for a in answers), "a call did not answer"
    return answers


def ids_of(call: int, prefix: str) -> list[str]:
    start = call * SPAN // 2
    return [f"{prefix}-{i}" for i in range(start, start + SPAN)]


@pytest.mark.parametrize("round_", range(3))
def test_overlapping_bulks_with_the_same_content_create_each_run_once(api_key, make_rubric, round_):
    rubric = make_rubric()
    prefix = f"same{round_}"
    bodies = [
        {"runs": [run_payload(external_id=x, rubric=rubric.slug) for x in ids_of(c, prefix)]}
        for c in range(CALLS)
    ]

    answers = post_together(api_key, bodies)

    assert {a.status_code for a in answers} <= {200, 201}, [a.content[:300] for a in answers]
    created: Counter[str] = Counter()
    run_of: dict[str, set[str]] = {}
    for answer in answers:
        items = answer.json()["items"]
        # 201 when the call created a run, 200 when every item named a stored one.
        assert answer.status_code == (201 if any(i["created"] for i in items) else 200)
        for item in items:
            created[item["external_id"]] += item["created"]
            run_of.setdefault(item["external_id"], set()).add(item["id"])
    every = {x for c in range(CALLS) for x in ids_of(c, prefix)}
    assert set(created) == every and set(created.values()) == {1}
    assert all(len(ids) == 1 for ids in run_of.values())
    stored = AgentRun.objects.filter(external_id__startswith=f"{prefix}-")
    assert stored.count() == len(every)
    assert Evaluation.objects.filter(run__in=stored).count() == len(every)


@pytest.mark.parametrize("round_", range(3))
def test_overlapping_bulks_with_other_content_are_all_or_nothing_conflicts(api_key, round_):
    prefix = f"other{round_}"
    bodies = [
        {"runs": [run_payload(external_id=x, output=f"call {c}") for x in ids_of(c, prefix)]}
        for c in range(CALLS)
    ]

    answers = post_together(api_key, bodies)

    codes = [a.status_code for a in answers]
    assert set(codes) <= {201, 422}, [a.content[:300] for a in answers]
    winners = [c for c, code in enumerate(codes) if code == 201]
    stored = {
        r.external_id: r.output_text
        for r in AgentRun.objects.filter(external_id__startswith=f"{prefix}-")
    }
    # As in some sequential order: the winners' ids do not overlap and exactly what they sent
    # is stored, each run once; a loser stored nothing and names only items whose id a winner
    # stored (with other content).
    expected = {x: f"call {c}" for c in winners for x in ids_of(c, prefix)}
    assert winners and len(expected) == SPAN * len(winners)
    assert stored == expected
    for c, answer in enumerate(answers):
        if c in winners:
            continue
        errors = answer.json()["extra"]["errors"]
        assert errors and {e["field"] for e in errors} == {"external_id"}
        clashing = {i for i, x in enumerate(ids_of(c, prefix)) if x in expected}
        assert {e["index"] for e in errors} <= clashing
