"""seed_demo spreads the demo runs over the last 30 days (so every 30-day chart has a trend),
the same way each time, and seeding again changes nothing."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from runs.models import AgentRun, Evaluation

pytestmark = pytest.mark.django_db


def demo_dates() -> dict[str, object]:
    return dict(AgentRun.objects.filter(team__slug="demo").values_list("external_id", "created_at"))


def test_demo_runs_spread_over_the_last_30_days_and_a_second_seed_changes_nothing():
    call_command("seed_demo", runs=20, verbosity=0)
    dates = demo_dates()
    now = timezone.now()
    days = {d.date() for d in dates.values()}

    assert len(dates) == 20 + 12 + 12
    assert len(days) >= 20
    assert min(dates.values()) < now - timedelta(days=28)
    assert max(dates.values()) <= now
    # The evaluations queued at ingest carry their run's date (the usage charts read them).
    for run in AgentRun.objects.filter(team__slug="demo")[:5]:
        assert {e.created_at for e in Evaluation.objects.filter(run=run)} == {run.created_at}

    call_command("seed_demo", runs=20, verbosity=0)
    assert demo_dates() == dates
