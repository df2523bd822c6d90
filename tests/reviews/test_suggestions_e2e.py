"""End to end with a real Celery worker, a real broker and the fake judge over HTTP (CI runs it
on PostgreSQL + Redis too): reviewers disagree with the judge on a criterion, the API asks for
an edit, the worker's job fills it in, accepting it compares a draft with the current version on
the labelled runs and the report shows agreement before and after."""

from __future__ import annotations

import pytest

from reviews.services import Reviewer, override_create, review_confirm
from runs.models import Evaluation, Status
from tests.conftest import SUPPORT_CRITERIA, wait_for

from .conftest import FAILING, PASSING

pytestmark = pytest.mark.worker


def _all_judged() -> bool:
    return not Evaluation.objects.filter(status__in=[Status.QUEUED, Status.RUNNING]).exists()


def _listed(api, rubric, status: str) -> dict | None:
    items = api.get(f"/rubrics/{rubric.slug}/suggestions").json()["items"]
    return items[0] if items and items[0]["status"] == status else None


def test_disagreements_become_a_suggested_edit_a_draft_and_a_comparison(
    worker, make_rubric, make_run, api, teammate
):
    rubric = make_rubric(criteria=SUPPORT_CRITERIA, alignment_mode="off")
    passing = [make_run(rubric=rubric.slug, output=f"{PASSING} ({i})") for i in range(2)]
    failing = [make_run(rubric=rubric.slug, output=f"{FAILING} ({i})") for i in range(3)]
    wait_for(_all_judged, timeout=120, message="5 runs judged")
    reviewer = Reviewer(user=teammate)
    for run in passing:
        review_confirm(run=run, criterion_key="c2", reviewer=reviewer)
    for run in failing:
        run.refresh_from_db()
        override_create(
            run=run, criterion_key="c2", satisfied=True, reviewer=reviewer,
            note="The task names the order already: no need to repeat it.",
        )  # fmt: skip

    asked = api.post(f"/rubrics/{rubric.slug}/suggestions", {})
    assert asked.status_code == 202, asked.content
    ready = wait_for(lambda: _listed(api, rubric, "ready"), timeout=120, message="edit ready")
    assert (ready["criterion_id"], ready["kind"]) == ("c2", "reword")
    assert ready["text"] == "Gives the order number" and ready["tokens"] > 0
    assert sorted(ready["evidence"]) == sorted(str(r.pk) for r in failing)

    accepted = api.post(f"/rubrics/{rubric.slug}/suggestions/{ready['id']}/accept")
    assert accepted.status_code == 200, accepted.content
    comparison_id = accepted.json()["comparison_id"]
    report = wait_for(
        lambda: (r := api.get(f"/comparisons/{comparison_id}").json())["done"] and r,
        timeout=120,
        message="the comparison judged",
    )
    c2 = next(c for c in report["criteria"] if c["criterion_id"] == "c2")
    assert c2["human_a"]["agreement"] == 0.4 and c2["human_b"]["agreement"] == 1.0
    assert c2["fail_to_pass"] == 3
    assert report["b"]["version"] == accepted.json()["draft_version"]
