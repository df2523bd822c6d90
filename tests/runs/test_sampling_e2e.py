"""End to end with a real worker: at 20 % sampling the judge sees only the sampled runs."""

from __future__ import annotations

import pytest

from runs.models import AgentRun, Evaluation, Status
from tests.conftest import run_payload, wait_for

pytestmark = pytest.mark.worker

RUNS = 500
RATE = 20


def test_five_hundred_runs_at_twenty_percent_reach_the_judge_about_one_hundred_times(
    worker, api, fake_judge, team, make_rubric
):
    rubric = make_rubric(sample_rate=RATE)
    items = [
        run_payload(
            rubric=rubric.slug,
            external_id=f"e2e-{i}",
            output=f"Your refund for order number {i} was sent today, thanks.",
        )
        for i in range(RUNS)  # distinct outputs: no verdict is reused from another run
    ]

    answer = api.post("/runs/bulk", {"runs": items})

    assert answer.status_code == 201, answer.content
    statuses = [item["status"] for item in answer.json()["items"]]
    sampled = statuses.count("queued")
    assert sampled + statuses.count("not_sampled") == RUNS
    # Each run's share is decided by its hash: about RATE % of them, not exactly. 35 is four
    # standard deviations of a binomial(500, 0.2) around its mean of 100.
    assert abs(sampled - RUNS * RATE / 100) <= 35, sampled
    runs = AgentRun.objects.filter(team=team)
    wait_for(
        lambda: runs.filter(status=Status.SUCCEEDED).count() == sampled,
        timeout=180,
        message=f"{sampled} sampled runs judged",
    )
    # The judge got one call per sampled run (batched strategy) and none for the others.
    assert fake_judge.stats()["completions"] == sampled
    print(f"\n{RUNS} runs at {RATE} %: {sampled} sampled, judge completions {sampled}")
    assert Evaluation.objects.filter(team=team).count() == sampled
    assert set(Evaluation.objects.values_list("status", flat=True)) == {Status.SUCCEEDED}
    assert runs.filter(status=Status.NOT_SAMPLED).count() == RUNS - sampled
    assert not Evaluation.objects.filter(run__status=Status.NOT_SAMPLED).exists()
    for run in runs.filter(status=Status.NOT_SAMPLED)[:50]:
        assert run.sampling["sampled"] is False and run.sampling["bucket"] >= RATE
