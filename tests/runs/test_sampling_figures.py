"""Runs left out by sampling never count as passed or failed in any figure."""

from __future__ import annotations

import pytest

from reviews.selectors.agreement import rubric_agreement
from reviews.selectors.queue import QueueFilters, review_queue
from runs.models import Status
from runs.selectors.dashboard import home_overview
from runs.selectors.rubric_stats import rubric_failure_rates, rubric_rows
from tests.page_helpers import judge_pending

pytestmark = pytest.mark.django_db

PASSING = "Your refund for order number 1234 was sent today, thanks for waiting."
FAILING = "We will look into it. Thanks!"  # fails c1 and c2 of the support criteria


@pytest.fixture
def mixed(fake_judge, team, make_rubric, make_run):
    """A rubric sampling half its runs; passing and failing outputs on both sides."""
    rubric = make_rubric(sample_rate=50)
    runs = [
        make_run(rubric=rubric.slug, external_id=f"m-{i}", output=PASSING if i % 2 else FAILING)
        for i in range(40)
    ]
    judged = [judge_pending(r) for r in runs if r.status == Status.QUEUED]
    left_out = [r for r in runs if r.status == Status.NOT_SAMPLED]
    assert judged and left_out, "the hash split these 40 runs both ways"
    passed = sum(1 for r in judged if r.passed)
    assert 0 < passed < len(judged)
    return rubric, judged, left_out, passed


def test_the_home_figures_count_only_the_judged_runs(team, mixed):
    rubric, judged, left_out, passed = mixed

    overview = home_overview(team=team)

    assert overview.runs_total == len(judged) + len(left_out)
    assert (overview.judged_total, overview.passed_total) == (len(judged), passed)
    [series] = overview.pass_rates
    assert sum(p for p, _ in series["points"].values()) == passed
    assert sum(j for _, j in series["points"].values()) == len(judged)
    assert dict(overview.statuses)[Status.SUCCEEDED] == len(judged)


def test_the_rubric_list_and_failure_rates_count_only_the_judged_runs(team, mixed):
    rubric, judged, _, passed = mixed

    [row] = rubric_rows(team=team)
    failures = {
        f.criterion.key: f
        for f in rubric_failure_rates(rubric=rubric, version=rubric.current_version)
    }

    assert (row.judged, row.passed) == (len(judged), passed)
    assert {f.judged for f in failures.values()} == {len(judged)}
    assert failures["c1"].failed == len(judged) - passed


def test_the_runs_filters_pass_and_fail_only_judged_runs(api, mixed):
    _, judged, left_out, passed = mixed

    def listed(**query):
        return {i["id"] for i in api.get("/runs", limit=100, **query).json()["items"]}

    assert listed(passed="true") == {str(r.pk) for r in judged if r.passed}
    assert listed(passed="false") == {str(r.pk) for r in judged if not r.passed}
    assert listed(status="not_sampled") == {str(r.pk) for r in left_out}


def test_review_queue_agreement_and_exports_leave_out_the_runs_not_judged(api, team, mixed):
    rubric, judged, left_out, _ = mixed

    queue = review_queue(rubric=rubric, filters=QueueFilters())
    report = rubric_agreement(rubric=rubric, version=rubric.current_version)
    export = api.get(f"/rubrics/{rubric.slug}/reviews.csv")

    assert queue.total == len(judged)
    assert {str(item.run.pk) for item in queue.items} <= {str(r.pk) for r in judged}
    assert all(c.labelled == 0 for c in report.criteria)
    assert export.status_code == 200
    body = b"".join(export.streaming_content).decode()
    assert not any(str(r.pk) in body for r in left_out)
