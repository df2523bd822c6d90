"""Stateless fuzzing of every operation of the live OpenAPI schema (Schemathesis).

Each operation gets a bounded, derandomized set of generated requests (valid and invalid
input) sent through Django's WSGI app with a valid API key of a team that owns a rubric and a
run. Every answer must be a non-5xx response that the schema documents (status, content type
and body). A real worker runs, so POST /api/score is answered by the fake judge, not a timeout.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

CONFIG = {
    "generation": {"mode": "all", "max-examples": 25, "deterministic": True},
    "phases": {"coverage": {"enabled": False}, "stateful": {"enabled": False}},
}


def authenticated(ctx, response, case) -> bool | None:
    """Every request carries a valid key: a 401 would mean fuzzing never got past the door."""
    if response.status_code == 401:
        raise AssertionError(f"401 with a valid key: {response.text[:200]}")
    return None


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    authenticated,
]


# Loaded eagerly from the app itself (the OpenAPI view needs no database). The lazy
# `schemathesis.pytest.from_fixture` loader does not work with pytest 9.
schema = schemathesis.openapi.from_wsgi(
    "/api/openapi.json", get_wsgi_application(), config=schemathesis.Config.from_dict(CONFIG)
)


@pytest.fixture
def seeded(worker, make_rubric, make_run):
    """Something to find, so lookups by generated ids and slugs meet real rows too."""
    rubric = make_rubric(alignment_mode="off")
    make_run(rubric=rubric.slug, external_id="fuzz-seed")


@pytest.mark.worker
@schema.parametrize()
@settings(
    max_examples=25,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
def test_no_generated_request_breaks_the_api(case, seeded, api_key):
    if case.path == "/api/score" and isinstance(case.body, dict):
        # Bound the wait: a generated payload may have nothing quick to judge.
        case.body["timeout"] = min(float(case.body.get("timeout") or 5), 5)
    case.call_and_validate(headers={"Authorization": f"Bearer {api_key}"}, checks=CHECKS)


def test_the_schema_documents_every_public_path(api):
    paths = set(api.client.get("/api/openapi.json").json()["paths"])
    assert {
        "/api/rubrics",
        "/api/rubrics/{rubric}",
        "/api/rubrics/{rubric}/archive",
        "/api/rubrics/{rubric}/criteria",
        "/api/rubrics/{rubric}/versions",
        "/api/rubrics/{rubric}/versions/{number}",
        "/api/runs",
        "/api/runs/bulk",
        "/api/runs/{run_id}",
        "/api/evaluations/{evaluation_id}",
        "/api/score",
    } <= paths
