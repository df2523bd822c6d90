"""Deleting runs: one run (API and page) and the team's retention, in batches, keeping
protected runs; nothing that referenced a deleted run is left behind."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.apps import apps
from django.db import models
from django.utils import timezone

from reviews.models import RunReview, VerdictOverride
from reviews.services import override_create
from reviews.services.retention import retention_enforce, run_protection
from reviews.tasks import retention_enforce_task
from rubrics.examples import example_add
from rubrics.models import CriterionExample
from runs.models import AgentRun, CriterionVerdict, Evaluation

from .conftest import FAILING

pytestmark = pytest.mark.django_db


def _age(runs: list[Any], days: int) -> None:
    AgentRun.objects.filter(pk__in=[r.pk for r in runs]).update(
        created_at=timezone.now() - timedelta(days=days)
    )


def _golden(run: Any) -> None:
    RunReview.objects.update_or_create(
        run=run, rubric_id=run.rubric_id, defaults={"team_id": run.team_id, "golden": True}
    )


def _example(run: Any, rubric: Any, user: Any) -> None:
    example_add(
        rubric=rubric, criterion_key="c1", excerpt="refund", satisfied=True,
        reason="says refund", run_id=run.pk, user=user,
    )  # fmt: skip


def _referencing(targets: dict[type[models.Model], set[Any]]) -> list[str]:
    """Rows of any model whose foreign key still points at one of ``targets`` (by model)."""
    left = []
    for model in apps.get_models():
        for f in model._meta.get_fields():
            if isinstance(f, models.ForeignKey) and f.related_model in targets:
                ids = targets[f.related_model]
                if ids and model.objects.filter(**{f"{f.attname}__in": ids}).exists():
                    left.append(f"{model._meta.label}.{f.name}")
    return left


# --- Retention ------------------------------------------------------------------------------


def test_retention_deletes_old_runs_in_several_batches_and_keeps_protected_and_recent_ones(
    team, judged_run, rubric, reviewer, teammate
):
    old = [judged_run() for _ in range(7)]
    labelled, golden, example, recent = (
        judged_run(output=FAILING),
        judged_run(),
        judged_run(),
        judged_run(),
    )
    override_create(
        run=labelled, criterion_key="c2", satisfied=True, note="fine", reviewer=reviewer
    )
    _golden(golden)
    _example(example, rubric, teammate)
    _age([*old, labelled, golden, example], days=40)
    team.retention_days = 30
    team.save()

    report = retention_enforce(batch_size=3)

    assert report.deleted == 7 and report.batches == 3  # 3 + 3 + 1
    left = set(AgentRun.objects.filter(team=team).values_list("pk", flat=True))
    assert left == {labelled.pk, golden.pk, example.pk, recent.pk}
    assert not Evaluation.objects.filter(run_id__in=[r.pk for r in old]).exists()


def test_retention_stops_at_its_cap_per_call_and_the_next_call_goes_on(team, judged_run):
    runs = [judged_run() for _ in range(5)]
    _age(runs, days=10)
    team.retention_days = 1
    team.save()

    first = retention_enforce(batch_size=2, max_batches=2)
    assert (first.deleted, first.batches, first.unfinished) == (4, 2, [str(team.pk)])
    second = retention_enforce(batch_size=2, max_batches=2)
    assert second.deleted == 1 and not AgentRun.objects.filter(team=team).exists()


def test_an_owner_who_opts_in_has_protected_runs_deleted_too_examples_keep_their_text(
    team, judged_run, rubric, reviewer, teammate
):
    labelled, example = judged_run(output=FAILING), judged_run()
    override_create(
        run=labelled, criterion_key="c2", satisfied=True, note="fine", reviewer=reviewer
    )
    _example(example, rubric, teammate)
    _age([labelled, example], days=5)
    team.retention_days, team.retention_delete_protected = 2, True
    team.save()

    assert retention_enforce().deleted == 2
    kept = CriterionExample.objects.get(rubric=rubric)
    assert kept.run_id is None and kept.excerpt == "refund"


def test_the_beat_task_enforces_retention_and_teams_without_retention_keep_everything(
    team, other_team, judged_run, make_run
):
    mine = judged_run()
    theirs = make_run(team=other_team)
    _age([mine, theirs], days=400)
    team.retention_days = 365
    team.save()

    assert retention_enforce_task() == {"deleted": 1, "batches": 1}
    assert not AgentRun.objects.filter(pk=mine.pk).exists()
    assert AgentRun.objects.filter(pk=theirs.pk).exists()


def test_the_retention_task_is_on_the_beat_schedule(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["retention"]
    assert entry["task"] == retention_enforce_task.name


# --- Retention settings ---------------------------------------------------------------------


def test_owners_set_retention_over_the_api_and_bad_values_are_422s_naming_the_field(
    session_api, owner, team
):
    api = session_api(owner)
    answer = api.patch("/team/settings", {"retention_days": 90, "retention_delete_protected": True})
    assert answer.status_code == 200, answer.content
    assert answer.json()["retention_days"] == 90 and answer.json()["retention_delete_protected"]
    for bad in (0, -3, 100_000, 2.5, "ninety"):
        refused = api.patch("/team/settings", {"retention_days": bad})
        assert refused.status_code == 422, bad
        assert refused.json()["detail"][0]["loc"][-1] == "retention_days"
    assert api.patch("/team/settings", {"retention_days": None}).json()["retention_days"] is None
    team.refresh_from_db()
    assert team.retention_days is None and team.retention_delete_protected is True


def test_editors_may_not_change_retention_but_may_read_it(session_api, teammate):
    api = session_api(teammate)
    assert api.patch("/team/settings", {"retention_days": 3}).status_code == 403
    assert api.get("/team/settings").json()["retention_days"] is None


def test_the_settings_page_saves_retention_for_owners_and_shows_the_field_error(
    client, owner, teammate, team
):
    client.force_login(owner)
    bad = client.post("/team/retention/", {"retention_days": "0"})
    assert bad.status_code == 422 and b"between 1 and" in bad.content
    assert b'value="0"' in bad.content  # what was typed is kept
    ok = client.post("/team/retention/", {"retention_days": "30"})
    assert ok.status_code == 302
    team.refresh_from_db()
    assert team.retention_days == 30 and team.retention_delete_protected is False
    client.force_login(teammate)
    assert client.post("/team/retention/", {"retention_days": "1"}).status_code == 403
    assert b"kept for <strong>30</strong> days" in client.get("/team/").content


# --- Deleting one run -----------------------------------------------------------------------


def test_deleting_a_run_leaves_no_row_that_referenced_it(api, judged_run, reviewer):
    run = judged_run(output=FAILING)
    override_create(run=run, criterion_key="c2", satisfied=True, note="fine", reviewer=reviewer)
    override_create(run=run, criterion_key="c3", satisfied=True, note="ok", reviewer=reviewer)
    RunReview.objects.filter(run=run).update(golden=False)
    evaluations = set(Evaluation.objects.filter(run=run).values_list("pk", flat=True))
    targets = {
        AgentRun: {run.pk},
        Evaluation: evaluations,
        CriterionVerdict: set(
            CriterionVerdict.objects.filter(run=run).values_list("pk", flat=True)
        ),
        VerdictOverride: set(VerdictOverride.objects.filter(run=run).values_list("pk", flat=True)),
    }
    assert all(targets.values()) and _referencing(targets)  # the check sees the rows first

    answer = api.send("DELETE", f"/runs/{run.pk}?force=true")

    assert answer.status_code == 204, answer.content
    assert _referencing(targets) == []
    assert not AgentRun.objects.filter(pk=run.pk).exists()


def test_a_protected_run_is_refused_with_the_reasons_unless_an_owner_forces_it(
    session_api, teammate, owner, judged_run, reviewer
):
    run = judged_run(output=FAILING)
    override_create(run=run, criterion_key="c2", satisfied=True, note="fine", reviewer=reviewer)
    _golden(run)
    assert run_protection(run=run) == ["golden", "labelled"]

    editor = session_api(teammate)
    refused = editor.send("DELETE", f"/runs/{run.pk}?force=true")
    assert refused.status_code == 409
    assert refused.json()["extra"]["reasons"] == ["golden", "labelled"]
    assert "golden set" in refused.json()["message"]
    assert session_api(owner).send("DELETE", f"/runs/{run.pk}").status_code == 409
    assert session_api(owner).send("DELETE", f"/runs/{run.pk}?force=true").status_code == 204


def test_viewers_get_403_and_other_teams_404_when_deleting(
    session_api, viewer, other_api, make_run
):
    run = make_run()
    assert session_api(viewer).send("DELETE", f"/runs/{run.pk}").status_code == 403
    assert other_api.send("DELETE", f"/runs/{run.pk}").status_code == 404
    assert AgentRun.objects.filter(pk=run.pk).exists()


def test_the_run_page_deletes_with_a_confirmed_form_and_explains_protection(
    client, teammate, viewer, owner, judged_run, reviewer
):
    plain, labelled = judged_run(), judged_run(output=FAILING)
    override_create(
        run=labelled, criterion_key="c2", satisfied=True, note="fine", reviewer=reviewer
    )
    client.force_login(viewer)
    assert b'data-testid="run-delete"' not in client.get(f"/runs/{plain.pk}/").content
    assert client.post(f"/runs/{plain.pk}/delete/").status_code == 403

    client.force_login(teammate)
    page = client.get(f"/runs/{labelled.pk}/").content.decode()
    assert 'data-testid="run-delete"' in page and "data-confirm=" in page
    assert "a reviewer labelled it" in page and 'name="force"' not in page
    refused = client.post(f"/runs/{labelled.pk}/delete/", {"force": "1"}, follow=True)
    assert AgentRun.objects.filter(pk=labelled.pk).exists() and b"protected" in refused.content
    assert client.post(f"/runs/{plain.pk}/delete/")["Location"] == "/runs/"
    assert not AgentRun.objects.filter(pk=plain.pk).exists()

    client.force_login(owner)
    assert 'name="force"' in client.get(f"/runs/{labelled.pk}/").content.decode()
    client.post(f"/runs/{labelled.pk}/delete/", {"force": "1"})
    assert not AgentRun.objects.filter(pk=labelled.pk).exists()


def test_the_delete_form_needs_the_csrf_token(owner, make_run):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    run = make_run()
    assert client.post(f"/runs/{run.pk}/delete/").status_code == 403
    assert AgentRun.objects.filter(pk=run.pk).exists()
