"""The hand-written SQL (evalsite.rawsql) reads exactly what the ORM reads, on
whichever database the suite runs on: UUIDs, datetimes, JSON and booleans converted alike."""

from __future__ import annotations

import ast
import re
import threading
from pathlib import Path

import pytest
from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.base.operations import BaseDatabaseOperations
from django.db.models import Field, Manager, Model, QuerySet
from django.db.models.options import Options
from django.db.models.sql import Query
from django.db.models.sql.compiler import SQLCompiler

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


def test_select_in_converts_each_column_as_the_orm_does(make_run, make_rubric):
    rubric = make_rubric(criteria=[{"description": "Is polite"}], alignment_mode="user")
    run = make_run(rubric=rubric.slug)
    fields = ("run_id", "team_id", "created_at", "judge_config", "force", "status")

    rows = rawsql.select_in(Evaluation, fields, "run_id", [run.pk])

    expected = sorted(Evaluation.objects.filter(run=run).values_list(*fields))
    assert sorted(tuple(r) for r in rows) == expected and len(expected) == 2
    assert type(rows[0][0]) is type(expected[0][0])  # a UUID, not its hex, on SQLite too


def test_a_filter_through_a_foreign_key_and_more_in_lists_read_as_the_orm(make_run, make_rubric):
    rubric = make_rubric(criteria=[{"description": "Is polite"}], alignment_mode="user")
    runs = [make_run(rubric=rubric.slug) for _ in range(2)]
    Evaluation.objects.filter(run=runs[0]).update(status="running")
    kinds = ["rubric"]

    rows = rawsql.select_in(
        Evaluation, ("id",), "team_id", [runs[0].team_id],
        within={"kind": kinds}, equal={"run__id": runs[1].pk}, null=("lease_token",),
    )  # fmt: skip

    expected = Evaluation.objects.filter(
        team_id=runs[0].team_id, kind__in=kinds, run__id=runs[1].pk, lease_token__isnull=True
    )
    assert sorted(r[0] for r in rows) == sorted(expected.values_list("id", flat=True))
    assert len(rows) == 1
    assert (
        rawsql.select_in(Evaluation, ("id",), "team_id", [runs[0].team_id], within={"kind": []})
        == []
    )


def test_keys_from_reads_each_part_marked_and_converted(make_run, make_rubric):
    rubric = make_rubric(criteria=[{"description": "Is polite"}])
    runs = [make_run(rubric=rubric.slug) for _ in range(3)]
    ids = [r.pk for r in runs]
    parts = [
        rawsql.KeysFrom(Evaluation, "run", ids[:2], 1),
        rawsql.KeysFrom(Evaluation, "run", ids[1:], 0, any_positive=("judge_calls",)),
        rawsql.KeysFrom(Evaluation, "run", [], 2),
    ]
    Evaluation.objects.filter(run=runs[2]).update(judge_calls=1)

    found = rawsql.keys_from(AgentRun, parts)

    assert found == {(ids[0], 1), (ids[1], 1), (ids[2], 0)}
    assert all(type(key) is type(ids[0]) for key, _ in found)
    assert rawsql.keys_from(AgentRun, parts[2:]) == set()


def test_an_api_key_is_found_with_its_team_and_a_revoked_one_is_not(team, api_key):
    key = api_key_authenticate(raw=api_key)

    assert key is not None and key.team == team and key.team.name == "Acme"
    assert key.team.judge_prices == Team.objects.get(pk=team.pk).judge_prices
    assert api_key_authenticate(raw=api_key + "x") is None
    ApiKey.objects.filter(pk=key.pk).update(revoked_at=key.created_at)
    assert api_key_authenticate(raw=api_key) is None


@pytest.mark.django_db(transaction=True)
def test_a_connection_of_another_thread_reads_the_same(make_run):
    run = make_run()
    here = rawsql.select_in(AgentRun, ("id", "created_at"), "id", [run.pk])
    there: list = []

    def read() -> None:
        from django.db import connection as own

        try:
            there.extend(rawsql.select_in(AgentRun, ("id", "created_at"), "id", [run.pk]))
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


def test_update_rows_writes_each_row_its_own_values(make_run):
    runs = [make_run() for _ in range(2)]
    rows = [AgentRun(pk=r.pk, passed=i == 0, score=0.5 + i) for i, r in enumerate(runs)]

    rawsql.update_rows(AgentRun, rows, ("passed", "score"))

    stored = dict(AgentRun.objects.filter(pk__in=[r.pk for r in runs]).values_list("pk", "score"))
    assert stored == {runs[0].pk: 0.5, runs[1].pk: 1.5}
    assert AgentRun.objects.get(pk=runs[0].pk).passed is True


