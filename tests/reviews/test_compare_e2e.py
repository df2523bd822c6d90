"""End to end with a real Celery worker, a real broker and the fake judge over HTTP (CI runs it
on PostgreSQL + Redis too): label 20 runs, add an example, compare a draft with the current
version, read the flip table through the API, publish through the gate."""

from __future__ import annotations

import pytest

from reviews.models import Comparison, GateState
from reviews.services import Reviewer, review_confirm
from rubrics.examples import example_add
from rubrics.models import RubricVersion
from runs.models import Evaluation, Status
from tests.api_client import assert_error
from tests.conftest import SUPPORT_CRITERIA, wait_for

from .conftest import FAILING, PASSING
from .test_compare import DRAFT

pytestmark = pytest.mark.worker


def _all_judged() -> bool:
    return not Evaluation.objects.filter(status__in=[Status.QUEUED, Status.RUNNING]).exists()


def _report_done(api, comparison_id: str) -> dict | None:
    body = api.get(f"/comparisons/{comparison_id}").json()
    return body if body["done"] else None


def test_label_compare_and_publish_through_the_gate(worker, make_rubric, make_run, api, teammate):
    rubric = make_rubric(criteria=SUPPORT_CRITERIA, alignment_mode="off")
    passing = [make_run(rubric=rubric.slug, output=f"{PASSING} ({i})") for i in range(10)]
    failing = [make_run(rubric=rubric.slug, output=f"{FAILING} ({i})") for i in range(10)]
    wait_for(_all_judged, timeout=120, message="20 runs judged")
    reviewer = Reviewer(user=teammate)
    for run in passing + failing:
        run.refresh_from_db()
        for key in ("c1", "c2", "c3"):
            review_confirm(run=run, criterion_key=key, reviewer=reviewer)
    example_add(
        rubric=rubric, criterion_key="c2", excerpt="Your order number is 77.", satisfied=True,
        reason="names the order number", user=teammate,
    )  # fmt: skip

    # Compare: the draft rewords c2 (with the new example); c1 and c3 are reused on both sides.
    started = api.post(
        "/comparisons",
        {
            "rubric": rubric.slug,
            "b": {"draft": {"criteria": DRAFT}},
            "sample": {"kind": "labelled"},
        },
    )
    assert started.status_code == 202, started.content
    report = wait_for(lambda: _report_done(api, started.json()["id"]), timeout=120)
    c2 = next(c for c in report["criteria"] if c["criterion_id"] == "c2")
    assert (c2["fail_to_pass"], c2["pass_to_fail"]) == (10, 0)
    assert sorted(c2["fail_to_pass_runs"]) == sorted(str(r.pk) for r in failing)
    assert c2["human_a"]["agreement"] == 1.0 and c2["human_b"]["agreement"] == 0.5
    a, b = report["progress"]["a"]["actual"], report["progress"]["b"]["actual"]
    assert a["criterion_judgements"] == 0 and a["criteria_reused"] == 60
    assert b["criterion_judgements"] == 20 and b["criteria_reused"] == 40
    draft_number = report["b"]["version"]
    assert RubricVersion.objects.get(rubric=rubric, number=draft_number).examples.count() == 1

    # The gate refuses that draft: the worker's last judgement settles the check.
    assert api.put(f"/rubrics/{rubric.slug}/gate", {"min_agreement": 0.9}).status_code == 200
    publish = f"/rubrics/{rubric.slug}/versions/{draft_number}/publish"
    first = api.post(publish, {})
    # 202 "checking" while the worker judges; when every judgement is reused the check can
    # end before the request does and the first answer is already the refusal (409).
    assert first.status_code in (202, 409), first.content
    assert first.status_code == 409 or first.json()["state"] == "checking"
    wait_for(
        lambda: Comparison.objects.filter(purpose="gate", gate_state=GateState.FAILED).exists(),
        timeout=120,
        message="the gate check to fail",
    )
    refused = assert_error(api.post(publish, {}), 409)
    assert [
        f["criterion_id"] for f in refused["extra"]["comparison"]["gate_result"]["failing"]
    ] == ["c2"]

    # A draft that agrees as well is published by the worker's hook, no second request needed.
    harmless = [dict(c) for c in DRAFT]
    harmless[1]["description"] = 'Gives the "order number" (the digits)'
    draft = api.post(f"/rubrics/{rubric.slug}/drafts", {"criteria": harmless}).json()
    answer = api.post(f"/rubrics/{rubric.slug}/versions/{draft['number']}/publish", {})
    assert answer.status_code == 202 and answer.json()["state"] == "checking"

    def published() -> bool:
        rubric.refresh_from_db()
        return rubric.current_version.number == draft["number"]

    wait_for(published, timeout=120, message="the passing draft to be published")
    version = RubricVersion.objects.get(rubric=rubric, number=draft["number"])
    assert version.published and "passed the publishing gate" in version.gate_note
    # Nothing of the comparisons became a run's result.
    assert not Evaluation.objects.filter(calibration=True, is_current=True).exists()
