"""The pass-rate charts of the home page, the rubric editor and the failed-criteria page draw
one line per rubric version, never one line across versions, with a labelled marker on the day
a version took over. Real ingest and judge path (fake judge over HTTP), Django client."""

from __future__ import annotations

import re
from datetime import UTC, timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from rubrics.models import RubricVersion
from rubrics.services import rubric_set_criteria
from runs.models import AgentRun, CriterionVerdict
from tests.page_helpers import judged_run, signed_in

pytestmark = pytest.mark.django_db

PASSING = "Your refund for order number 1234 was sent today, thanks for waiting."
FAILING = "Your refund was sent today."


@pytest.fixture
def two_versions(make_rubric, make_run, fake_judge):
    """Two runs judged on v1 five days ago (v1 saved ten days ago), then v2 saved today and one
    run judged on it. Backdated rows are recounted with rollups_rebuild, as after a load."""
    rubric = make_rubric()
    old = [judged_run(make_run, rubric=rubric.slug, output=out) for out in (PASSING, FAILING)]
    rubric_set_criteria(rubric=rubric, criteria='- Says "thanks"')
    rubric.refresh_from_db()
    judged_run(make_run, rubric=rubric.slug, output=PASSING)
    then = timezone.now() - timedelta(days=5)
    AgentRun.objects.filter(pk__in=[r.pk for r in old]).update(created_at=then)
    CriterionVerdict.objects.filter(run_id__in=[r.pk for r in old]).update(run_created_at=then)
    RubricVersion.objects.filter(rubric=rubric, number=1).update(
        created_at=timezone.now() - timedelta(days=10)
    )
    call_command("rollups_rebuild", verbosity=0)
    return rubric


def assert_one_line_per_version_and_the_marker(html: str, name: str = "Support quality") -> None:
    today = timezone.now().astimezone(UTC).date()
    marker = f"{name} · {today:%b %d}: v2 took over from v1"
    svg = re.search(r"<svg class=\"chart\".*?</svg>", html, re.S)
    assert svg, "no chart"
    chart = svg.group(0)
    assert chart.count('<path class="series"') == 2  # v1 and v2, never joined
    assert f'class="version-mark" tabindex="0" role="img" aria-label="{marker}"' in chart
    assert ">v2</text>" in chart  # the marker's visible label: text, not colour alone
    assert f"{name} v1 · 7 days to" in chart and f"{name} v2 · 7 days to" in chart
    legend = re.search(r'data-testid="trend-legend">(.*?)</div>', html, re.S).group(1)
    assert [re.sub(r"<[^>]+>", "", a).strip() for a in legend.split("</a>")[:-1]] == [
        f"{name} v1",
        f"{name} v2",
    ]
    assert f"{marker}: each version is its own line" in html
    assert "version=1" in legend and "version=2" in legend


def test_the_home_page_draws_each_version_as_its_own_line(owner, two_versions):
    response = signed_in(owner).get(reverse("home"))
    o = response.context["o"]
    assert [(s["name"], sum(j for _, j in s["points"].values())) for s in o.pass_rates] == [
        ("Support quality v1", 2),
        ("Support quality v2", 1),
    ]
    assert_one_line_per_version_and_the_marker(response.content.decode())


def test_the_rubric_editor_draws_each_version_as_its_own_line(owner, two_versions):
    response = signed_in(owner).get(reverse("rubric_detail", args=[two_versions.id]))
    assert_one_line_per_version_and_the_marker(response.content.decode())


def test_the_failed_criteria_page_draws_each_version_as_its_own_line(owner, two_versions):
    response = signed_in(owner).get(reverse("failures"), {"rubric": str(two_versions.id)})
    assert_one_line_per_version_and_the_marker(response.content.decode())


def test_a_rubric_judged_on_one_version_has_one_line_and_no_marker(owner, make_rubric, make_run, fake_judge):  # fmt: skip
    rubric = make_rubric(name="Tone <b>")
    judged_run(make_run, rubric=rubric.slug, output=PASSING)
    html = signed_in(owner).get(reverse("rubric_detail", args=[rubric.id])).content.decode()
    assert html.count('<path class="series"') == 1 and 'version-mark"' not in html
    assert "Tone &lt;b&gt; v1" in html and "Tone <b>" not in html
