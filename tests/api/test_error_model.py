"""One error model: services raise evalsite.errors' exceptions, the API answers them in two
handlers keyed on the base classes, operations hold no try/except and no error decorator, and
evalsite/errors.py imports nothing, so every layer may raise its errors."""

from __future__ import annotations

import ast
import uuid
from pathlib import Path

import pytest

from evalsite.api import api
from evalsite.errors import AppError, Conflict, FieldErrors, TooLarge, TooManyRequests
from evalsite.pagination import InvalidCursor
from judging.services.rescore import IdempotencyConflict, RescoreValidationError, TooManyBatches
from judging.services.score import ScoreBusy, ScoreConflict
from reviews.services import ReviewConflict, ReviewValidationError
from rubrics.services import RubricValidationError
from runs.models import AgentRun, RescoreBatch
from runs.selectors import RunFilterError
from runs.services import RunConflict, RunTooLarge, RunValidationError
from runs.services.bulk import BulkValidationError
from teams.api_throttle import Throttled
from teams.services import ConnectionInUse, TeamValidationError
from tests.api_client import field_locs

ROOT = Path(__file__).resolve().parents[2]
APPS = ("teams", "rubrics", "runs", "reviews", "judge_engine")
ROUTER_MODULES = [
    "rubrics/api.py",
    "runs/api.py",
    "judging/api_rescore.py",
    "reviews/api.py",
    "teams/api_connections.py",
    "teams/api_team.py",
]


def imported_modules(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def test_the_error_module_imports_nothing_but_the_standard_library():
    assert imported_modules("evalsite/errors.py") <= {"__future__", "collections.abc", "typing"}


def test_the_api_module_imports_no_apps_errors_only_its_authentication_and_the_engine():
    from_apps = {m for m in imported_modules("evalsite/api.py") if m.split(".")[0] in APPS}
    assert from_apps == {"teams.api", "teams.api_throttle", "judge_engine.redact"}


def test_no_application_error_of_an_app_has_a_handler_of_its_own():
    keyed = {f"{cls.__module__}.{cls.__qualname__}" for cls in api._exception_handlers}
    assert {"evalsite.errors.FieldErrors", "evalsite.errors.AppError"} <= keyed
    assert not [name for name in keyed if name.split(".")[0] in APPS]
    assert not [name for name in keyed if name.startswith("evalsite.") and "errors" not in name]


def router_operations(path: str) -> list[ast.FunctionDef]:
    tree = ast.parse((ROOT / path).read_text())
    return [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(
            isinstance(d, ast.Call)
            and isinstance(d.func, ast.Attribute)
            and isinstance(d.func.value, ast.Name)
            and d.func.value.id == "router"
            for d in node.decorator_list
        )
    ]


@pytest.mark.parametrize("path", ROUTER_MODULES)
def test_api_operations_hold_no_try_and_no_decorator_but_their_route(path):
    operations = router_operations(path)
    assert operations, f"{path} has no operations"
    for operation in operations:
        assert len(operation.decorator_list) == 1, operation.name
        tries = [n for n in ast.walk(operation) if isinstance(n, ast.Try)]
        assert not tries, f"{path}:{operation.name} catches errors (line {tries[0].lineno})"


def test_no_router_imports_the_api_module():
    for path in ROUTER_MODULES:
        assert "evalsite.api" not in imported_modules(path), path


RUN = AgentRun(id=uuid.uuid4(), external_id="ext-1")
BATCH = RescoreBatch(id=uuid.uuid4())


@pytest.mark.parametrize(
    ("error", "base", "status", "extra"),
    [
        (RubricValidationError({"name": "required"}), FieldErrors, 422, {}),
        (TeamValidationError({"name": "required"}), FieldErrors, 422, {}),
        (RunValidationError({"output": "required"}), FieldErrors, 422, {}),
        (RescoreValidationError({"judge": "bad"}), FieldErrors, 422, {}),
        (ReviewValidationError({"note": "required"}), FieldErrors, 422, {}),
        (InvalidCursor("not a cursor returned by this list"), FieldErrors, 422, {}),
        (RunFilterError({"since": "not a date"}), FieldErrors, 422, {}),
        (BulkValidationError([{"index": 0, "field": None, "message": "x"}], 3), AppError, 422,
         {"errors": [{"index": 0, "field": None, "message": "x"}]}),
        (RunConflict(RUN), Conflict, 409, {"run_id": str(RUN.id)}),
        (ScoreConflict(RUN), Conflict, 409, {"run_id": str(RUN.id)}),
        (IdempotencyConflict("k", BATCH), Conflict, 409, {"batch_id": str(BATCH.pk)}),
        (ConnectionInUse("in use"), Conflict, 409, {}),
        (ReviewConflict("not judged"), Conflict, 409, {}),
        (RunTooLarge("too big"), TooLarge, 413, {"limit": 2_000_000}),
        (TooManyBatches(4), TooManyRequests, 429, {"retry_after": 30, "limit": 4}),
        (ScoreBusy(8), TooManyRequests, 429, {"retry_after": 2, "limit": 8}),
    ],
)  # fmt: skip
def test_every_service_error_is_an_application_error_with_its_status_and_extra(
    error, base, status, extra, settings
):
    settings.EVALSITE_MAX_RUN_BYTES = 2_000_000
    if isinstance(error, RunTooLarge):  # reads the limit when raised
        error = RunTooLarge("too big")
    assert isinstance(error, base) and error.status == status
    assert error.extra == extra
    assert error.message == str(error)


def test_field_errors_keep_their_message_and_fields_and_stay_value_errors():
    error = RubricValidationError({"name": "required", "criteria[1].description": "empty"})

    assert isinstance(error, ValueError)
    assert str(error) == "name: required; criteria[1].description: empty"
    assert error.errors == {"name": "required", "criteria[1].description": "empty"}
    assert str(InvalidCursor("not a cursor")) == "not a cursor"
    assert InvalidCursor("x").location == "query" and error.location == "body"
    assert RunFilterError({"since": "x"}).location == "query"


def test_a_429_names_its_wait_in_a_header(settings):
    settings.EVALSITE_API_RATE = 60
    error = Throttled(1.2)

    assert (error.retry_after, error.limit) == (2, 60)
    assert error.headers() == {"Retry-After": "2"}
    assert error.extra == {"retry_after": 2, "limit": 60}


def test_a_review_conflict_answers_the_error_shape_with_its_message(api, make_run, make_rubric):
    run = make_run(rubric=make_rubric().slug)

    r = api.post(f"/runs/{run.id}/overrides", {"criterion_id": "c1", "satisfied": True})

    assert r.status_code == 409
    assert r.json() == {
        "message": "This run has no judged rubric result to review yet.",
        "extra": {},
    }


def test_a_golden_mark_without_a_rubric_names_the_field_in_ninjas_422(api, make_run):
    run = make_run()

    r = api.post(f"/runs/{run.id}/golden", {"golden": True})

    assert field_locs(r) == [["body", "payload", "rubric"]]
    assert r.json()["detail"][0] == {
        "type": "value_error",
        "loc": ["body", "payload", "rubric"],
        "msg": "the run has no rubric: name one",
    }


def test_a_rescore_naming_an_unknown_rubric_is_a_422_on_that_field(api):
    r = api.post("/rescore", {"rubric": "no-such-rubric"})

    assert field_locs(r) == [["body", "payload", "rubric"]]
