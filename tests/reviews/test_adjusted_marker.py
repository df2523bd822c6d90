"""A result reviewers changed is marked "adjusted" with the judge's own beside it: in the API
(GET /api/runs, GET /api/runs/{id}), on the runs list and on the run page."""

import pytest

from reviews.services import override_create
from tests.page_helpers import signed_in

from .conftest import FAILING

pytestmark = pytest.mark.django_db


def test_the_api_marks_an_overridden_run_adjusted_with_the_judges_result(api, judged_run, reviewer):
    run = judged_run(output=FAILING)  # c2 (required) fails: the run fails
    untouched = judged_run()
    override_create(
        run=run, criterion_key="c2", satisfied=True, note="It is there", reviewer=reviewer
    )

    one = api.get(f"/runs/{run.id}").json()
    assert one["passed"] is True and one["adjusted"] is True
    assert one["judge"]["passed"] is False and one["judge"]["score"] == 0.0

    items = {item["id"]: item for item in api.get("/runs").json()["items"]}
    assert items[str(run.id)]["adjusted"] is True
    assert items[str(run.id)]["judge"]["passed"] is False
    assert items[str(untouched.id)]["adjusted"] is False
    assert items[str(untouched.id)]["judge"]["passed"] is True


def test_agreeing_with_the_judge_is_not_an_adjustment(api, judged_run, reviewer):
    run = judged_run(output=FAILING)
    override_create(run=run, criterion_key="c2", satisfied=False, note="", reviewer=reviewer)
    assert api.get(f"/runs/{run.id}").json()["adjusted"] is False


def test_the_runs_list_and_the_run_page_show_the_marker(teammate, judged_run, reviewer):
    run = judged_run(output=FAILING, external_id="reviewed-run")
    judged_run(external_id="plain-run")
    override_create(
        run=run, criterion_key="c2", satisfied=True, note="It is there", reviewer=reviewer
    )
    client = signed_in(teammate)

    page = client.get("/runs/").content.decode()
    assert page.count('data-testid="adjusted"') == 1
    assert "the judge's own: failed" in page

    detail = client.get(f"/runs/{run.id}/").content.decode()
    assert 'data-testid="adjusted"' in detail and "adjusted: now passed" in detail