def test_insert_rows_stores_what_bulk_create_stores(make_run, make_rubric):
    from runs.models import CriterionVerdict

    rubric = make_rubric(criteria=[{"description": "Is polite"}])
    run = make_run(rubric=rubric.slug)
    evaluation = Evaluation.objects.get(run=run, kind="rubric")

    def verdict(key: str, text: str, evidence: list) -> CriterionVerdict:
        return CriterionVerdict(
            evaluation_id=evaluation.id, team_id=run.team_id, run_id=run.id, rubric_id=None,
            run_created_at=run.created_at, criterion_key=key, position=0, description=text,
            required=True, satisfied=False, reasoning=text, verdict_key="k" * 64,
            evidence=evidence, evidence_note=text[:300],
        )  # fmt: skip

    # What COPY's text format must escape: tabs, newlines, backslashes, \N, quotes, non-ASCII.
    text = "tab\there\nline \\ back \\N not null \"q\" 's' é ✓ \r"
    evidence = [0, 3, {"note": "a\tb\\c", "nested": [None, True, 1.5]}]
    copied, made = verdict("a", text, evidence), verdict("b", text, evidence)
    rawsql.insert_rows(CriterionVerdict, [copied])
    CriterionVerdict.objects.bulk_create([made])

    stored = {v.criterion_key: v for v in CriterionVerdict.objects.filter(evaluation=evaluation)}
    for field in CriterionVerdict._meta.concrete_fields:
        if field.attname in ("id", "criterion_key"):
            continue
        assert getattr(stored["a"], field.attname) == getattr(stored["b"], field.attname), field
    assert stored["a"].pk == copied.pk and stored["a"].reasoning == text
    assert stored["a"].evidence == evidence and stored["a"].rubric_id is None
    rawsql.insert_rows(CriterionVerdict, [])  # nothing to insert: no statement
    with pytest.raises(ValueError, match="primary key"):
        rawsql.insert_rows(CriterionVerdict, [CriterionVerdict(id=None)])


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


# --- Where SQL may be written ------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("evalsite", "teams", "rubrics", "runs", "reviews")
# The only modules that may write SQL: Django's database, the rate limiter's own SQLite file
# (no model describes it), and SQLite's connection setup (DATABASES' documented init_command).
SQL_MODULES = {"evalsite/rawsql.py", "evalsite/ratelimit.py", "evalsite/settings.py"}
SQL_CALLS = {"cursor", "raw", "execute", "executemany", "executescript", "extra", "RawSQL"}
NOT_SQL = {("evalsite/notify.py", "pipe.execute")}  # a Redis pipeline
SQL_TEXT = re.compile(
    r"\bSELECT\b.*\bFROM\b|\bINSERT\s+(OR\s+\w+\s+)?INTO\b|\bUPDATE\b.*\bSET\b|\bDELETE\s+FROM\b"
    r"|\bON\s+CONFLICT\b|\bLISTEN\b|\bNOTIFY\b|pg_\w+\(|\bLOCK\s+TABLE\b|\bPRAGMA\b|\bBEGIN\b|\bCOPY\b.*\bFROM\s+STDIN\b",
    re.DOTALL,
)
# Django's names for its own internals: the underscore attributes of the classes our code
# meets (public by Django's documentation: _meta, _default_manager, _base_manager), and the
# compiler's and the backends' conversion steps.
DJANGO_CLASSES = (Model, QuerySet, Manager, Field, Options, Query, SQLCompiler, BaseDatabaseWrapper, BaseDatabaseOperations)  # fmt: skip
DOCUMENTED = {"_meta", "_default_manager", "_base_manager"}
INTERNAL = {"_state", "get_compiler", "get_converters", "apply_converters", "get_db_converters", "results_iter"}  # fmt: skip


def _modules() -> list[Path]:
    return sorted(
        path
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts
    )


def _strings(tree: ast.AST) -> list[str]:
    """Every string literal and f-string piece but docstrings."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    strings = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and id(node) not in docstrings
    ]  # fmt: skip
    return strings + [  # an f-string whole, its values as {}
        "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
    ]


def _sql_in(path: Path) -> list[str]:
    return _sql_in_source(path.read_text(), path.relative_to(ROOT).as_posix())


def _sql_in_source(source: str, relative: str) -> list[str]:
    tree = ast.parse(source, filename=relative)
    found = [f"SQL text {s[:40]!r}" for s in _strings(tree) if SQL_TEXT.search(s)]
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        shown = ast.unparse(func)
        if called in SQL_CALLS and (relative, shown) not in NOT_SQL:
            found.append(f"{shown}() line {node.lineno}")
    return found


def _private_django_names() -> set[str]:
    private = {
        attr
        for cls in DJANGO_CLASSES
        for klass in cls.__mro__
        if klass.__module__.startswith("django.")
        for attr in vars(klass)
        if attr.startswith("_") and not attr.startswith("__")
    }
    return (private - DOCUMENTED) | INTERNAL


def _private_uses(source: str, private: set[str]) -> list[str]:
    tree = ast.parse(source)
    return [
        f".{node.attr} line {node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in private
    ]


def test_hand_written_sql_lives_in_the_allowed_modules_only():
    offenders = {
        path.relative_to(ROOT).as_posix(): found
        for path in _modules()
        if path.relative_to(ROOT).as_posix() not in SQL_MODULES and (found := _sql_in(path))
    }
    assert offenders == {}
    assert all(_sql_in(ROOT / module) for module in SQL_MODULES)  # each still earns its place


def test_no_module_uses_private_django_api():
    private = _private_django_names()
    assert {"_prepare_related_fields_for_save", "_state", "_do_insert"} <= private
    offenders = {
        path.relative_to(ROOT).as_posix(): found
        for path in _modules()
        if (found := _private_uses(path.read_text(), private))
    }
    assert offenders == {}


PLANTED = '''"""SELECT in a docstring is prose."""


def f(connection, obj, table):
    sql = f"UPDATE {table} SET n = n + 1"
    with connection.cursor() as cursor:
        cursor.execute(sql)
    obj._state.adding = False
    obj._prepare_related_fields_for_save(operation_name="save")
'''


def test_the_scans_find_a_planted_violation():
    found = _sql_in_source(PLANTED, "evalsite/planted.py")

    assert sorted(f.split()[0] for f in found) == ["SQL", "connection.cursor()", "cursor.execute()"]
    uses = _private_uses(PLANTED, _private_django_names())
    assert sorted(u.split()[0] for u in uses) == ["._prepare_related_fields_for_save", "._state"]
