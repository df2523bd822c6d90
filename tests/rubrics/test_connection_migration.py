"""Migration 0003: rubrics that carried a judge api_base get a judge connection without a key."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from rubrics.models import Rubric
from teams.models import JudgeConnection

pytestmark = pytest.mark.django_db

migration = importlib.import_module("rubrics.migrations.0003_api_base_to_connections")


def with_api_base(rubric: Rubric, api_base: str, **params) -> Rubric:
    """As rubrics were stored before judge connections existed."""
    Rubric.objects.filter(pk=rubric.pk).update(judge_params={"api_base": api_base, **params})
    return rubric


def test_each_team_address_and_model_becomes_one_keyless_connection(
    team, other_team, make_rubric, settings
):
    settings.EVALSITE_JUDGE_MODEL = "openai/default-model"
    first = with_api_base(make_rubric(name="A"), "http://llm.internal:8000/v1", temperature=0.2)
    same = with_api_base(make_rubric(name="B"), "http://llm.internal:8000/v1")
    other_model = with_api_base(
        make_rubric(name="C", judge_model="openai/big"), "http://llm.internal:8000/v1"
    )
    theirs = with_api_base(make_rubric(name="D", team=other_team), "http://llm.internal:8000/v1")
    untouched = make_rubric(name="E", judge_params={"temperature": 0.5})

    migration.move_api_bases(apps, None)

    rows = {r.name: r for r in Rubric.objects.select_related("judge_connection")}
    shared = rows["A"].judge_connection
    assert shared is not None and rows["B"].judge_connection == shared
    assert (shared.name, shared.model, shared.api_base) == (
        "llm.internal",
        "openai/default-model",
        "http://llm.internal:8000/v1",
    )
    assert rows["C"].judge_connection.name == "llm.internal (openai/big)"
    assert rows["D"].judge_connection.team == other_team != shared.team
    assert JudgeConnection.objects.count() == 3
    assert not any(c.has_key for c in JudgeConnection.objects.all())  # no key follows them
    assert rows["A"].judge_params == {"temperature": 0.2}
    assert rows["E"].judge_connection is None and rows["E"].judge_params == {"temperature": 0.5}
    assert {first.pk, same.pk, other_model.pk, theirs.pk, untouched.pk} == set(rows_ids())


def rows_ids():
    return Rubric.objects.values_list("pk", flat=True)


def test_running_it_twice_changes_nothing_more(team, make_rubric):
    with_api_base(make_rubric(), "http://llm.internal/v1")
    migration.move_api_bases(apps, None)
    migration.move_api_bases(apps, None)
    assert JudgeConnection.objects.count() == 1


def test_pending_evaluations_follow_the_new_connection_or_fail_never_with_the_deployment_key(
    team, make_rubric, make_run, fake_judge
):
    from rubrics.judging import LEGACY_BASE, judge_for
    from runs.models import Evaluation

    rubric = with_api_base(make_rubric(), "http://llm.internal/v1")
    same, moved, deployment = (make_run(rubric=rubric.slug) for _ in range(3))
    frozen = {"model": "openai/fake-judge", "timeout": 60}
    for run, base in ((same, "http://llm.internal/v1"), (moved, "http://elsewhere/v1")):
        Evaluation.objects.filter(run=run).update(judge_config=frozen | {"api_base": base})

    migration.move_api_bases(apps, None)

    connection = JudgeConnection.objects.get()
    follows = judge_for(Evaluation.objects.get(run=same))
    refused = judge_for(Evaluation.objects.get(run=moved))
    untouched = judge_for(Evaluation.objects.get(run=deployment))
    assert follows.connection == str(connection.pk) and follows.api_key != fake_judge_key()
    assert follows.api_base == "http://llm.internal/v1" and follows.unusable is None
    assert refused.unusable == LEGACY_BASE and refused.api_key is None
    assert untouched.api_base == fake_judge.url and untouched.api_key == fake_judge_key()


def fake_judge_key() -> str:
    from django.conf import settings

    return settings.EVALSITE_JUDGE_API_KEY
