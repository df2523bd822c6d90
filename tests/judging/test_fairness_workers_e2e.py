"""One fair share across two real worker processes (Redis broker: the shared ledger,
judging/fair_ledger.py), with the fake judge over HTTP."""

from __future__ import annotations

import pytest
import redis
from django.conf import settings as django_settings

from judging.fair_ledger import RedisLedger, namespace, ttl_seconds
from runs.models import CriterionVerdict, Evaluation, Status
from tests.conftest import wait_for
from tests.judging.test_fairness_e2e import _bulk, _judge_env

pytestmark = [
    pytest.mark.worker,
    pytest.mark.skipif(
        not django_settings.CELERY_BROKER_URL.startswith("redis"), reason="needs the Redis broker"
    ),
]

B_CRITERIA = [{"description": 'Mentions "refund" [[tag:b]]', "required": True}]
A_CRITERIA = [{"description": 'Mentions "refund" [[tag:a]]', "required": True}]


def test_a_backlog_parked_in_one_worker_is_spread_to_another_and_shared_fairly(
    start_worker, transactional_db, fake_judge, make_rubric, make_run, other_team
):
    """Worker 1 (4 threads) takes team B's flood of 400 runs alone: its judge slots fill and
    most of B's messages are parked in its memory, the broker empty. Worker 2 starts then:
    nothing reaches it from the broker, yet it judges B's work too, because worker 1 hands
    parked units older than EVALSITE_FAIR_PARK_SECONDS back to the broker once the ledger lists
    another live process (not after the sweeper's EVALSITE_REQUEUE_AFTER). Team A's runs, sent
    meanwhile, all finish; B never has more calls in flight than the two workers' capacity;
    every evaluation is judged once."""
    env = _judge_env(fake_judge) | {"EVALSITE_FAIR_PARK_SECONDS": "1"}
    fake_judge.set_latency(1.0)
    first = start_worker(concurrency=4, **env)
    _bulk(other_team, make_rubric(name="B", criteria=B_CRITERIA, team=other_team), 400, "b")
    wait_for(
        lambda: fake_judge.state.in_flight >= 4, timeout=60,
        message="team B's calls to fill worker 1's judge slots",
    )  # fmt: skip
    second = start_worker(concurrency=4, **env)
    a_rubric = make_rubric(name="A", criteria=A_CRITERIA)
    a_runs = [
        make_run(rubric=a_rubric.slug, external_id=f"a-{i}", output=f"Your refund {i} was sent.")
        for i in range(10)  # distinct outputs: no verdict reused
    ]
    fake_judge.set_latency(0.05)

    client = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    ledger = RedisLedger(client, namespace(), ttl_seconds())  # a reader of the shared ledger
    holding_b: set[str] = set()  # processes seen holding B's claims
    most_b_claims = 0

    def look() -> bool:
        nonlocal most_b_claims
        b_claims = 0
        for proc, fields in ledger.holdings().items():
            held = fields.get(f"h:claims:{other_team.id}", 0)
            b_claims += held
            if held:
                holding_b.add(proc)
        most_b_claims = max(most_b_claims, b_claims)
        return not Evaluation.objects.exclude(status__in=[Status.SUCCEEDED, Status.FAILED]).exists()

    wait_for(look, timeout=240, interval=0.02, message="every evaluation to end")
    client.close()

    a = Evaluation.objects.filter(run__in=a_runs)
    assert a.count() == 10 and not a.exclude(status=Status.SUCCEEDED).exists()
    b = Evaluation.objects.filter(team=other_team)
    assert b.count() == 400 and not b.exclude(status=Status.SUCCEEDED).exists()
    assert set(Evaluation.objects.values_list("attempts", flat=True)) == {1}
    assert CriterionVerdict.objects.count() == 410
    assert fake_judge.stats()["completions"] == 410
    handed = "parked evaluation(s) back to the broker" in first.log.read_text()
    assert handed, "worker 1 handed parked work back"
    assert len(holding_b) == 2, f"both workers held B's claims (seen: {holding_b})"
    by_tag = fake_judge.stats()["max_in_flight_by"]
    print(f"\nmost in flight: {by_tag}; most of B's claims held at once: {most_b_claims}")
    assert 0 < by_tag["b"] <= 8, "B's calls in flight within both workers' capacity (4 + 4)"
    assert most_b_claims <= 2 * 16, "B's claims within the ledger's ceiling"
    second.stop()
