"""Failed criteria opens on the newest version with judged runs and says so; a version with no
judged runs says what to do (re-score with it, or pick a version that has some). Real ingest
and judge path (fake judge over HTTP), Django client."""

from __future__ import annotations

import pytest
from django.urls import reverse

from rubrics.services import rubric_set_criteria
from runs.models import RescoreBatch
from tests.page_helpers import judged_run, signed_in

pytestmark = pytest.mark.django_db

NEWER_CRITERIA = "- Mentions the order number\n- Says when the refund arrives"


@pytest.fixture
def judged_v1_then_v2(make_rubric, make_run, fake_judge):
    """Two runs judged on v1, then a v2 with no judged run."""
    rubric = make_rubric()
    for i in range(2):
        judged_run(make_run, rubric=rubric.slug, output=f"Refund sent, order number {i}.")
    rubric_set_criteria(rubric=rubric, criteria=NEWER_CRITERIA)
    rubric.refresh_from_db()
    assert rubric.current_version.number == 2
    return rubric


def test_it_opens_on_the_newest_version_with_judged_runs_and_says_which_has_none(
    owner, judged_v1_then_v2
):
    rubric = judged_v1_then_v2

    response = signed_in(owner).get(reverse("failures"), {"rubric": str(rubric.id)})

    assert response.context["version"].number == 1
    html = response.content.decode()
    assert "Showing version 1, the newest with judged runs (version 2 has none yet)." in html
    assert 'data-testid="failure-rates"' in html and 'data-testid="version-unjudged"' not in html
    assert [r.judged for r in response.context["rows"]] == [2, 2, 2]


def test_several_newer_versions_without_judged_runs_are_named(owner, judged_v1_then_v2):
    rubric = judged_v1_then_v2
    rubric_set_criteria(rubric=rubric, criteria=NEWER_CRITERIA + "\n- Is polite")

    html = signed_in(owner).get(reverse("failures"), {"rubric": str(rubric.id)}).content.decode()

    assert "(versions 2, 3 have none yet)" in html


def test_picking_a_version_without_judged_runs_offers_a_rescore_with_it_and_the_judged_ones(
    owner, judged_v1_then_v2
):
    rubric = judged_v1_then_v2

    response = signed_in(owner).get(reverse("failures"), {"rubric": str(rubric.id), "version": 2})

    html = response.content.decode()
    assert "No run has been judged on version 2 yet" in html
    assert 'data-testid="failure-rates"' not in html  # no table of dashes
    assert 'name="scope" value="rubric"' in html and 'name="target_version" value="2"' in html
    assert "Re-score this rubric's runs with v2" in html
    assert f'?rubric={rubric.id}&amp;version=1">v1</a> (2 runs)' in html
    assert "Showing version" not in html


def test_the_rescore_button_rescores_the_rubrics_runs_with_that_version(
    owner, team, judged_v1_then_v2
):
    rubric = judged_v1_then_v2

    response = signed_in(owner).post(
        reverse("rescore_start"),
        {"scope": "rubric", "rubric": str(rubric.id), "target_version": "2", "next": "/failures/"},
    )

    batch = RescoreBatch.objects.get(team=team)
    assert response.status_code == 302 and response.url == f"/batches/{batch.pk}/"
    assert (batch.rubric_version.number, batch.total) == (2, 2)


def test_a_rescore_with_a_version_the_rubric_does_not_have_is_refused(owner, judged_v1_then_v2):
    rubric = judged_v1_then_v2
    client = signed_in(owner)

    response = client.post(
        reverse("rescore_start"),
        {"scope": "rubric", "rubric": str(rubric.id), "target_version": "9", "next": "/failures/"},
        follow=True,
    )

    assert "rubric has no version 9" in response.content.decode()
    assert not RescoreBatch.objects.exists()


def test_a_viewer_is_told_an_editor_can_rescore(viewer, judged_v1_then_v2):
    rubric = judged_v1_then_v2

    html = (
        signed_in(viewer)
        .get(reverse("failures"), {"rubric": str(rubric.id), "version": 2})
        .content.decode()
    )

    assert "An editor can re-score this rubric's runs with it." in html
    assert 'name="target_version"' not in html


def test_a_rubric_with_no_judged_runs_at_all_says_so(owner, make_rubric):
    rubric = make_rubric()

    html = signed_in(owner).get(reverse("failures"), {"rubric": str(rubric.id)}).content.decode()

    assert "No run has been judged on version 1 yet" in html
    assert "No version of this rubric has judged runs yet" in html
