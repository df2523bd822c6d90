"""The hand-written SQL of the hot paths (evalsite.rawsql) reads exactly what the ORM reads, on
whichever database the suite runs on: UUIDs, datetimes, JSON and booleans converted alike."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from evalsite import rawsql
from runs.models import AgentRun, Evaluation
from teams.models import ApiKey, Team
from teams.selectors import api_key_authenticate

pytestmark = pytest.mark.django_db


def test_instances_are_loaded_as_the_orm_loads_them(team, other_team):
    team.judge_prices = {"openai/x": {"input": 1.5, "output": 2.0}}
    team.save()

    loaded = rawsql.instances_in(Team, "id", [team.pk, other_team.pk])

    by_id = {t.pk: t for t in loaded}
    assert set(by_id) == {team.pk, other_team.pk}
    for pk, raw in by_id.items():
        orm = Team.objects.get(pk=pk)
        for field in Team._meta.concrete_fields:
            assert getattr(raw, field.attname) == getattr(orm, field.attname), field.name
    assert by_id[team.pk].judge_prices == {"openai/x": {"input": 1.5, "output": 2.0}}
    assert rawsql.instances_in(Team, "id", []) == []


def test_fetch_converts_each_column_as_the_orm_does(make_run, make_rubric):
    rubric = make_rubric(criteria=[{"description": "Is polite"}], alignment_mode="user")
    run = make_run(rubric=rubric.slug)
    fields = ("id", "run_id", "team_id", "created_at", "judge_config", "force", "status")
    sql = "SELECT {} FROM {} WHERE {} IN ({})".format(  # noqa: S608 - names from _meta
        rawsql.names(connection, Evaluation, fields),
        rawsql.name(connection, Evaluation),
        rawsql.name(connection, Evaluation, "run_id"),
        rawsql.marks(1),
    )
    params = rawsql.prep(connection, Evaluation, "run_id", [run.pk])

    rows = rawsql.fetch(connection, [(Evaluation, f) for f in fields], sql, params)

    expected = sorted(Evaluation.objects.filter(run=run).values_list(*fields))
    assert sorted(tuple(r) for r in rows) == expected and len(expected) == 2
    assert type(rows[0][0]) is type(expected[0][0])  # a UUID, not its hex, on SQLite too


def test_an_api_key_is_found_with_its_team_and_a_revoked_one_is_not(team, api_key):
    key = api_key_authenticate(raw=api_key)

    assert key is not None and key.team == team and key.team.name == "Acme"
    assert key.team.judge_prices == Team.objects.get(pk=team.pk).judge_prices
    assert api_key_authenticate(raw=api_key + "x") is None
    ApiKey.objects.filter(pk=key.pk).update(revoked_at=key.created_at)
    assert api_key_authenticate(raw=api_key) is None


@pytest.mark.django_db(transaction=True)
def test_a_connection_of_another_thread_reads_the_same(make_run):
    """Converters are cached once per database; each thread's read uses its own connection."""
    run = make_run()
    sql = "SELECT {} FROM {} WHERE {} = %s".format(  # noqa: S608 - names from _meta
        rawsql.names(connection, AgentRun, ("id", "created_at")),
        rawsql.name(connection, AgentRun),
        rawsql.name(connection, AgentRun, "id"),
    )
    columns = [(AgentRun, "id"), (AgentRun, "created_at")]
    here = rawsql.fetch(connection, columns, sql, rawsql.prep(connection, AgentRun, "id", [run.pk]))
    there: list = []

    def read() -> None:
        from django.db import connection as own

        try:
            there.extend(
                rawsql.fetch(own, columns, sql, rawsql.prep(own, AgentRun, "id", [run.pk]))
            )
        finally:
            own.close()

    thread = threading.Thread(target=read)
    thread.start()
    thread.join()
    assert here == [[run.pk, run.created_at]]
    assert there == here


def test_an_empty_in_list_is_refused_and_locks_follow_the_backend():
    with pytest.raises(ValueError):
        rawsql.marks(0)
    lock = rawsql.lock_clause(connection, no_key=True)
    if connection.vendor == "postgresql":
        assert lock == " FOR NO KEY UPDATE"
        assert rawsql.lock_clause(connection) == " FOR UPDATE"
    else:
        assert lock == ""
    with pytest.raises(ValueError):
        rawsql.model_order(AgentRun, ("id", "no_such_field"))
    assert rawsql.model_order(AgentRun, ("passed", "id")) == ("id", "passed")


def test_insert_stores_what_bulk_create_would(team, make_run):
    from runs.models import RunTool

    run = make_run()
    made = [
        AgentRun(team=team, agent="bot", input={"messages": []}, output=f"answer {i}")
        for i in range(3)
    ]
    twin = AgentRun(team=team, agent="bot", input={"messages": []}, output="answer 0")
    rawsql.insert(made)
    AgentRun.objects.bulk_create([twin])

    stored = {r.pk: r for r in AgentRun.objects.filter(pk__in=[r.pk for r in made])}
    assert set(stored) == {r.pk for r in made} and not made[0]._state.adding
    skip = {"id", "created_at", "output"}  # the twin differs in these only
    twin_row = AgentRun.objects.get(pk=twin.pk)
    for field in AgentRun._meta.concrete_fields:
        assert getattr(stored[made[0].pk], field.attname) == getattr(made[0], field.attname)
        if field.attname not in skip:
            assert getattr(stored[made[0].pk], field.attname) == getattr(twin_row, field.attname)
    assert stored[made[0].pk].created_at is not None  # auto_now_add applied, as on a save
    with pytest.raises(ValueError, match="database-generated"):
        rawsql.insert([RunTool(run=run, team=team, tool="search", run_created_at=run.created_at)])


def test_select_in_filters_orders_and_locks_as_the_orm_would(make_run, make_rubric):
    from django.db import transaction

    rubric = make_rubric(criteria=[{"description": "Is polite"}], alignment_mode="user")
    runs = [make_run(rubric=rubric.slug) for _ in range(2)]
    ids = [r.pk for r in runs]
    Evaluation.objects.filter(run=runs[0], kind="rubric").update(status="running")

    with transaction.atomic():
        rows = rawsql.select_in(
            Evaluation, ("id", "run_id", "created_at"), "run_id", ids,
            equal={"status": "queued"}, order_by="-created_at", lock="update",
        )  # fmt: skip

    expected = Evaluation.objects.filter(run_id__in=ids, status="queued")
    assert sorted(tuple(r) for r in rows) == sorted(
        expected.values_list("id", "run_id", "created_at")
    )
    assert len(rows) == 3
    stamps = [r[2] for r in rows]
    assert stamps == sorted(stamps, reverse=True)  # newest first (ties in either order)
    assert rawsql.select_in(Evaluation, ("id",), "run_id", []) == []
